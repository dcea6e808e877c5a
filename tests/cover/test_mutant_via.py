"""A mutant of a module reached through another module's entry point (`Mutant.via`: the split
top-p path, called by `apply_top_k_top_p`): its backend calls the entry point of a fresh copy
of `via` whose imports bind the patched module, and the real modules stay as they were."""

import sys

import pytest

import samplecheck.kernels.top_k_top_p as op
import samplecheck.kernels.top_k_top_p_split as split
from samplecheck.mutants import MUTANTS, load

pytestmark = pytest.mark.interpreter
NAME = "top_p_split_written_before_last_rank"


def test_via_binds_the_patched_module_and_leaves_the_real_ones():
    mutant = MUTANTS[NAME]
    assert (mutant.module, mutant.entry_module) == (split.__name__, op.__name__)
    entry = load(NAME)
    assert entry is not op.apply_top_k_top_p
    patched = entry.__globals__["launch_split"]
    assert patched is not split.launch_split and patched.__module__ == f"samplecheck_mutant_{NAME}"
    assert sys.modules[split.__name__] is split and op.launch_split is split.launch_split


def test_via_chains_through_each_module_in_turn():
    """A helper module's mutant reached through the path that imports it, then the op: each
    module of the chain is a fresh copy bound to the one before."""
    import samplecheck.kernels.chunk_codes as codes
    import samplecheck.kernels.top_k_chunks as chunks

    name = "top_k_chunks_radix_count_dropped"
    assert MUTANTS[name].entry_module == op.__name__
    entry = load(name)
    launch = entry.__globals__["launch_chunks"]
    assert launch is not chunks.launch_chunks
    kth = launch.__globals__["kth_largest_key"]
    assert kth is not codes.kth_largest_key and kth.fn.__module__ == f"samplecheck_mutant_{name}"
    assert sys.modules[codes.__name__] is codes and chunks.kth_largest_key is codes.kth_largest_key
