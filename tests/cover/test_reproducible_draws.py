"""A seeded run draws the same cases whatever else it collects (samplecheck.harness.seeds:
Hypothesis also draws constants from the samplecheck modules loaded in the process, so the
plugin loads them all first). A failure's reproduce command, which runs one test alone, then
replays what the whole-folder run drew."""

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
         "--device=cpu", "--hypothesis-profile=ci", "-k", "test_draws"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return [line for line in result.stdout.splitlines() if line.startswith("DRAW")]


def test_draws_do_not_depend_on_what_else_is_collected(tmp_path):
    (tmp_path / "test_drawing.py").write_text(DRAWING_TEST)
    (tmp_path / "test_importing.py").write_text(IMPORTING_TEST)
    alone = _draws(tmp_path, ["test_drawing.py"])
    beside = _draws(tmp_path, ["test_drawing.py", "test_importing.py"])
    assert alone and alone == beside, "the same seeded test drew other values when another file was collected"
