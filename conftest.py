"""Root pytest configuration: device selection, GPU pinning, profiles, the test matrix,
and reproduction commands on failure.

- `--device auto|cpu|cuda` (default auto: CUDA when available). On CPU, TRITON_INTERPRET=1
  is set in pytest_configure, before any test module imports a kernel.
- Under pytest-xdist each worker gwN is pinned to GPU N % device_count.
- Tests that take a `combo` argument are parametrized over the registry; `@pytest.mark.matrix(...)`
  markers (module and function ones merge) restrict kernel/dtypes/layouts (properties.registry.combos).
"""

import os
import shlex
import sys

import pytest
import torch

from properties.profiles import ALPHA, register_profiles

register_profiles()


def pytest_addoption(parser):
    group = parser.getgroup("samplecheck")
    group.addoption("--device", choices=("auto", "cpu", "cuda"), default="auto",
                    help="where kernels run: auto (CUDA if available), cpu (Triton interpreter), cuda")
    group.addoption("--stat-alpha", type=float, default=None,
                    help="per-test false-alarm rate of statistical tests (default by Hypothesis profile: "
                         + ", ".join(f"{k} {v:g}" for k, v in ALPHA.items()) + ")")
    group.addoption("--mutant", default=None,
                    help="run the suite against this mutant alone (names in kernels.mutants.MUTANTS)")
    group.addoption("--backend", action="append", default=[], metavar="KERNEL=MODULE:CALLABLE",
                    help="also test this implementation of KERNEL (repeatable); see docs/backends.md")
    group.addoption("--backend-only", action="store_true",
                    help="test only the plugged implementations (--backend and installed entry points)")


def pytest_configure(config):
    from kernels.runtime import use_device

    device_type = use_device(config.getoption("--device"))
    if device_type == "cuda":
        worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
        torch.cuda.set_device(int(worker.removeprefix("gw")) % torch.cuda.device_count())
        config.samplecheck_device = torch.device("cuda", torch.cuda.current_device())
    else:
        config.samplecheck_device = torch.device("cpu")
    import properties.infos  # noqa: F401  (registers the kernels)

    from properties import plugins
    from properties.registry import plug

    try:
        plugged = [plugins.parse_backend_option(text) for text in config.getoption("--backend")]
        plugged += plugins.installed_backends()
        if config.getoption("--mutant"):
            plug([plugins.mutant_backend(config.getoption("--mutant"))], only=True)
        elif plugged or config.getoption("--backend-only"):
            if config.getoption("--backend-only") and not plugged:
                raise ValueError("--backend-only needs at least one --backend or installed entry point")
            plug(plugged, only=config.getoption("--backend-only"))
    except (KeyError, ValueError, ImportError, AttributeError) as err:
        raise pytest.UsageError(str(err)) from err


def _profile(config) -> str:
    return config.getoption("--hypothesis-profile", default=None) or "dev"


@pytest.fixture(scope="session")
def device(pytestconfig) -> torch.device:
    return pytestconfig.samplecheck_device


@pytest.fixture(scope="session")
def stat_alpha(pytestconfig) -> float:
    return pytestconfig.getoption("--stat-alpha") or ALPHA[_profile(pytestconfig)]


@pytest.fixture(scope="session")
def budget(device):
    from properties.strategies import BUDGETS

    return BUDGETS[device.type]


def pytest_generate_tests(metafunc):
    from properties import registry

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


# A worker keeps at most this much GPU memory cached between tests: xdist workers share
# the GPUs, and one worker's cache of a large test must not starve the others.
CACHED_GPU_BYTES = 4 * 2**30


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    from properties.drawing import ExampleCounter

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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed and call.when == "call":
        command = [sys.executable, "-m", "pytest", item.nodeid, f"--device={item.config.samplecheck_device.type}",
                   f"--hypothesis-profile={_profile(item.config)}"]
        alpha = item.config.getoption("--stat-alpha")
        if alpha:
            command.append(f"--stat-alpha={alpha:g}")
        report.sections.append(("reproduce", "Reproduce with (the Hypothesis blob above pins the example):\n  "
                                + shlex.join(command)))
    return report
