"""The machinery of samplecheck's own test suite, registered by the entry point
(samplecheck.harness.options) only when a run collects that suite. Every hook that touches a
test acts on samplecheck's tests alone (`owns`), so a run that also collects another
project's tests leaves those as they were; asked for by name (`-p samplecheck.harness.plugin`),
it acts on every test of the run.

- The device is chosen when this registers, before the suite's test modules import kernels:
  on CPU, TRITON_INTERPRET=1 is set then, and the interpreter's helper calls stop patching
  triton.language again (samplecheck.harness.interpreter_patching). Under pytest-xdist each
  worker gwN is pinned to GPU N % device_count.
- The Hypothesis profile of `--sc-profile` (samplecheck.harness.profiles) is the default for
  the suite's tests alone: in force while their modules import (so `@given` and `@settings`
  there build on it) and while each of them runs; Hypothesis' global profile is left alone.
- Markers act: `gpu` tests are skipped without a CUDA device, `slow` ones outside the nightly
  profile; `matrix(...)` restricts the registry matrix of a test (module and test markers
  merge). Under `--sc-backend-only` only the tests that judge backends are collected.
- Every failure carries a `reproduce` section and JUnit properties (samplecheck.harness.reproduce).
"""

import contextlib
import os
import sys

import pytest

from samplecheck.harness.options import claim_every_test_unless_activated, owns

MARKERS = (
    "interpreter: runs under the Triton CPU interpreter too (select with -m interpreter)",
    "gpu: needs a CUDA device; skipped on CPU",
    "slow: nightly-sized; skipped outside the nightly profile",
    "cpu_subject: runs what it checks on the CPU whatever the device; skipped on a GPU run (CPU CI runs it)",
    "finding(witness, reason): a pinned finding's signature (samplecheck.registry.records.Mark.witness)",
)


def matrix_marker() -> str:
    """The `matrix` marker's line: its keywords are those of `samplecheck.registry.matrix.combos`,
    which it passes them to."""
    import inspect

    from samplecheck.registry.matrix import combos

    keywords = [f"{p.name}={p.default!r}" for p in inspect.signature(combos).parameters.values()
                if p.kind is p.KEYWORD_ONLY]
    return f"matrix({', '.join(keywords)}): restricts the registry matrix of a generic test"


def pytest_configure(config):
    from samplecheck.harness import isolation, profiles, reproduce, seeds
    from samplecheck.kernels.runtime import use_device

    claim_every_test_unless_activated(config)
    profiles.register_profiles()
    for line in (matrix_marker(), *MARKERS):
        config.addinivalue_line("markers", line)
    try:
        device_type = use_device(config.getoption("--sc-device"))
    except RuntimeError as err:
        raise pytest.UsageError(f"--sc-device: {err}") from err
    import torch

    if device_type == "cuda":
        from samplecheck.harness.cuda_wait import set_wait

        worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
        index = int(worker.removeprefix("gw")) % torch.cuda.device_count()
        set_wait(config.getoption("--sc-cuda-wait"), index)
        torch.cuda.set_device(index)
        config.samplecheck_device = torch.device("cuda", torch.cuda.current_device())
    else:
        from samplecheck.harness.interpreter_patching import install

        install()
        config.samplecheck_device = torch.device("cpu")
    _plug_backends(config)
    seeds.preload_package_modules()  # after the device switch: it imports the kernels
    for module, name in ((seeds, "samplecheck-seeds"), (isolation, "samplecheck-isolation"),
                         (reproduce, "samplecheck-reproduce")):
        config.pluginmanager.register(module, name)
    from samplecheck.harness import results

    results.configure(config)
    if config.getoption("--sc-kills"):
        from samplecheck.harness.kills import Kills

        config.pluginmanager.register(Kills(config.getoption("--sc-kills")), "samplecheck-kills")


def _plug_backends(config) -> None:
    from samplecheck.harness import packs, plugins
    from samplecheck.harness.plugins import register_all
    from samplecheck.registry.matrix import plug

    register_all()
    only = config.getoption("--sc-backend-only")
    try:
        if config.getoption("--sc-mutant"):  # the mutants alone: no plug-in is loaded
            plug([plugins.mutant_backend(name) for name in plugins.mutant_names(config.getoption("--sc-mutant"))],
                 only=True)
            return
        plugged = plugins.requested_backends(config.getoption("--sc-backend"),
                                             allow_broken=config.getoption("--sc-allow-broken-plugins"),
                                             packs=packs.selected(config.getoption("--sc-packs")))
        if plugged or only:
            if only and not plugged:
                raise ValueError("--sc-backend-only needs at least one --sc-backend, installed entry point or pack")
            plug(plugged, only=only)
    except (KeyError, ValueError, ImportError, AttributeError, TypeError) as err:
        raise pytest.UsageError(str(err)) from err


def pytest_report_header(config):
    from samplecheck.harness.plugins import UNPLUGGED
    from samplecheck.harness.profiles import profile_name
    from samplecheck.registry.matrix import declarations

    return ([f"samplecheck: device {config.samplecheck_device}, profile {profile_name(config)}"] + declarations()
            + [f"samplecheck: not tested: {reason}" for reason in UNPLUGGED])


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    """The suite's modules import under its profile (their `@given`/`@settings` take it)."""
    if not isinstance(collector, pytest.Module) or not owns(collector.path):
        return (yield)
    from samplecheck.harness.profiles import suite_settings

    with suite_settings(collector.config):
        return (yield)


def pytest_generate_tests(metafunc):
    if not owns(metafunc.definition.path):
        return
    from samplecheck.registry.matrix import combos, error_cases

    device_type = metafunc.config.samplecheck_device.type
    name = metafunc.definition.originalname
    if "combo" in metafunc.fixturenames:
        # matrix markers merge, the closest winning: a module's kernel= with a test's dtypes=.
        matrix = {}
        for marker in reversed(list(metafunc.definition.iter_markers("matrix"))):
            matrix.update(marker.kwargs)
        metafunc.parametrize("combo", combos(name, device_type, **matrix))
    if "error_case" in metafunc.fixturenames:
        metafunc.parametrize("error_case", error_cases(device_type))


def pytest_collection_modifyitems(config, items):
    from samplecheck.harness.ordering import reorder
    from samplecheck.harness.profiles import NIGHTLY, profile_name
    from samplecheck.harness.selection import judged_cells, parse_cells

    on_gpu = config.samplecheck_device.type == "cuda"
    nightly = profile_name(config) == NIGHTLY
    ours = [item for item in items if owns(item.path)]
    cells = config.getoption("--sc-cells")
    if cells is not None or config.getoption("--sc-backend-only"):
        try:
            wanted = None if cells is None else parse_cells(cells)
        except ValueError as err:
            raise pytest.UsageError(str(err)) from err
        whole = set(filter(None, (config.getoption("--sc-tests") or "").split(",")))
        dropped = {item for item in ours if not (judged_cells(item) if wanted is None else judged_cells(item) & wanted)
                   and item.nodeid.partition("::")[0] not in whole}
        if dropped:
            config.hook.pytest_deselected(items=[item for item in items if item in dropped])
            items[:] = [item for item in items if item not in dropped]
            ours = [item for item in ours if item not in dropped]
    for item in ours:
        if not on_gpu and item.get_closest_marker("gpu"):
            item.add_marker(pytest.mark.skip(reason="needs a CUDA device (marker gpu): run with --sc-device=cuda"))
        if on_gpu and item.get_closest_marker("cpu_subject"):
            item.add_marker(pytest.mark.skip(reason="checks a CPU run whatever the device (marker cpu_subject): "
                                                    "run with --sc-device=cpu"))
        if not nightly and item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.skip(reason=f"nightly-sized (marker slow): run with --sc-profile={NIGHTLY}"))
    reorder(config, items, ours)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    if not owns(item.path):
        return (yield)
    import torch

    from samplecheck.harness.big_buffers import release_cache
    from samplecheck.harness.gpu_math import gpu_fp32_math
    from samplecheck.harness.profiles import suite_settings
    from samplecheck.inputs.drawing import ExampleCounter

    ExampleCounter.count = 0
    on_gpu = item.config.samplecheck_device.type == "cuda"
    if on_gpu:
        torch.cuda.reset_peak_memory_stats()
        allocated = torch.cuda.memory_allocated(item.config.samplecheck_device)
    gpu_math = not on_gpu and item.config.getoption("--sc-gpu-math")
    try:
        with suite_settings(item.config), (gpu_fp32_math() if gpu_math else contextlib.nullcontext()):
            return (yield)
    finally:
        release_compile_locks()
        item.user_properties.append(("examples", ExampleCounter.count))
        if on_gpu:
            item.user_properties.append(("gpu_peak_bytes", torch.cuda.max_memory_allocated()))
            release_cache(item.config.samplecheck_device, allocated)


def release_compile_locks() -> None:
    """The Triton cache entries this process locked for a compile that raised (samplecheck.
    harness.compile_once, loaded where Triton's cache manager names it), released once the
    test's call is over: the other processes load or compile them."""
    compile_once = sys.modules.get("samplecheck.harness.compile_once")
    if compile_once is not None:
        compile_once.release_held()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """A pin with a signature (`finding` marker): a failure without it fails, a pass passes."""
    from samplecheck.harness.findings import is_the_finding, signature_pin

    report = yield
    pin = signature_pin(item) if call.when == "call" and owns(item.path) else None
    if pin is None or not hasattr(report, "wasxfail"):
        return report
    if report.passed:  # the case did not reach the finding
        del report.wasxfail
    elif not is_the_finding(item, call.excinfo.exconly() if call.excinfo is not None else report.longreprtext):
        del report.wasxfail
        report.outcome = "failed"
        report.sections.append(("pinned finding", f"this failure is not the pinned finding's signature: "
                                                  f"{pin.kwargs['reason']}"))
    return report


def pytest_terminal_summary(terminalreporter):
    """On GPU runs, the tests with the largest peak of allocated GPU memory (per worker)."""
    peaks = [(dict(r.user_properties)["gpu_peak_bytes"], r.nodeid)
             for reports in terminalreporter.stats.values() for r in reports
             if getattr(r, "when", None) == "call" and "gpu_peak_bytes" in dict(getattr(r, "user_properties", ()))]
    if peaks:
        terminalreporter.write_sep("=", "largest GPU memory peaks")
        for peak, nodeid in sorted(peaks, reverse=True)[:10]:
            terminalreporter.write_line(f"{peak / 2**30:8.2f} GiB  {nodeid}")
