"""A mutant of a module reached through another module's entry point (`Mutant.via`: the split
top-p path, called by `apply_top_k_top_p`): its backend calls the entry point of a fresh copy
of `via` whose imports bind the patched module, and the real modules stay as they were."""

import sys

import pytest

import samplecheck.kernels.top_k_top_p as op
import samplecheck.kernels.top_k_top_p_split as split
from samplecheck.mutants import MUTANTS, load

pytestmark = pytest.mark.interpreter
NAME = "top_p_split_candidates_overwrite"


def test_via_binds_the_patched_module_and_leaves_the_real_ones():
    mutant = MUTANTS[NAME]
    assert (mutant.module, mutant.entry_module) == (split.__name__, op.__name__)
    entry = load(NAME)
    assert entry is not op.apply_top_k_top_p
    patched = entry.__globals__["launch_split"]
    assert patched is not split.launch_split and patched.__module__ == f"samplecheck_mutant_{NAME}"
    assert sys.modules[split.__name__] is split and op.launch_split is split.launch_split
