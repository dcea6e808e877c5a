"""A poisoned device context fails its own test only (samplecheck.harness.isolation).

A CUDA fault cannot be produced on CPU, so a stand-in plays it: the conftest of a small
test directory replaces the plugin's device probe with one that raises once a test has
"poisoned" the process, and an autouse fixture fails every later test of that process, as
the fallout of a real fault does. Under xdist the faulting test must be the only failure,
reported with the fault, and every other test must pass on a fresh worker; without xdist
the run stops at the fault; without the plugin the fallout shows. A test marked xfail that
faults is reported as the expected failure it is.
"""

import subprocess
import sys
import textwrap

import pytest

CONFTEST = '''
import pytest
from samplecheck.harness import isolation

POISONED = []

def stand_in_probe():
    if POISONED:
        raise RuntimeError("CUDA error: an illegal memory access was encountered (stand-in)")

isolation.cuda_probe = lambda config: stand_in_probe

@pytest.fixture(autouse=True)
def fallout():
    assert not POISONED, "CUDA error: an illegal memory access was encountered (fallout of an earlier test)"

@pytest.fixture
def poison():
    POISONED.append(True)
'''
TESTS = '''
def test_before(): pass
def test_faulting_kernel(poison): pass
def test_after_1(): pass
def test_after_2(): pass
def test_after_3(): pass
'''
PINNED_FAULT = '''
import pytest

def test_before(): pass

@pytest.mark.xfail(strict=True, reason="pinned finding: faults")
def test_pinned_faulting_kernel(poison):
    raise RuntimeError("CUDA error: an illegal memory access was encountered (stand-in)")

def test_after_1(): pass
def test_after_2(): pass
'''


def run(tmp_path, *options, tests: str = TESTS) -> str:
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (tmp_path / "test_stand_in.py").write_text(textwrap.dedent(tests))
    command = [sys.executable, "-m", "pytest", str(tmp_path), "--rootdir", str(tmp_path), "-p", "no:cacheprovider",
               "-p", "samplecheck.harness.plugin", "--sc-device=cpu", "-rA", *options]
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    return result.stdout + result.stderr


@pytest.fixture(scope="module", autouse=True)
def xdist():
    pytest.importorskip("xdist")


@pytest.mark.parametrize("dist", ["load", "worksteal"])  # worksteal: `samplecheck test`'s scheduling
def test_fault_fails_its_own_test_and_the_worker_is_replaced(tmp_path, dist):
    out = run(tmp_path, "-n", "1", "--dist", dist)
    assert "1 failed, 4 passed" in out, out
    assert "FAILED test_stand_in.py::test_faulting_kernel" in out, out
    assert "kernel fault: this test left the CUDA context poisoned" in out, out


def test_without_isolation_the_fallout_shows(tmp_path):
    out = run(tmp_path, "-n", "1", "-p", "no:samplecheck-isolation")
    assert "2 passed, 3 errors" in out, out


def test_without_xdist_the_run_stops_at_the_fault(tmp_path):
    out = run(tmp_path)
    assert "1 failed, 1 passed" in out, out
    assert "the session stops here" in out, out


def test_a_fault_in_an_xfail_test_is_its_expected_failure(tmp_path):
    out = run(tmp_path, "-n", "1", tests=PINNED_FAULT)
    assert "3 passed, 1 xfailed" in out, out
    assert "pinned finding: faults (kernel fault: this test left the CUDA context poisoned" in out, out
