"""Top-k masking (top-p off) with each row split over chunk programs, in four launches: the
path that `samplecheck.kernels.top_k_top_p.apply_top_k_top_p` takes for a batch with `k` and no
`p` too large for the chunk path (`samplecheck.kernels.top_k_chunks`) and within `k_split_plan`'s
limits, where one program per row reads the row at one SM's pace.

Contract, semantics and cut: those of `samplecheck.kernels.top_k_top_p` (its module docstring).
The cut of a row with 0 < k < V is its k-th largest key counted with multiplicity (NaN read as
-inf): the smallest key c with #(key > c) < k. It comes from exact counts, so every path masks
every row identically.

Launches, each over a [B, S] grid (S chunks of CHUNK columns a row) unless stated; rows with
top-k off (k <= 0 or k >= V) do nothing in any of them, and launches 3 and 4 write nothing
when the guard flag is set:
1. `_lanes_kernel`: the chunk's min and max keys and its LANES lane maxima (lane j: the max over
   the chunk's columns c with (c - start) mod BLOCK in [j * BLOCK / LANES, (j + 1) * BLOCK /
   LANES); distinct entries, -inf for a lane with no column); program (0, 0) makes the call's
   value checks and records them in the guard flag.
2. `_bound_kernel` (grid [B]): the cut's bracket [lo, hi]: hi is the row's max key; lo is a key
   with at least k of the row's S * LANES lane maxima at or above it (`lanes_bound`), so
   at least k entries are, and the cut is at or above lo; else (k > S * LANES, or fewer than k
   lane maxima above -inf) the row's smallest key above -inf (module docstring of
   `samplecheck.kernels.top_k_top_p`: a bracket never reaches down to -inf).
   It sets the row's counter to 0.
3. `_collect_kernel`: the chunk's entries with key in [lo, hi] to the row's scratch with their
   columns, at positions reserved with an atomic add at the row's counter (`collect_chunk`
   with its drop); the counter ends at the bracket's population. -inf at the chunk's entries
   below lo and at NaN: the cut is at or above lo.
4. `_finish_kernel` (grid [B]): the cut of a row with lo < hi: from a scratch that holds the
   whole bracket (at most CAP entries), a digit at a time (`find_cut`); a larger bracket (many
   entries equal to the k-th, or k past the lanes) by search steps over the whole row first,
   as the one-program kernel does. Then -inf at the bracket's entries below the cut, by their
   columns (`write_cut`; after a whole-row search whose bracket still overflows, one pass over
   the row).

Buffer per call: one int64 allocation (`k_split_buffer_bytes`) carved into, in order: state
int64 [B, 4] (lo, hi, counter), the scratch fp32 [B, 2 * CAP] (entries, then their columns'
int32 bits), chunk keys int32 [B, S, 2] and
lane maxima int32 [B, S, LANES]; CAP and LANES are even, so every part starts 16-byte aligned.
None needs to start zeroed: each launch reads only what earlier launches wrote, so a call needs
no host synchronisation and captures in a CUDA graph.
"""

import torch
import triton
import triton.language as tl

from samplecheck.kernels.cut_keys import lane_extremes, merged_lanes, neg_inf_key, order_key
from samplecheck.kernels.cut_search import collect_chunk, find_cut, lanes_bound, spread_pivots, write_cut
from samplecheck.kernels.guard import flag_clear, record_failed
from samplecheck.kernels.launching import jit
from samplecheck.kernels.row_params import failed_value_checks, row_k_p
from samplecheck.kernels.runtime import cdiv
from samplecheck.kernels.top_k_top_p_split import chunk_columns, row_keys

# Launch parameters by device. MIN_ROWS / MAX_ROWS: the batches that take this path (the chunk
# path takes smaller ones first); MIN_VOCAB: the smallest vocab; CHUNK: columns a chunk (whole
# BLOCKs); MAX_SPLITS: the most chunks a row splits into (a power of two: the bound's tile is
# [MAX_SPLITS * LANES]); LANES: lane maxima a chunk keeps (divides BLOCK); BOUND_STEPS and
# NUM_PIVOTS: the bound's search steps; CAP: scratch entries a row; ROW_BLOCK: columns a step
# of the last launch (its writes from the scratch, and its fallback's passes over a whole row);
# the others mean what they mean in `samplecheck.kernels.top_k_top_p.LAUNCH_CONFIG`. On the
# CPU, small chunks, lanes and CAP, so that the suite's small rows (at most 9 a drawn case) take
# every branch: several chunks, k past the lanes, brackets larger than the scratch. The result
# depends on none of these.
K_SPLIT_CONFIG = {
    "cuda": dict(MIN_ROWS=33, MAX_ROWS=128, MIN_VOCAB=8192, CHUNK=8192, MAX_SPLITS=64, LANES=32, BOUND_STEPS=3,
                 NUM_PIVOTS=16, CAP=1024, BLOCK=2048, ROW_BLOCK=2048, NUM_STAGES=3, TILE=256, num_warps=8),
    "cpu": dict(MIN_ROWS=5, MAX_ROWS=9, MIN_VOCAB=1, CHUNK=256, MAX_SPLITS=16, LANES=8, BOUND_STEPS=2,
                NUM_PIVOTS=16, CAP=32, BLOCK=128, ROW_BLOCK=1024, NUM_STAGES=1, TILE=1024, num_warps=4),
}
# A row's state (int64 slots; the fourth is unused: it keeps the buffer's later parts 16-byte aligned).
LO = tl.constexpr(0)
HI = tl.constexpr(1)
COUNTER = tl.constexpr(2)
STATE = tl.constexpr(4)


@jit(do_not_specialize=["k_ptr", "B", "S", "guard_ptr"])
def _lanes_kernel(logits_ptr, row_stride, k_ptr, keys_ptr, lanes_ptr, B, V, CHUNK, S, guard_ptr, check,
                  GUARDED: tl.constexpr, BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr, LANES: tl.constexpr):
    """Launch 1 (module docstring): the chunk's min and max keys and lane maxima; the call's
    value checks."""
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


@jit(do_not_specialize=["k_ptr", "S"])
def _bound_kernel(k_ptr, keys_ptr, lanes_ptr, state_ptr, V, S, MAX_SPLITS: tl.constexpr, LANES: tl.constexpr,
                  BOUND_STEPS: tl.constexpr, NUM_PIVOTS: tl.constexpr):
    """Launch 2 (grid [B]): the row's bracket; its counter at 0."""
    row = tl.program_id(0).to(tl.int64)
    k = row_k_p(k_ptr, None, row, V, True, False)[0]
    if k < V:
        key_lo, key_hi, _ = row_keys(keys_ptr, row, S, MAX_SPLITS)
        lo = key_lo
        if k <= S * LANES:
            slot = tl.arange(0, MAX_SPLITS * LANES)
            live = slot < S * LANES
            # Slots past the row's lanes read as lanes without an entry.
            lanes = tl.load(lanes_ptr + row * S * LANES + slot, mask=live, other=neg_inf_key())
            lo = lanes_bound(lanes, k, key_lo, key_hi, BOUND_STEPS, NUM_PIVOTS)
        state_ptr += row * STATE
        tl.store(state_ptr + LO, lo.to(tl.int64))
        tl.store(state_ptr + HI, key_hi.to(tl.int64))
        tl.store(state_ptr + COUNTER, 0)


@triton.jit
def _row_bracket(state_ptr, row):
    """The row's state and the bracket [lo, hi] that `_bound_kernel` stored there."""
    state_ptr += row * STATE
    return state_ptr, tl.load(state_ptr + LO).to(tl.int32), tl.load(state_ptr + HI).to(tl.int32)


@jit(do_not_specialize=["k_ptr", "S", "guard_ptr"])
def _collect_kernel(logits_ptr, row_stride, k_ptr, state_ptr, scratch_ptr, V, CHUNK, S, guard_ptr,
                    GUARDED: tl.constexpr, CAP: tl.constexpr, BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """Launch 3: the chunk's entries in the row's bracket to its scratch, with their columns;
    -inf below the bracket and at NaN. Nothing when the guard flag is set."""
    row = tl.program_id(0).to(tl.int64)
    k = row_k_p(k_ptr, None, row, V, True, False)[0]
    if (k < V) & flag_clear(guard_ptr, GUARDED):
        state_ptr, lo, hi = _row_bracket(state_ptr, row)
        start, end = chunk_columns(CHUNK, V)
        collect_chunk(logits_ptr + row * row_stride, start, end, lo, hi, state_ptr + COUNTER,
                      scratch_ptr + row * 2 * CAP, CAP, BLOCK, NUM_STAGES, True)


@jit(do_not_specialize=["k_ptr", "S", "guard_ptr"])
def _finish_kernel(logits_ptr, row_stride, k_ptr, keys_ptr, state_ptr, scratch_ptr, V, S, guard_ptr,
                   GUARDED: tl.constexpr, BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr, MAX_SPLITS: tl.constexpr,
                   TILE: tl.constexpr, NUM_PIVOTS: tl.constexpr, CAP: tl.constexpr):
    """Launch 4 (grid [B]): the row's cut, from the scratch (a digit at a time) or, when the
    bracket overflowed it, by a search over the whole row; then -inf at the bracket's entries
    below the cut."""
    row = tl.program_id(0).to(tl.int64)
    k = row_k_p(k_ptr, None, row, V, True, False)[0]
    if (k < V) & flag_clear(guard_ptr, GUARDED):
        state_ptr, lo, hi = _row_bracket(state_ptr, row)
        if lo < hi:
            row_ptr = logits_ptr + row * row_stride
            scratch_ptr += row * 2 * CAP
            key_lo, _, row_max = row_keys(keys_ptr, row, S, MAX_SPLITS)
            zero_count = tl.zeros([], dtype=tl.int32)
            zero_mass = tl.zeros([], dtype=tl.int64)
            n = tl.load(state_ptr + COUNTER).to(tl.int32)
            cut, _, _, listed = find_cut(row_ptr, V, scratch_ptr, lo, hi, n, zero_count, zero_mass, row_max, k, 1.0,
                                         zero_mass, key_lo, spread_pivots(lo, hi, NUM_PIVOTS), False, CAP, BLOCK,
                                         TILE, NUM_PIVOTS, 0, 0, NUM_STAGES, True)
            write_cut(row_ptr, V, cut, scratch_ptr, listed, CAP, BLOCK, NUM_STAGES)


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
    _lanes_kernel[grid](logits, stride, k, keys, lanes, batch, vocab, chunk, splits, flag, check, GUARDED=guarded,
                        BLOCK=c["BLOCK"], NUM_STAGES=c["NUM_STAGES"], LANES=c["LANES"], num_warps=warps)
    _bound_kernel[(batch,)](k, keys, lanes, state, vocab, splits, MAX_SPLITS=c["MAX_SPLITS"], LANES=c["LANES"],
                            BOUND_STEPS=c["BOUND_STEPS"], NUM_PIVOTS=c["NUM_PIVOTS"], num_warps=warps)
    _collect_kernel[grid](logits, stride, k, state, scratch, vocab, chunk, splits, flag, GUARDED=guarded,
                          CAP=c["CAP"], BLOCK=c["BLOCK"], NUM_STAGES=c["NUM_STAGES"], num_warps=warps)
    _finish_kernel[(batch,)](logits, stride, k, keys, state, scratch, vocab, splits, flag, GUARDED=guarded,
                             BLOCK=c["ROW_BLOCK"], NUM_STAGES=c["NUM_STAGES"], MAX_SPLITS=c["MAX_SPLITS"],
                             TILE=c["TILE"], NUM_PIVOTS=c["NUM_PIVOTS"], CAP=c["CAP"], num_warps=warps)
