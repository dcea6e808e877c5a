"""The suite finds these bugs: every mutant in samplecheck.mutants fails the generic properties.

The mutants are hunted as `samplecheck killtable` hunts them (samplecheck.tools.killtable):
their known killers' files over all of them in one pytest run, under the current device and
Hypothesis profile, each mutant stopping at its first kill; then each survivor, and each
mutant whose patch can fault memory, alone over the whole fast suite. A surviving mutant means
a property is missing: add the property, never delete the mutant.
"""

import pytest

from samplecheck.harness.suite_files import suite_path
from samplecheck.mutants import MUTANTS
from samplecheck.registry import catalog
from samplecheck.tools import killtable


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_patch_applies_once(name):
    assert MUTANTS[name].patched_source() != ""


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_known_killer_is_a_property_module(name):
    killer = MUTANTS[name].killed_by
    assert killer in catalog.NAMES and (suite_path() / f"{killer}.py").is_file(), killer


def test_every_mutant_is_killed_by_a_test_of_its_own(device, pytestconfig):
    """Every mutant that changes behaviour on this device, hunted as the kill table hunts them
    (one shared pytest run, then each survivor and each memory-faulting mutant alone), is
    killed, each by a test of its own backend."""
    profile = pytestconfig.getoption("--sc-profile", default=None) or "dev"
    names = [name for name in sorted(MUTANTS) if device.type in MUTANTS[name].devices]
    hunts = killtable.hunt_all(names, device.type, profile, workers=1)
    survivors = [h for h in hunts if not h.killed]
    assert not survivors, "\n\n".join(f"mutant {h.name} ({MUTANTS[h.name].description}) survived the suite:\n"
                                         f"{h.output}" for h in survivors)
    strays = {h.name: h.killer for h in hunts if f"mutant-{h.name}-" not in h.killer}
    assert not strays, f"killed by another backend's test: {strays}"


def test_a_memory_faulting_mutant_is_hunted_alone(device, monkeypatch):
    """A mutant whose patch can fault memory never joins the shared run (a poisoned CUDA
    context would fail the other mutants' tests)."""
    faulting = next(n for n in sorted(MUTANTS) if MUTANTS[n].faults_memory and device.type in MUTANTS[n].devices)
    shared_runs = []
    monkeypatch.setattr(killtable, "hunt_shared", lambda chosen, *rest: shared_runs.append(chosen) or {})
    hunts = killtable.hunt_all([faulting], device.type, "ci", workers=2)
    assert shared_runs == [] and hunts[0].killed and f"mutant-{faulting}-" in hunts[0].killer
