"""The suite finds these bugs: every mutant in samplecheck.kernels.mutants fails the generic properties.

Each mutant runs the fast suite (tests/cover) alone, in a subprocess, under the current
device and Hypothesis profile, stopping at the first failure (`samplecheck.tools.killtable.hunt`,
which `python -m samplecheck.tools.killtable` also uses for the kill table). A surviving mutant
means a property is missing: add the property, never delete the mutant.
"""

import pytest

from samplecheck.harness import catalog
from samplecheck.kernels.mutants import MUTANTS
from samplecheck.tools.killtable import hunt
from samplecheck.tools.suite import suite_path


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_patch_applies_once(name):
    assert MUTANTS[name].patched_source() != ""


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_known_killer_is_a_property_module(name):
    killer = MUTANTS[name].killed_by
    assert killer in catalog.NAMES and (suite_path() / f"{killer}.py").is_file(), killer


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_is_killed(name, pytestconfig, device):
    if device.type not in MUTANTS[name].devices:
        pytest.skip(f"mutant {name} changes behaviour only on {', '.join(MUTANTS[name].devices)}")
    profile = pytestconfig.getoption("--sc-profile", default=None) or "dev"
    result = hunt(name, device.type, profile)
    assert result.killed, f"mutant {name} ({MUTANTS[name].description}) survived the suite:\n{result.output}"
    print(f"{name} killed by {result.killer} in {result.seconds:.0f} s")
