"""bench/'s modules for the tests of the benchmark, loaded by path: bench/ lives in a checkout,
beside tests/, and an installed copy of the suite has none (its tests are then skipped)."""

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def in_checkout(name: str):
    """The mark that skips a test module when bench/NAME.py is not there."""
    return pytest.mark.skipif(not (BENCH / f"{name}.py").is_file(),
                              reason="bench/ lives in a checkout; this is an installed copy")


def load(name: str):
    """bench/NAME.py as a module of its own (`bench_NAME`)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def loaded_on_cpu(name: str, device, why: str):
    """For a module-scoped fixture (`yield from`): bench/NAME.py loaded with bench/'s parent on
    sys.path (its own imports of bench.*) for the fixture's scope; skipped on a GPU (`why`)."""
    if device.type != "cpu":
        pytest.skip(why)
    yield from loaded_with_bench(name)


def loaded_with_bench(name: str):
    """For a module-scoped fixture (`yield from`): bench/NAME.py loaded with bench/'s parent on
    sys.path (its own imports of bench.*) for the fixture's scope."""
    sys.path.insert(0, str(BENCH.parent))
    try:
        yield load(name)
    finally:
        sys.path.remove(str(BENCH.parent))
