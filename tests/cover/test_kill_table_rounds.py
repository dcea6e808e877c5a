"""The kill table's hunts: their selection holds the hunted mutants' tests alone, each test stops
at its first failing case, and the shared round stops once every mutant it hunts is killed."""

import os
import subprocess
import sys
import time

from samplecheck.harness.suite_files import suite_path
from samplecheck.tools import killtable

# A parent that starts a child (as pytest starts its xdist workers); the child prints its pid,
# and both sleep far longer than the test waits.
FAMILY = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import os, time; print(os.getpid(), flush=True); time.sleep(600)"],
                         stdout=sys.stdout)
print("parent", flush=True)
time.sleep(600)
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by its parent) counts as gone
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_run_stops_with_its_whole_process_group_once_done():
    started = time.monotonic()
    polls = []

    def done():  # holds from the 20th poll on (5 s): the child has started by then
        polls.append(None)
        return len(polls) >= 20

    stdout, _, returncode = killtable.run_until_done([sys.executable, "-c", FAMILY], dict(os.environ), 60, done)
    assert returncode is None, "a run stopped early has no exit status"
    assert time.monotonic() - started < 30, "the run is stopped when done() holds, not at its end"
    pids = [int(line) for line in stdout.split() if line.isdigit()]
    deadline = time.monotonic() + 10
    while pids and any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pids and not any(alive(pid) for pid in pids), "the run's children are stopped with it"


def test_a_run_that_ends_by_itself_gives_its_output_and_status():
    stdout, stderr, returncode = killtable.run_until_done(
        [sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"],
        dict(os.environ), 60, lambda: False)
    assert (stdout, stderr, returncode) == ("out\n", "err\n", 3)


def test_a_run_past_its_timeout_is_stopped():
    started = time.monotonic()
    _, _, returncode = killtable.run_until_done([sys.executable, "-c", "import time; time.sleep(600)"],
                                                dict(os.environ), 1, lambda: False)
    assert returncode is None and time.monotonic() - started < 20


def test_a_hunt_selects_the_mutants_tests_and_no_framework_test_named_after_mutants():
    # test_changed_gate.py has a test whose name holds "mutant"; test_empty_batch.py is the
    # known killer of the mutant hunted here.
    files = [str(suite_path() / name) for name in ("test_changed_gate.py", "test_empty_batch.py")]
    command = killtable._pytest(files, ["gumbel_empty_batch_planned"], "cpu", "ci") + ["--collect-only", "-p", "no:xdist"]
    listed = subprocess.run(command, capture_output=True, text=True, timeout=300).stdout.splitlines()
    selected = [line for line in listed if "::" in line]
    assert selected, "\n".join(listed)
    assert all("mutant-gumbel_empty_batch_planned" in line for line in selected), "\n".join(selected)


class _Options:
    """A pytest config's `getoption` for the options `suite_settings` reads."""

    def __init__(self, **options):
        self.options = {f"--sc-{name}": value for name, value in options.items()}

    def getoption(self, name, default=None):
        return self.options.get(name, default)


def test_a_hunt_stops_each_test_at_its_first_failing_case():
    """Against mutants (`--sc-mutant`, as every hunt runs) Hypothesis looks for no further
    failure once a test has one, among its explicit examples too; other runs keep the profile's
    own setting (every distinct failure reported)."""
    from hypothesis import settings

    from samplecheck.harness.profiles import suite_settings

    hunted = "gumbel_empty_batch_planned"
    for options, multiple in ((dict(profile="ci"), True), (dict(profile="ci", mutant=hunted), False),
                              (dict(profile="gate", mutant=hunted), False)):
        with suite_settings(_Options(**options)):
            assert settings.default.report_multiple_bugs is multiple, options
            profile = settings.get_profile(f"samplecheck-{options['profile']}")
            assert settings.default.max_examples == profile.max_examples, options
