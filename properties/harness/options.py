"""samplecheck's pytest entry point (`pytest11: samplecheck`): a guest in every pytest run of
an environment where samplecheck is installed, so it does nothing but declare its options
(all prefixed `--sc-`, so no project's own options clash with them) until the run collects
samplecheck's own suite. It imports neither torch, triton, Hypothesis nor any plug-in.

The suite's machinery (samplecheck.harness.plugin: the device switch, the registry, the
profiles, the reproduce sections, the fault isolation) is registered when
- the run's arguments name samplecheck's test folder or something inside it (`samplecheck
  test`, `pytest tests/cover` in a checkout, `pytest --pyargs samplecheck.tests.cover`), or a
  checkout holding it (`pytest` at the checkout's root); seen before any conftest is loaded;
- a conftest of samplecheck's test folder is loaded (any other way of collecting it);
- or the run asks for it: `-p samplecheck.harness.plugin`.
Even registered, it acts only on the tests in samplecheck's test folder (`owns`).
`-p no:samplecheck` turns the entry point off altogether.
"""

import functools
import importlib.util
from pathlib import Path

import pytest

SUITE_PLUGIN = "samplecheck.harness.plugin"
# Set when the suite plugin was asked for by name (`-p samplecheck.harness.plugin`): the run
# then treats every test it collects as samplecheck's.
EVERY_TEST = {"claimed": False}
SUITE_PACKAGE = "samplecheck.tests"
PROFILES = ("dev", "ci", "gate", "nightly")


def add_options(parser) -> None:
    group = parser.getgroup("samplecheck", "samplecheck (acts only on samplecheck's own test suite)")
    group.addoption("--sc-device", choices=("auto", "cpu", "cuda"), default="auto",
                    help="where kernels run: auto (CUDA if available), cpu (Triton interpreter), cuda")
    group.addoption("--sc-profile", choices=PROFILES, default=None,
                    help="samplecheck's Hypothesis profile, applied to samplecheck's tests alone: dev (default; "
                         "10 examples), ci (6, derandomized), gate (30, derandomized), nightly (1000, example database)")
    group.addoption("--sc-stat-alpha", type=float, default=None,
                    help="per-test false-alarm rate of statistical tests (default 1e-6; nightly profile 1e-8)")
    group.addoption("--sc-mutant", default=None, metavar="NAME[,NAME...]",
                    help="run the suite against these mutants alone (names: samplecheck.mutants.MUTANTS)")
    group.addoption("--sc-kills", default=None, metavar="DIR",
                    help="the kill table's shared run: record each mutant's first failed test in DIR and skip "
                         "its later tests (samplecheck.harness.kills)")
    group.addoption("--sc-backend", action="append", default=[], metavar="KERNEL=MODULE:CALLABLE",
                    help="also test this implementation of KERNEL (repeatable); see docs/backends.md")
    group.addoption("--sc-backend-only", action="store_true",
                    help="test only the plugged implementations (--sc-backend, entry points, packs), with only "
                         "the properties that judge them")
    group.addoption("--sc-gpu-math", action="store_true",
                    help="on the CPU, the interpreter's fp32 `/` and exp as an NVIDIA GPU computes them "
                         "(samplecheck.harness.gpu_math): finds kernels that need either exact")
    group.addoption("--sc-cells", default=None, metavar="RECORD/BACKEND,...",
                    help="only the tests that judge these (record, backend) pairs (samplecheck gate --changed)")
    group.addoption("--sc-tests", default=None, metavar="tests/PATH.py,...",
                    help="with --sc-cells: also every test of these modules (samplecheck gate --changed)")
    group.addoption("--sc-packs", default="all", metavar="all|none|NAME,...",
                    help="which installed packs (third-party engines' kernels, docs/packs.md) are plugged")
    group.addoption("--sc-allow-broken-plugins", action="store_true",
                    help="a plug-in or pack that fails to load is reported and its tests skipped, instead of "
                         "failing the run")
    group.addoption("--sc-test-timeout", type=float, default=1800.0,
                    help="seconds one of samplecheck's tests may run before it counts as hung: recorded, and its "
                         "process (xdist worker) exits and is replaced (0: no limit)")
    group.addoption("--sc-results", default=None, metavar="PATH.json",
                    help="write one JSON record per samplecheck test (the nightly report's input)")
    group.addoption("--sc-cuda-wait", choices=("auto", "spin", "yield", "block"), default="auto",
                    help="how a samplecheck test process waits for its GPU: CUDA's default (auto: spin a core), "
                         "spin, yield, or block (sleep; frees the core for other xdist workers): "
                         "samplecheck.harness.cuda_wait")
    group.addoption("--sc-order", choices=("cost", "collection"), default="cost",
                    help="the order samplecheck's tests run in: cost (longest expected first, dealt to the xdist "
                         "workers: samplecheck.harness.ordering) or collection (pytest's)")
    group.addoption("--sc-deadline", type=float, default=None, metavar="EPOCH",
                    help="skip samplecheck tests that would start after this time (seconds since the epoch)")


def pytest_addoption(parser, pluginmanager):
    add_options(parser)


@functools.cache
def suite_folder() -> Path | None:
    """Where samplecheck's tests are (tests/ of a checkout installed editable, or
    site-packages/samplecheck/tests), found without importing them; None if not installed."""
    spec = importlib.util.find_spec(SUITE_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def owns(path) -> bool:
    """Whether `path` (a test file or folder) is in samplecheck's suite, or the run asked for
    samplecheck on every test."""
    return EVERY_TEST["claimed"] or _in_suite_folder(str(path))


@functools.cache
def _in_suite_folder(path: str) -> bool:
    """`owns` without the claim, once per path: every hook of every test asks it."""
    folder = suite_folder()
    return folder is not None and Path(path).resolve().is_relative_to(folder)


def _names_suite(arg: str, rootpath: Path, pyargs: bool) -> bool:
    """`arg` (a pytest argument) names samplecheck's suite, a part of it, or a checkout that
    holds it (an installed copy inside a folder, e.g. a project's .venv, does not count)."""
    target = arg.split("::", 1)[0]
    if pyargs and (target == SUITE_PACKAGE or target.startswith(SUITE_PACKAGE + ".")):
        return True
    folder = suite_folder()
    path = (rootpath / target).resolve() if target else rootpath.resolve()
    if folder is None or not path.exists():
        return False
    return path.is_relative_to(folder) or (folder.is_relative_to(path) and "site-packages" not in folder.parts)


def targets_suite(config, args) -> bool:
    invocation = Path(config.invocation_params.dir)
    pyargs = bool(getattr(config.known_args_namespace, "pyargs", False))
    return any(_names_suite(str(arg), invocation, pyargs) for arg in args)


ACTIVATED = pytest.StashKey[bool]()


def activate(config) -> None:
    """Register the suite's machinery (once per run)."""
    if not config.pluginmanager.has_plugin(SUITE_PLUGIN):
        from samplecheck.harness import plugin

        config.stash[ACTIVATED] = True
        config.pluginmanager.register(plugin, SUITE_PLUGIN)


def claim_every_test_unless_activated(config) -> None:
    """Called by the suite plugin: registered by name (`-p`), not by `activate`, it acts on
    every test of the run."""
    EVERY_TEST["claimed"] = not config.stash.get(ACTIVATED, False)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """Before any conftest loads: activate when the arguments name the suite (so its device
    is chosen before a conftest could import a kernel). With no arguments, pytest collects
    its testpaths or the current folder."""
    positional = [a for a in args if not str(a).startswith("-")]
    if targets_suite(early_config, positional or list(early_config.getini("testpaths")) or ["."]):
        activate(early_config)
