"""The suite finds these bugs: every mutant in kernels.mutants fails the generic properties.

Each mutant runs the fast suite (tests/cover) alone, in a subprocess, under the current
device and Hypothesis profile, stopping at the first failure. A surviving mutant means a
property is missing: add the property, never delete the mutant.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from kernels.mutants import MUTANTS

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_patch_applies_once(name):
    assert MUTANTS[name].patched_source() != ""


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_is_killed(name, pytestconfig, device):
    if device.type not in MUTANTS[name].devices:
        pytest.skip(f"mutant {name} changes behaviour only on {', '.join(MUTANTS[name].devices)}")
    profile = pytestconfig.getoption("--hypothesis-profile", default=None) or "dev"
    command = [sys.executable, "-m", "pytest", "tests/cover", f"--mutant={name}", f"--device={device.type}",
               f"--hypothesis-profile={profile}", "-x", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    failed = [line for line in result.stdout.splitlines() if line.startswith("FAILED")]
    assert result.returncode == 1 and failed, (
        f"mutant {name} ({MUTANTS[name].description}) survived the suite "
        f"(exit {result.returncode}):\n{result.stdout[-3000:]}\n{result.stderr[-2000:]}")
    print(f"{name} killed by {failed[0]}")
