"""Top-k masking (top-p off) with each row split over chunk programs, in two launches: the
path that `samplecheck.kernels.top_k_top_p.apply_top_k_top_p` takes for a batch with `k` and no
`p` too large for the chunk path (`samplecheck.kernels.top_k_chunks`) and within `k_split_plan`'s
limits, where one program per row reads the row at one SM's pace.

Contract, semantics and cut: those of `samplecheck.kernels.top_k_top_p` (its module docstring).
The cut of a row with 0 < k < V is its k-th largest key counted with multiplicity (NaN read as
-inf): the smallest key c with #(key > c) < k. It comes from exact counts, so every path masks
every row identically.

Launches, each over a [B, S] grid (S chunks of CHUNK columns a row); rows with top-k off
(k <= 0 or k >= V) do nothing in either:
1. `_lanes_kernel`: the chunk's min and max keys and its LANES lane maxima (lane j: the max over
   the chunk's columns c with (c - start) mod BLOCK in [j * BLOCK / LANES, (j + 1) * BLOCK /
   LANES); distinct entries, -inf for a lane with no column); program (row, 0) sets the row's
   counters to 0; program (0, 0) makes the call's value checks and records them in the guard
   flag.
2. `_select_kernel`, nothing when the guard flag is set: each program derives the row's bracket
   [lo, hi] from launch 1's output (`row_bracket`: hi the row's max key, lo a key with at least
   k of the row's S * LANES lane maxima at or above it, so at least k entries are and the cut is
   at or above lo; the row's min key where k > S * LANES), then writes -inf at its chunk's
   entries below lo and at NaN and copies those in [lo, hi], with their columns, to the row's
   scratch at positions reserved with an atomic add at the row's counter (`collect_chunk`).
   The row's last program to finish (a second counter) finds the cut: from the scratch when the
   bracket fits it (`rank_cut`), else by search steps over the whole row (`find_cut`, whose
   narrowed bracket is collected again, with its columns); it writes -inf at the listed entries
   below the cut by their columns, or over the whole row where the search closed on one key.

Buffer per call: one int64 allocation (`k_split_buffer_bytes`) carved into, in order: state
int64 [B, 2] (the collect counter, the finished programs' counter), the scratch fp32 [B, 2 *
CAP] (entries, then their columns' int32 bits), chunk keys int32 [B, S, 2] and lane maxima int32
[B, S, LANES]; LANES is even, so every part starts 16-byte aligned. None needs to start zeroed:
each launch reads only what earlier launches (or earlier programs, through the counters)
wrote, so a call needs no host synchronisation and captures in a CUDA graph.
"""

import torch
import triton
import triton.language as tl

from samplecheck.kernels.cut_keys import lane_extremes, merged_lanes, order_key
from samplecheck.kernels.cut_search import (collect_chunk, failed_value_checks, find_cut, kth_largest_bound, row_k_p,
                                            spread_pivots, write_cut)
from samplecheck.kernels.guard import record_failed
from samplecheck.kernels.launching import jit
from samplecheck.kernels.runtime import cdiv
from samplecheck.kernels.top_k_top_p_split import chunk_columns, row_keys

# Launch parameters by device. MIN_ROWS / MAX_ROWS: the batches that take this path (the chunk
# path takes smaller ones first); MIN_VOCAB: the smallest vocab; CHUNK: columns a chunk (whole
# BLOCKs); MAX_SPLITS: the most chunks a row splits into (a power of two: the bound's tile is
# [MAX_SPLITS * LANES]); LANES: lane maxima a chunk keeps (divides BLOCK); BOUND_STEPS and
# NUM_PIVOTS: the bound's search steps; CAP: scratch entries a row; ROW_BLOCK: columns a step
# of the last program's passes over a whole row; the others mean what they mean in
# `samplecheck.kernels.top_k_top_p.LAUNCH_CONFIG`. On the CPU, small chunks, lanes and CAP, so
# that the suite's small rows (at most 9 a drawn case) take every branch: several chunks, k
# past the lanes, brackets too large for the scratch. The result depends on none of these.
K_SPLIT_CONFIG = {
    "cuda": dict(MIN_ROWS=33, MAX_ROWS=128, MIN_VOCAB=8192, CHUNK=4096, MAX_SPLITS=64, LANES=32, BOUND_STEPS=3,
                 NUM_PIVOTS=16, CAP=1024, BLOCK=2048, ROW_BLOCK=2048, NUM_STAGES=3, TILE=256, RANK_ROWS=16,
                 RANK_COLS=256, num_warps=8),
    "cpu": dict(MIN_ROWS=5, MAX_ROWS=9, MIN_VOCAB=1, CHUNK=256, MAX_SPLITS=16, LANES=8, BOUND_STEPS=2,
                NUM_PIVOTS=16, CAP=32, BLOCK=128, ROW_BLOCK=1024, NUM_STAGES=1, TILE=1024, RANK_ROWS=8,
                RANK_COLS=32, num_warps=4),
}
# A row's state (int64 slots).
COUNTER = tl.constexpr(0)  # the bracket's entries seen so far (collect positions)
FINISHED = tl.constexpr(1)  # the row's select programs done collecting
STATE = tl.constexpr(2)


@jit(do_not_specialize=["k_ptr", "B", "S", "guard_ptr"])
def _lanes_kernel(logits_ptr, row_stride, k_ptr, keys_ptr, lanes_ptr, state_ptr, B, V, CHUNK, S, guard_ptr, check,
                  GUARDED: tl.constexpr, BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr, LANES: tl.constexpr):
    """Launch 1 (module docstring): the chunk's min and max keys and lane maxima; the row's
    counters at 0; the call's value checks."""
    row = tl.program_id(0).to(tl.int64)
    chunk = tl.program_id(1)
    if GUARDED:
        if check & (row == 0) & (chunk == 0):
            record_failed(guard_ptr, failed_value_checks(k_ptr, None, B, True, False))
    k = row_k_p(k_ptr, None, row, V, True, False)[0]
    if k < V:
        start, end = chunk_columns(CHUNK, V)
        lane_max, lane_min = lane_extremes(logits_ptr + row * row_stride, start, end, BLOCK, NUM_STAGES)
        out = keys_ptr + (row * S + chunk) * 2
        tl.store(out, order_key(tl.min(lane_min, axis=0)))
        tl.store(out + 1, order_key(tl.max(lane_max, axis=0)))
        tl.store(lanes_ptr + (row * S + chunk) * LANES + tl.arange(0, LANES), merged_lanes(lane_max, LANES, BLOCK))
        if chunk == 0:
            tl.store(state_ptr + row * STATE + COUNTER, 0)
            tl.store(state_ptr + row * STATE + FINISHED, 0)


@triton.jit
def row_bracket(k, keys_ptr, lanes_ptr, row, S, MAX_SPLITS: tl.constexpr, LANES: tl.constexpr,
                BOUND_STEPS: tl.constexpr, NUM_PIVOTS: tl.constexpr):
    """The cut's bracket [lo, hi] of a row with 0 < k < V (module docstring, launch 2), its min
    key and its max, from launch 1's output."""
    key_lo, key_hi, row_max = row_keys(keys_ptr, row, S, MAX_SPLITS)
    lo = key_lo
    if k <= S * LANES:
        slot = tl.arange(0, MAX_SPLITS * LANES)
        live = slot < S * LANES
        lanes = tl.load(lanes_ptr + row * S * LANES + slot, mask=live, other=0)
        # Slots past the row's lanes sit at its lowest lane key: at or below every pivot,
        # never counted above one.
        lanes_lo = tl.min(tl.where(live, lanes, key_hi), axis=0)
        lanes = tl.where(live, lanes, lanes_lo)
        lo = kth_largest_bound(lanes, k, lanes_lo, key_hi, BOUND_STEPS, NUM_PIVOTS)
    return lo, key_hi, key_lo, row_max


@jit(do_not_specialize=["k_ptr", "S", "guard_ptr"])
def _select_kernel(logits_ptr, row_stride, k_ptr, keys_ptr, lanes_ptr, state_ptr, scratch_ptr, V, CHUNK, S, guard_ptr,
                   GUARDED: tl.constexpr, BLOCK: tl.constexpr, ROW_BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr,
                   MAX_SPLITS: tl.constexpr, LANES: tl.constexpr, BOUND_STEPS: tl.constexpr, TILE: tl.constexpr,
                   NUM_PIVOTS: tl.constexpr, CAP: tl.constexpr, RANK_ROWS: tl.constexpr, RANK_COLS: tl.constexpr):
    """Launch 2 (module docstring): the chunk's entries below the bracket dropped and those in
    it collected; the row's last program finds the cut and writes -inf below it."""
    row = tl.program_id(0).to(tl.int64)
    k = row_k_p(k_ptr, None, row, V, True, False)[0]
    clear = True
    if GUARDED:
        clear = tl.load(guard_ptr) == 0
    if (k < V) & clear:
        lo, hi, key_lo, row_max = row_bracket(k, keys_ptr, lanes_ptr, row, S, MAX_SPLITS, LANES, BOUND_STEPS,
                                              NUM_PIVOTS)
        row_ptr = logits_ptr + row * row_stride
        state_ptr += row * STATE
        scratch_ptr += row * 2 * CAP
        start, end = chunk_columns(CHUNK, V)
        collect_chunk(row_ptr, start, end, lo, hi, state_ptr + COUNTER, scratch_ptr, CAP, BLOCK, NUM_STAGES, True)
        tl.debug_barrier()  # the program's scratch stores are done before its arrival is counted
        if (tl.atomic_add(state_ptr + FINISHED, 1) == S - 1) & (lo < hi):
            n = tl.load(state_ptr + COUNTER, cache_modifier=".cg").to(tl.int32)
            zero_count = tl.zeros([], dtype=tl.int32)
            zero_mass = tl.zeros([], dtype=tl.int64)
            cut, _, _, listed = find_cut(row_ptr, V, scratch_ptr, lo, hi, n, zero_count, zero_mass, row_max, k, 1.0,
                                         zero_mass, key_lo, spread_pivots(lo, hi, NUM_PIVOTS),
                                         tl.where(n <= CAP, n, -1), False, CAP, ROW_BLOCK, TILE, NUM_PIVOTS,
                                         RANK_ROWS, RANK_COLS, NUM_STAGES, True)
            write_cut(row_ptr, V, cut, scratch_ptr, listed, CAP, ROW_BLOCK, NUM_STAGES)


def k_split_plan(batch: int, vocab: int, device: str, has_k: bool, has_p: bool) -> int | None:
    """S, the chunks a row splits into, when a [batch, vocab] call (with k and p given or not)
    takes this path: k without p, MIN_ROWS <= batch <= MAX_ROWS, vocab >= MIN_VOCAB, at least
    two chunks and at most MAX_SPLITS; else None."""
    c = K_SPLIT_CONFIG[device]
    if not has_k or has_p or not c["MIN_ROWS"] <= batch <= c["MAX_ROWS"] or vocab < c["MIN_VOCAB"]:
        return None
    splits = cdiv(vocab, c["CHUNK"])
    return splits if 2 <= splits <= c["MAX_SPLITS"] else None


def _part_words(batch: int, splits: int, config: dict) -> tuple[int, int, int, int]:
    """The int64 words of the call's buffer parts (module docstring: state, scratch, keys, lanes)."""
    return batch * STATE.value, batch * config["CAP"], batch * splits, batch * splits * config["LANES"] // 2


def k_split_buffer_bytes(batch: int, splits: int, device: str) -> int:
    """Bytes the path allocates for a call: its one buffer (module docstring)."""
    return 8 * sum(_part_words(batch, splits, K_SPLIT_CONFIG[device]))


def launch_k_split(logits: torch.Tensor, k: torch.Tensor, splits: int, device: str, flag: torch.Tensor | None,
                   check: bool) -> None:
    """Mask `logits` in place over this path (validated arguments; `flag`/`check`: the guard as
    `apply_top_k_top_p` settled it)."""
    c = K_SPLIT_CONFIG[device]
    batch, vocab = logits.shape
    words = _part_words(batch, splits, c)
    state, scratch, keys, lanes = logits.new_empty(sum(words), dtype=torch.int64).split_with_sizes(words)
    scratch, keys, lanes = scratch.view(torch.float32), keys.view(torch.int32), lanes.view(torch.int32)
    grid, stride, warps, chunk = (batch, splits), logits.stride(0), c["num_warps"], c["CHUNK"]
    guarded = flag is not None
    _lanes_kernel[grid](logits, stride, k, keys, lanes, state, batch, vocab, chunk, splits, flag, check,
                        GUARDED=guarded, BLOCK=c["BLOCK"], NUM_STAGES=c["NUM_STAGES"], LANES=c["LANES"],
                        num_warps=warps)
    _select_kernel[grid](logits, stride, k, keys, lanes, state, scratch, vocab, chunk, splits, flag, GUARDED=guarded,
                         BLOCK=c["BLOCK"], ROW_BLOCK=c["ROW_BLOCK"], NUM_STAGES=c["NUM_STAGES"],
                         MAX_SPLITS=c["MAX_SPLITS"], LANES=c["LANES"], BOUND_STEPS=c["BOUND_STEPS"], TILE=c["TILE"],
                         NUM_PIVOTS=c["NUM_PIVOTS"], CAP=c["CAP"], RANK_ROWS=c["RANK_ROWS"],
                         RANK_COLS=c["RANK_COLS"], num_warps=warps)
