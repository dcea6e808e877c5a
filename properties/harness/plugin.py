"""samplecheck's pytest plugin (entry point `pytest11: samplecheck`), loaded by any pytest run
in an environment where samplecheck is installed.

It provides the options (`--sc-device`, `--sc-stat-alpha`, `--sc-mutant`, `--sc-backend`, `--sc-backend-only`),
the fixtures (`device`, `stat_alpha`, `rare_draws`, `budget`), the Hypothesis profiles, the markers and the
parametrization of samplecheck's property tests (`samplecheck.tests`, run with
`samplecheck test` or `pytest --pyargs samplecheck.tests.cover`) over the registry.

- The device is chosen before any conftest or test module is imported
  (`pytest_load_initial_conftests`): on CPU, TRITON_INTERPRET=1 is set there, so kernel
  modules may be imported at the top of any module collected later.
- Under pytest-xdist each worker gwN is pinned to GPU N % device_count.
- Markers act: `gpu` tests are skipped without a CUDA device, `slow` ones outside the nightly
  profile; `matrix(...)` restricts the registry matrix of a test (module and test markers merge).
- Every failure carries a `reproduce` section and JUnit properties (`reproduce`, and the
  Hypothesis blob when there is one) with every option needed to rerun it verbatim.
"""

import os
import re
import shlex
import sys

import pytest

from samplecheck.harness import results
from samplecheck.harness.profiles import ALPHA, EXAMPLE_DB_ENV, NIGHTLY, RARE_DRAWS, nightly_database, register_profiles
from samplecheck.harness.seeds import SEED

register_profiles()

MARKERS = (
    "matrix(kernel=None, dtypes=None, layouts=None, sampled=False, own_sampler=False, output_law=False, knob=None, "
    "off_encodings=False, capturable=False, guard_flag=False, id_lists=False): "
    "restricts the registry matrix of a generic test",
    "interpreter: runs under the Triton CPU interpreter too (select with -m interpreter)",
    "gpu: needs a CUDA device; skipped on CPU",
    "slow: nightly-sized; skipped outside the nightly profile",
)
# A worker keeps at most this much GPU memory cached between tests: xdist workers share
# the GPUs, and one worker's cache of a large test must not starve the others.
CACHED_GPU_BYTES = 4 * 2**30


def pytest_addoption(parser, pluginmanager):
    from samplecheck.harness import isolation, seeds

    pluginmanager.register(seeds, "samplecheck-seeds")
    pluginmanager.register(isolation, "samplecheck-isolation")
    group = parser.getgroup("samplecheck")
    group.addoption("--sc-device", choices=("auto", "cpu", "cuda"), default="auto",
                    help="where kernels run: auto (CUDA if available), cpu (Triton interpreter), cuda")
    group.addoption("--sc-stat-alpha", type=float, default=None,
                    help="per-test false-alarm rate of statistical tests (default by Hypothesis profile: "
                         + ", ".join(f"{k} {v:g}" for k, v in ALPHA.items()) + ")")
    group.addoption("--sc-mutant", default=None,
                    help="run the suite against this mutant alone "
                         "(names: samplecheck.kernels.mutants.MUTANTS, the kill table)")
    group.addoption("--sc-backend", action="append", default=[], metavar="KERNEL=MODULE:CALLABLE",
                    help="also test this implementation of KERNEL (repeatable); see docs/backends.md")
    group.addoption("--sc-backend-only", action="store_true",
                    help="test only the plugged implementations (--sc-backend and installed entry points)")
    group.addoption("--sc-profile", default=None, help="samplecheck's Hypothesis profile: dev, ci, gate, nightly")
    results.add_options(group)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    from samplecheck.kernels.runtime import use_device

    early_config.samplecheck_device_type = use_device(early_config.known_args_namespace.sc_device)


def pytest_configure(config):
    import torch

    from samplecheck.harness import plugins, seeds
    from samplecheck.harness.registry import plug, register_all

    from hypothesis import settings

    if config.getoption("--sc-profile"):
        settings.load_profile(config.getoption("--sc-profile"))
    for line in MARKERS:
        config.addinivalue_line("markers", line)
    device_type = getattr(config, "samplecheck_device_type", None)
    if device_type is None:  # registered after the initial conftests (e.g. by a conftest's pytest_plugins)
        from samplecheck.kernels.runtime import use_device

        device_type = use_device(config.getoption("--sc-device"))
    if device_type == "cuda":
        worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
        torch.cuda.set_device(int(worker.removeprefix("gw")) % torch.cuda.device_count())
        config.samplecheck_device = torch.device("cuda", torch.cuda.current_device())
    else:
        config.samplecheck_device = torch.device("cpu")
    register_all()
    try:
        plugged = [plugins.parse_backend_option(text) for text in config.getoption("--sc-backend")]
        plugged += plugins.installed_backends()
        if config.getoption("--sc-mutant"):
            plug([plugins.mutant_backend(config.getoption("--sc-mutant"))], only=True)
        elif plugged or config.getoption("--sc-backend-only"):
            if config.getoption("--sc-backend-only") and not plugged:
                raise ValueError("--sc-backend-only needs at least one --sc-backend or installed entry point")
            plug(plugged, only=config.getoption("--sc-backend-only"))
    except (KeyError, ValueError, ImportError, AttributeError) as err:
        raise pytest.UsageError(str(err)) from err
    seeds.preload_package_modules()  # after the device switch: it imports the kernels
    results.configure(config)


def pytest_report_header(config):
    from samplecheck.harness.plugins import UNPLUGGED
    from samplecheck.harness.registry import declarations

    return ([f"samplecheck: device {config.samplecheck_device}, profile {_profile(config)}"] + declarations()
            + [f"samplecheck: not tested: {reason}" for reason in UNPLUGGED])


def _profile(config) -> str:
    return config.getoption("--sc-profile", default=None) or "dev"


@pytest.fixture(scope="session")
def device(pytestconfig):
    return pytestconfig.samplecheck_device


@pytest.fixture(scope="session")
def stat_alpha(pytestconfig) -> float:
    return pytestconfig.getoption("--sc-stat-alpha") or ALPHA[_profile(pytestconfig)]


@pytest.fixture(scope="session")
def rare_draws(pytestconfig) -> int:
    return RARE_DRAWS[_profile(pytestconfig)]


@pytest.fixture(scope="session")
def budget(device):
    from samplecheck.inputs.strategies import BUDGETS

    return BUDGETS[device.type]


@pytest.fixture(autouse=True)
def deferred_value_errors():
    """A deferred value check's error (docs/validation.md) surfaces in the test whose call
    failed it, at that test's teardown, never in a later test."""
    yield
    from samplecheck.kernels.value_modes import raise_pending

    raise_pending()


def pytest_generate_tests(metafunc):
    from samplecheck.harness import registry

    device_type = metafunc.config.samplecheck_device.type
    name = metafunc.definition.originalname
    if "combo" in metafunc.fixturenames:
        # matrix markers merge, the closest winning: a module's kernel= with a test's dtypes=.
        matrix = {}
        for marker in reversed(list(metafunc.definition.iter_markers("matrix"))):
            matrix.update(marker.kwargs)
        metafunc.parametrize("combo", registry.combos(name, device_type, **matrix))
    if "error_case" in metafunc.fixturenames:
        metafunc.parametrize("error_case", registry.error_cases(device_type))


def pytest_collection_modifyitems(config, items):
    on_gpu = config.samplecheck_device.type == "cuda"
    nightly = _profile(config) == NIGHTLY
    for item in items:
        if not on_gpu and item.get_closest_marker("gpu"):
            item.add_marker(pytest.mark.skip(reason="needs a CUDA device (marker gpu): run with --sc-device=cuda"))
        if not nightly and item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.skip(reason=f"nightly-sized (marker slow): run with --sc-profile={NIGHTLY}"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    import torch

    from samplecheck.inputs.drawing import ExampleCounter

    ExampleCounter.count = 0
    on_gpu = item.config.samplecheck_device.type == "cuda"
    if on_gpu:
        torch.cuda.reset_peak_memory_stats()
    try:
        return (yield)
    finally:
        item.user_properties.append(("examples", ExampleCounter.count))
        if on_gpu:
            item.user_properties.append(("gpu_peak_bytes", torch.cuda.max_memory_allocated()))
            if torch.cuda.memory_reserved() > CACHED_GPU_BYTES:
                torch.cuda.empty_cache()


def pytest_terminal_summary(terminalreporter):
    """On GPU runs, the tests with the largest peak of allocated GPU memory (per worker)."""
    peaks = [(dict(r.user_properties)["gpu_peak_bytes"], r.nodeid)
             for reports in terminalreporter.stats.values() for r in reports
             if getattr(r, "when", None) == "call" and "gpu_peak_bytes" in dict(getattr(r, "user_properties", ()))]
    if peaks:
        terminalreporter.write_sep("=", "largest GPU memory peaks")
        for peak, nodeid in sorted(peaks, reverse=True)[:10]:
            terminalreporter.write_line(f"{peak / 2**30:8.2f} GiB  {nodeid}")


BLOB = re.compile(r"@reproduce_failure\([^)]*\)")


def reproduce_command(item, test: str | None = None) -> list[str]:
    """The command that reruns `item` alone with every option that shaped it: the test by
    absolute path (so it runs from any directory, in this checkout or an installed
    samplecheck), device, profile, alpha, plugged backends and mutant. Under the nightly
    profile (random draws) the failing example replays from the database it was saved to,
    so the command sets that database first. `test`: another test id (path::name[params])
    to run under the same options instead of `item`."""
    config = item.config
    test = test or f"{item.path}::{item.nodeid.split('::', 1)[1]}"
    profile = _profile(config)
    database = ["env", f"{EXAMPLE_DB_ENV}={nightly_database()}"] if profile == NIGHTLY else []
    command = database + [sys.executable, "-m", "pytest", test, "-p", "no:xdist",
                          f"--sc-device={config.samplecheck_device.type}", f"--sc-profile={profile}"]
    if config.getoption("--sc-stat-alpha"):
        command.append(f"--sc-stat-alpha={config.getoption('--sc-stat-alpha'):g}")
    command += [f"--sc-backend={text}" for text in config.getoption("--sc-backend")]
    if config.getoption("--sc-backend-only"):
        command.append("--sc-backend-only")
    if config.getoption("--sc-mutant"):
        command.append(f"--sc-mutant={config.getoption('--sc-mutant')}")
    return command


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed and call.when == "call":
        command = shlex.join(reproduce_command(item))
        blob = BLOB.search(report.longreprtext)
        seeds = "the Hypothesis blob above pins the example" if blob else "seeds derive from the test id"
        text = f"Reproduce with ({seeds}):\n  {command}"
        if SEED in item.stash:
            text += f"\nHypothesis seed of this test id: {item.stash[SEED]} (@hypothesis.seed({item.stash[SEED]}))"
            item.user_properties.append(("hypothesis_seed", item.stash[SEED]))
        report.sections.append(("reproduce", text))
        item.user_properties.append(("reproduce", command))
        if blob:
            item.user_properties.append(("hypothesis_blob", blob.group(0)))
    return report

