"""Every cell of samplecheck's test matrix draws its own cases under the derandomized profiles.

Hypothesis derives a derandomized run's seed from the test function, which all its
parametrizations share: every dtype x layout combo of a kernel would replay one sequence
of cases. This plugin (registered by samplecheck.harness.plugin as `samplecheck-seeds`;
`-p no:samplecheck-seeds` restores Hypothesis' shared seed) gives each Hypothesis test item
its own seed through the public `hypothesis.seed` decorator, derived from the test module
and the test id with the backend left out: each (kernel, dtype, layout) cell draws its own
cases, and every backend of a cell (ours, a plug-in, a mutant) draws the same ones, so
outcomes compare across backends. The seed is fixed by the test id alone, so a rerun of the
id reproduces it; the plugin's reproduce section prints it. Random profiles (dev, nightly)
are left random.
"""

import hashlib
import importlib
import pkgutil

import pytest
from hypothesis import is_hypothesis_test, seed, settings

from samplecheck.harness.options import owns
from samplecheck.registry.records import DTYPE_NAMES

SEED = pytest.StashKey[int]()
# Packages whose modules are test code (Hypothesis takes no constants from them) or need
# what a plain run may lack (optional extras, third-party GPU libraries).
NOT_PRELOADED = ("samplecheck.tests",)


def preload_package_modules() -> None:
    """Import every module of the samplecheck package (except NOT_PRELOADED; a module whose
    import fails, e.g. for an optional extra, is left out).

    Hypothesis (6.13x and later) draws about 5% of its numbers from the literal constants of
    the local, non-test modules loaded in the process, a pool that grows as modules get
    imported. Which samplecheck modules a run imports depends on the test files it collects
    (tests/cover/test_report.py imports the nightly and report tools), so the same seed drew
    different cases in a file run and a folder run. Loading every module first makes the pool,
    and so every seeded run's draws, the same whatever is collected."""
    import samplecheck

    for module in pkgutil.walk_packages(samplecheck.__path__, "samplecheck."):
        if module.name.startswith(NOT_PRELOADED):
            continue
        try:
            importlib.import_module(module.name)
        except Exception:  # noqa: BLE001 - an optional dependency missing here is not this run's concern
            pass


def seed_key(item) -> str:
    """The test id that fixes the seed: module, test name and parameters, the combo's
    backend removed."""
    name = item.name
    callspec = getattr(item, "callspec", None)
    combo = callspec.params.get("combo") if callspec is not None else None
    if combo is not None:
        name = name.replace(combo.id, f"{combo.info.name}-{DTYPE_NAMES[combo.dtype]}-{combo.layout}", 1)
    return f"{item.module.__name__}::{name}"


def seed_for(key: str) -> int:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    test = getattr(item, "function", None)
    if test is None or not owns(item.path) or not is_hypothesis_test(test) or not settings.default.derandomize:
        return
    value = seed_for(seed_key(item))
    seed(value)(test)  # the shared function object: set again before each item runs
    item.stash[SEED] = value
