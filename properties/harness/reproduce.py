"""Every failure of a samplecheck test says how to rerun it (registered by
samplecheck.harness.plugin as `samplecheck-reproduce`): a `reproduce` section with the exact
pytest command, also written to JUnit XML as the `reproduce` property, with the Hypothesis
blob (`hypothesis_blob`) and the per-test-id seed (`hypothesis_seed`) when there are.
Other projects' tests in the same run get nothing."""

import re
import shlex
import sys

import pytest

from samplecheck.harness.kills import mutant_of
from samplecheck.harness.options import EVERY_TEST, SUITE_PLUGIN, owns
from samplecheck.harness.profiles import EXAMPLE_DB_ENV, NIGHTLY, nightly_database, profile_name
from samplecheck.harness.seeds import SEED
from samplecheck.harness.suite_files import config_args

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
    profile = profile_name(config)
    database = ["env", f"{EXAMPLE_DB_ENV}={nightly_database()}"] if profile == NIGHTLY else []
    claimed = ["-p", SUITE_PLUGIN] if EVERY_TEST["claimed"] else []  # a run that asked for it by name
    command = database + [sys.executable, "-m", "pytest", test, *config_args(), *claimed, "-p", "no:xdist",
                          f"--sc-device={config.samplecheck_device.type}", f"--sc-profile={profile}"]
    if config.getoption("--sc-stat-alpha"):
        command.append(f"--sc-stat-alpha={config.getoption('--sc-stat-alpha'):g}")
    command += [f"--sc-backend={text}" for text in config.getoption("--sc-backend")]
    if config.getoption("--sc-packs") != "all":
        command.append(f"--sc-packs={config.getoption('--sc-packs')}")
    for flag in ("--sc-backend-only", "--sc-allow-broken-plugins"):
        if config.getoption(flag):
            command.append(flag)
    if config.getoption("--sc-mutant"):  # the failing test's own mutant
        command.append(f"--sc-mutant={mutant_of(item) or config.getoption('--sc-mutant')}")
    return command


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.failed and call.when == "call" and owns(item.path):
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
