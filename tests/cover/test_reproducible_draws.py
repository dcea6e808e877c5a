"""A seeded run draws the same cases whatever else it collects (samplecheck.harness.seeds:
Hypothesis also draws constants from the samplecheck modules loaded in the process, so the
plugin loads them all first). A failure's reproduce command, which runs one test alone, then
replays what the whole-folder run drew. Under the nightly profile (random draws) the command
replays the failure from the example database it was saved to, from any directory."""

import os
import shlex
import subprocess
import sys

import pytest

pytestmark = pytest.mark.interpreter

DRAWING_TEST = '''
from hypothesis import given, settings, strategies as st

@settings(max_examples=300)
@given(st.floats(-4, 4), st.integers(-3, 3000))
def test_draws(x, n):
    print("DRAW", repr(x), n)
'''
IMPORTING_TEST = '''
import samplecheck.tools.nightly  # a module no other test file here imports

def test_nothing():
    pass
'''


def _draws(tmp_path, files: list[str]) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *files, "-q", "-s", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-p", "samplecheck.harness.plugin", "--sc-device=cpu", "--sc-profile=ci", "-k", "test_draws"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return [line for line in result.stdout.splitlines() if line.startswith("DRAW")]


@pytest.mark.cpu_subject
def test_draws_do_not_depend_on_what_else_is_collected(tmp_path):
    (tmp_path / "test_drawing.py").write_text(DRAWING_TEST)
    (tmp_path / "test_importing.py").write_text(IMPORTING_TEST)
    alone = _draws(tmp_path, ["test_drawing.py"])
    beside = _draws(tmp_path, ["test_drawing.py", "test_importing.py"])
    assert alone and alone == beside, "the same seeded test drew other values when another file was collected"


FAILING_TEST = '''
from hypothesis import given, strategies as st

@given(st.integers(0, 10**6))
def test_below_half(x):
    assert x < 500_000
'''


def _nightly(command: list[str], cwd, **env) -> subprocess.CompletedProcess:
    """Run with CI=true, as on a CI runner: Hypothesis then loads its own "ci" profile at
    import, which the nightly profile must not inherit (derandomized, it would not replay)."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("SAMPLECHECK_")}
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**environment, "CI": "true", **env})


@pytest.mark.cpu_subject
def test_nightly_failure_replays_from_its_database_anywhere(tmp_path):
    (tmp_path / "test_failing.py").write_text(FAILING_TEST)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    first = _nightly([sys.executable, "-m", "pytest", "test_failing.py", "-q", "-p", "no:cacheprovider", "-p",
                      "no:xdist", "-p", "samplecheck.harness.plugin", "--sc-device=cpu", "--sc-profile=nightly"], tmp_path,
                     SAMPLECHECK_EXAMPLE_DB=str(tmp_path / "db"), SAMPLECHECK_NIGHTLY_EXAMPLES="300")
    assert first.returncode == 1, first.stdout[-3000:]
    lines = first.stdout.splitlines()
    command = shlex.split(lines[next(i for i, line in enumerate(lines) if line.startswith("Reproduce with")) + 1])
    assert command[:2] == ["env", f"SAMPLECHECK_EXAMPLE_DB={tmp_path / 'db'}"], command
    # One random example (the simplest, x = 0) passes: only the saved example can fail the rerun.
    again = _nightly(command, elsewhere, SAMPLECHECK_NIGHTLY_EXAMPLES="1")
    assert again.returncode == 1 and "x=500000" in again.stdout, again.stdout[-3000:]
    without_database = _nightly(command[2:], elsewhere, SAMPLECHECK_NIGHTLY_EXAMPLES="1")
    assert without_database.returncode == 0, without_database.stdout[-3000:]
