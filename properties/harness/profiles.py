"""samplecheck's Hypothesis profiles, selected with `pytest --sc-profile=NAME` (default dev) and
applied to samplecheck's own tests alone: registered with Hypothesis under prefixed names
(`samplecheck-NAME`, so no project's or Hypothesis' own "ci" is replaced) when the suite's
plugin activates, and made the default only while the suite's modules import and its tests
run (`suite_settings`); Hypothesis' loaded profile is never changed.

- dev: quick local runs (10 examples, random, local example database), shrinking failures.
- ci: the CPU interpreter in CI: derandomized, no database, 6 examples per test.
- gate: the kernel-change PR gate: derandomized, no database, 30 examples per test.
- nightly: 1000 examples per test (or $SAMPLECHECK_NIGHTLY_EXAMPLES: `samplecheck nightly`
  sizes it to its time budget), a directory example database ($SAMPLECHECK_EXAMPLE_DB,
  default .hypothesis/examples: a directory CI caches between nights), target() steering.
ci and gate do not shrink: a gate reports the first failing case at once (a statistical or
full-vocabulary case can take minutes per shrink step on a GPU), with the blob that replays
it exactly; rerun it under dev to shrink. All print the reproduction blob and have no
deadline (the first call JIT-compiles).
"""

import os

from hypothesis import HealthCheck, Phase, settings
from hypothesis._settings import local_settings
from hypothesis.database import DirectoryBasedExampleDatabase

NIGHTLY = "nightly"
PREFIX = "samplecheck-"
EXAMPLE_DB_ENV = "SAMPLECHECK_EXAMPLE_DB"
NIGHTLY_EXAMPLES_ENV = "SAMPLECHECK_NIGHTLY_EXAMPLES"
# Statistical tests' per-test false-alarm rate by profile (override with --sc-stat-alpha).
ALPHA = {"dev": 1e-6, "ci": 1e-6, "gate": 1e-6, NIGHTLY: 1e-8}
# Draws per example of the rare-events property (tests/cover/test_rare_events.py; its power per
# rate: docs/nightly.md), by profile.
RARE_DRAWS = {"dev": 2**14, "ci": 2**12, "gate": 2**20, NIGHTLY: 2**24}
# Logits elements one example of it reads at most (draws x vocabulary; each draw reads the
# whole row): 2**35 is 64 GiB of bf16 logits, about 3 s on one H200. The vocabulary it
# draws is capped at RARE_ELEMENTS / draws (2**15 under gate, 2**11 nightly).
RARE_ELEMENTS = 2**35
NO_SHRINK = tuple(phase for phase in Phase if phase not in (Phase.shrink, Phase.explain))

_COMMON = dict(
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)


def nightly_database() -> str:
    """The nightly profile's example database: $SAMPLECHECK_EXAMPLE_DB or .hypothesis/examples,
    absolute (a reproduce command names it, so it replays from any directory)."""
    return os.path.abspath(os.environ.get(EXAMPLE_DB_ENV, ".hypothesis/examples"))


def register_profiles() -> None:
    """Each profile is built on Hypothesis' own defaults, not on the profile loaded at import:
    where a CI variable is set (CI=true on most runners) Hypothesis loads its "ci" profile
    (derandomize=True, no database), which would otherwise make the nightly draw the same
    cases every night and never replay its database."""
    base = settings.get_profile("default")
    settings.register_profile(PREFIX + "dev", base, max_examples=10, **_COMMON)
    settings.register_profile(PREFIX + "ci", base, max_examples=6, derandomize=True, database=None,
                              phases=NO_SHRINK, **_COMMON)
    settings.register_profile(PREFIX + "gate", base, max_examples=30, derandomize=True, database=None,
                              phases=NO_SHRINK, **_COMMON)
    settings.register_profile(PREFIX + NIGHTLY, base, max_examples=int(os.environ.get(NIGHTLY_EXAMPLES_ENV, 1000)),
                              database=DirectoryBasedExampleDatabase(nightly_database()), **_COMMON)


def profile_name(config) -> str:
    """The run's samplecheck profile: `--sc-profile`, default dev."""
    return config.getoption("--sc-profile") or "dev"


def suite_settings(config):
    """A context in which Hypothesis' default settings are the run's samplecheck profile. A run
    against mutants (`--sc-mutant`: a kill-table hunt) stops each test at its first failing
    case, among its explicit examples too: one case kills, and no pin applies to a mutant's
    backend, so the rest of a failing test's cases are not run (Hypothesis would otherwise look
    on for further distinct failures)."""
    profile = settings.get_profile(PREFIX + profile_name(config))
    if config.getoption("--sc-mutant", default=None):
        profile = settings(profile, report_multiple_bugs=False)
    return local_settings(profile)
