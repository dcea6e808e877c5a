"""The suite finds these bugs: every mutant in samplecheck.kernels.mutants fails the generic properties.

Each mutant runs the fast suite (tests/cover) alone, in a subprocess, under the current
device and Hypothesis profile, stopping at the first failure (`samplecheck.tools.killtable.hunt`,
which `python -m samplecheck.tools.killtable` also uses for the kill table). A surviving mutant
means a property is missing: add the property, never delete the mutant.
"""

import pytest

from samplecheck.harness import catalog
from samplecheck.kernels.mutants import MUTANTS
from samplecheck.tools import killtable
from samplecheck.tools.killtable import hunt, hunt_shared
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


def test_a_shared_run_kills_each_mutant_by_its_own_test(device, monkeypatch):
    """The kill table's shared round: mutants of three kernels hunted in one pytest run, each
    killed by a test of its own backend (none by another mutant's failure); a mutant whose
    patch can fault memory is hunted in a process of its own, never in the shared run."""
    names = ["temperature_greedy_rows_divided", "gumbel_empty_batch_planned", "penalties_row0_parameter"]
    found = hunt_shared(names, device.type, "ci", workers=2)
    assert sorted(found) == sorted(names), {n: h.output for n, h in found.items()}
    for name, result in found.items():
        assert f"mutant-{name}-" in result.killer, (name, result.killer)
    faulting = next(n for n in sorted(MUTANTS) if MUTANTS[n].faults_memory and device.type in MUTANTS[n].devices)
    shared_runs = []
    monkeypatch.setattr(killtable, "hunt_shared", lambda chosen, *rest: shared_runs.append(chosen) or {})
    hunts = killtable.hunt_all([faulting], device.type, "ci", workers=2)
    assert shared_runs == [] and hunts[0].killed and f"mutant-{faulting}-" in hunts[0].killer
