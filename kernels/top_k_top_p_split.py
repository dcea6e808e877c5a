"""Top-p masking (top-k off) with each row split over several programs: the path that
`samplecheck.kernels.top_k_top_p.apply_top_k_top_p` takes for a small batch with `p` and no `k`,
where one program per row would leave most of the GPU idle through the row's search passes.

Contract, semantics and cut: those of `samplecheck.kernels.top_k_top_p` (its module docstring;
the search helpers are `samplecheck.kernels.cut_search`). The cut is the smallest key at which
the predicate holds, from exact integer counts and masses, so both paths mask every row
identically: the split changes which programs do the work, never the result.

Launches, each over a [B, S] grid (S chunks of CHUNK columns a row) unless stated; rows with
p = 1 do nothing in any of them:
1. `_stats_kernel`: each chunk's min and max keys; program (0, 0) makes the call's value
   checks and records them in the guard flag.
2. `_tally_kernel` (STEP 1): the search's first step (`top_p_first_step`; the same pivots in
   every program, its lo among them) over each chunk: the count and mass above each pivot and
   the row's mass in the chunk, written per chunk.
3. `_tally_kernel` (STEP 2): every program sums those tallies into the bracket after the
   first step; where it holds more than CAP entries (the sample placed the pivots a little
   off), the search's second step over each chunk: the count and mass above NUM_PIVOTS keys
   spread evenly over the bracket, written per chunk.
4. `_collect_kernel`: every program sums the tallies into the bracket after the first step,
   and after the second where it ran, and, when it holds at most CAP entries, copies its
   chunk's entries in it to the row's scratch, at positions reserved with an atomic counter
   (the scratch's order varies from run to run; the ranking does not depend on it).
5. `_rank_kernel` (grid [B, R]): R programs rank RANK_ROWS candidates at a time against all
   of them; the cut is the smallest holding key (an atomic min). When the bracket still holds
   more than CAP entries (many equal keys, or pivots far off), program (row, 0)
   finishes that row's search alone, as the one-program kernel does (`find_cut`). Each
   program then counts itself in at the row's counter (an atomic add, acquire-release, after
   a barrier); the last to count in writes -inf below the cut (and at NaN) over the whole
   row, nothing else, and nothing when the guard flag is set.

Buffers per call: one int64 allocation (`split_buffer_bytes`) split into four parts, in
order: state int64 [B, PIVOTS + NUM_PIVOTS], the scratch fp32 [B, CAP], the two steps'
tallies int64 [2, B, S, 2 * NUM_PIVOTS + 1] and chunk keys int32 [B, S, 2]; each but the last
is padded to a multiple of 16 bytes, so every part starts 16-byte aligned, as Triton's pointer
specialization (and so its vector accesses) needs. None needs to start zeroed: every launch
reads only what earlier launches wrote, so a call needs no host synchronisation and captures
in a CUDA graph.
"""

import torch
import triton
import triton.language as tl

from samplecheck.kernels.cut_keys import (INT32_MAX_JIT, INT32_MIN_JIT, key_value, lane_extremes, order_key,
                                          write_below_cut)
from samplecheck.kernels.cut_search import (collect_chunk, find_cut, narrow_step, rank_cut, spread_pivots, tally_above,
                                            top_p_first_step)
from samplecheck.kernels.guard import flag_clear, record_failed
from samplecheck.kernels.launching import jit
from samplecheck.kernels.row_params import failed_value_checks
from samplecheck.kernels.runtime import cdiv

# Launch parameters by device. PROGRAMS: the programs a launch aims at (B * S); MAX_ROWS: the
# largest batch that splits; MIN_VOCAB: the smallest vocab that splits; MAX_SPLITS: the most
# chunks a row splits into; MIN_CHUNK: the fewest columns a chunk holds (chunks are whole
# BLOCKs); ROW_BLOCK: columns per step of the fallback's passes over a whole row. The others
# mean what they mean in `samplecheck.kernels.top_k_top_p.LAUNCH_CONFIG`; CAP is larger here,
# since the ranking is spread over R programs a row. On an H200 (session 27,
# docs/benchmarks.md) the split beat one program a row at B <= 32 with V = 151936, and lost at
# V = 32000. On the CPU, small chunks and CAP, so that the suite's small rows take every branch
# (several chunks, brackets too large to collect: the fallback), few RANK_ROWS, so that a few
# dozen candidates spread over every rank program of a row, and few programs and wide tiles
# otherwise, since the interpreter pays per program and per operation.
SPLIT_CONFIG = {
    "cuda": dict(PROGRAMS=264, MAX_ROWS=32, MIN_VOCAB=65536, MAX_SPLITS=256, MIN_CHUNK=2048, BLOCK=2048,
                 ROW_BLOCK=2048, NUM_STAGES=3, TILE=512, NUM_PIVOTS=16, CAP=4096, RANK_ROWS=16, RANK_COLS=256,
                 SAMPLE=1024, num_warps=8),
    "cpu": dict(PROGRAMS=4, MAX_ROWS=2, MIN_VOCAB=0, MAX_SPLITS=4, MIN_CHUNK=128, BLOCK=128, ROW_BLOCK=4096,
                NUM_STAGES=1, TILE=1024, NUM_PIVOTS=16, CAP=64, RANK_ROWS=4, RANK_COLS=64, SAMPLE=32),
}
# A row's state (int64 slots): the bracket the collect launch settles on (after the first
# step, or the second), its population, the count and mass above hi, the row's mass, the collect
# counter, the cut, the rank programs' counter, the first step's lo, then NUM_PIVOTS slots from
# PIVOTS for the first step's pivots (the first step's lo and pivots are never overwritten, so
# every program of a later launch reads the same first step).
LO = tl.constexpr(0)
HI = tl.constexpr(1)
POP = tl.constexpr(2)
COUNT_HI = tl.constexpr(3)
MASS_HI = tl.constexpr(4)
TOTAL = tl.constexpr(5)
COUNTER = tl.constexpr(6)
CUT = tl.constexpr(7)
RANKED = tl.constexpr(8)
FIRST_LO = tl.constexpr(9)
PIVOTS = tl.constexpr(10)


@triton.jit
def row_keys(keys_ptr, row, S, MAX_SPLITS: tl.constexpr):
    """The keys of the row's smallest entry above -inf (its max's for a row of -inf and NaN
    only) and of its max, and its max (0.0 for a row of -inf), from its chunks' keys
    (`lane_extremes`)."""
    s = tl.arange(0, MAX_SPLITS)
    chunk_ptr = keys_ptr + (row * S + s) * 2
    key_hi = tl.max(tl.load(chunk_ptr + 1, mask=s < S, other=INT32_MIN_JIT), axis=0)
    key_lo = tl.minimum(tl.min(tl.load(chunk_ptr, mask=s < S, other=INT32_MAX_JIT), axis=0), key_hi)
    row_max = key_value(key_hi)
    return key_lo, key_hi, tl.where(row_max == float("-inf"), 0.0, row_max)


@triton.jit
def _row_p(p_ptr, row):
    """The row's p as fp32 (p >= 1: top-p off, the row is left alone)."""
    return tl.load(p_ptr + row).to(tl.float32)


@triton.jit
def chunk_columns(CHUNK, V):
    """The columns [start, end) of this program's chunk (program id 1)."""
    start = tl.program_id(1) * CHUNK
    return start, tl.minimum(start + CHUNK, V)


@jit(do_not_specialize=["p_ptr", "B", "S", "guard_ptr"])
def _stats_kernel(logits_ptr, row_stride, p_ptr, keys_ptr, B, V, CHUNK, S, guard_ptr, check, GUARDED: tl.constexpr,
                  BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """Launch 1 (module docstring): the chunk's min and max keys; the call's value checks."""
    row = tl.program_id(0).to(tl.int64)
    chunk = tl.program_id(1)
    if GUARDED:
        if check & (row == 0) & (chunk == 0):
            record_failed(guard_ptr, failed_value_checks(None, p_ptr, B, False, True))
    if _row_p(p_ptr, row) < 1.0:
        start, end = chunk_columns(CHUNK, V)
        lane_max, lane_min = lane_extremes(logits_ptr + row * row_stride, start, end, BLOCK, NUM_STAGES)
        out = keys_ptr + (row * S + chunk) * 2
        tl.store(out, order_key(tl.min(lane_min, axis=0)))
        tl.store(out + 1, order_key(tl.max(lane_max, axis=0)))


@triton.jit
def _chunk_tallies(tally_ptr, step, row, chunk, S, NUM_PIVOTS: tl.constexpr):
    """Where search step `step` (1 or 2) keeps its tallies of (row, chunk): the buffer's
    [2, B, S, 2 * NUM_PIVOTS + 1] layout (module docstring), B the grid's rows."""
    return tally_ptr + (((step - 1) * tl.num_programs(0) + row) * S + chunk) * (2 * NUM_PIVOTS + 1)


@triton.jit
def _summed_tallies(tally_ptr, step, row, S, NUM_PIVOTS: tl.constexpr, MAX_SPLITS: tl.constexpr):
    """Search step `step`'s count and mass above each pivot, and the row's mass, over the whole row."""
    s = tl.arange(0, MAX_SPLITS)
    chunk_ptr = _chunk_tallies(tally_ptr, step, row, s, S, NUM_PIVOTS)
    slot = tl.arange(0, NUM_PIVOTS)[None, :]
    live = (s < S)[:, None]
    count = tl.sum(tl.load(chunk_ptr[:, None] + slot, mask=live, other=0), axis=0)
    mass = tl.sum(tl.load(chunk_ptr[:, None] + NUM_PIVOTS + slot, mask=live, other=0), axis=0)
    total = tl.sum(tl.load(chunk_ptr + 2 * NUM_PIVOTS, mask=s < S, other=0), axis=0)
    return count.to(tl.int32), mass, total


@triton.jit
def _first_bracket(state_ptr, tally_ptr, row, S, key_hi, V, p, NUM_PIVOTS: tl.constexpr,
                   MAX_SPLITS: tl.constexpr):
    """The bracket after the first search step, from the summed step tallies: lo, hi, its
    population, the count and mass above hi, and the row's mass (a row with a finite max)."""
    pivots = tl.load(state_ptr + PIVOTS + tl.arange(0, NUM_PIVOTS)).to(tl.int32)
    first_lo = tl.load(state_ptr + FIRST_LO).to(tl.int32)
    count, mass, total = _summed_tallies(tally_ptr, 1, row, S, NUM_PIVOTS, MAX_SPLITS)
    lo, hi, pop, count_hi, mass_hi = narrow_step(pivots, count, mass, first_lo, key_hi, tl.zeros([], dtype=tl.int32),
                                                 tl.zeros([], dtype=tl.int64), V, p * total.to(tl.float32), True)
    return lo, hi, pop, count_hi, mass_hi, total


@jit(do_not_specialize=["p_ptr", "S"])
def _tally_kernel(logits_ptr, row_stride, p_ptr, keys_ptr, state_ptr, tally_ptr, V, CHUNK, S,
                  NUM_STAGES: tl.constexpr, MAX_SPLITS: tl.constexpr, TILE: tl.constexpr, NUM_PIVOTS: tl.constexpr,
                  CAP: tl.constexpr, SAMPLE: tl.constexpr, STATE: tl.constexpr, STEP: tl.constexpr):
    """Launches 2 and 3: a search step's count and mass above each of its pivots, over the
    chunk, into the tallies' first (STEP 1) or second (STEP 2) half. STEP 1: the first step's
    pivots (`top_p_first_step`, its lo among them), kept in the row's state by chunk 0. STEP 2:
    only where the first step's bracket holds more than CAP entries, keys spread evenly over it."""
    row = tl.program_id(0).to(tl.int64)
    chunk = tl.program_id(1)
    p = _row_p(p_ptr, row)
    if p < 1.0:
        key_lo, key_hi, row_max = row_keys(keys_ptr, row, S, MAX_SPLITS)
        if row_max < float("inf"):
            state_ptr += row * STATE
            row_ptr = logits_ptr + row * row_stride
            if STEP == 1:
                lo, pivots, _ = top_p_first_step(row_ptr, V, key_lo, key_hi, row_max, p, CAP, SAMPLE, NUM_PIVOTS)
                # The smallest pivot is the bracket's lo, so that the step always yields its population.
                pivots = tl.minimum(tl.maximum(pivots, lo), key_hi)
                pivots = tl.where(pivots == tl.min(pivots, axis=0), lo, pivots)
                taken = True
            else:
                lo, hi, pop, _, _, _ = _first_bracket(state_ptr, tally_ptr, row, S, key_hi, V, p, NUM_PIVOTS,
                                                      MAX_SPLITS)
                pivots = spread_pivots(lo, hi, NUM_PIVOTS)
                taken = (lo < hi) & (pop > CAP)
            if taken:
                start, end = chunk_columns(CHUNK, V)
                count, mass, total = tally_above(row_ptr, start, end, pivots, row_max, key_lo,
                                                 True, TILE, NUM_PIVOTS, NUM_STAGES)
                out = _chunk_tallies(tally_ptr, STEP, row, chunk, S, NUM_PIVOTS)
                slot = tl.arange(0, NUM_PIVOTS)
                tl.store(out + slot, count.to(tl.int64))
                tl.store(out + NUM_PIVOTS + slot, mass)
                tl.store(out + 2 * NUM_PIVOTS, total)
                if STEP == 1:
                    if chunk == 0:
                        tl.store(state_ptr + FIRST_LO, lo.to(tl.int64))
                        tl.store(state_ptr + PIVOTS + slot, pivots.to(tl.int64))
                        tl.store(state_ptr + COUNTER, 0)


@jit(do_not_specialize=["p_ptr", "S"])
def _collect_kernel(logits_ptr, row_stride, p_ptr, keys_ptr, state_ptr, tally_ptr, scratch_ptr, V, CHUNK, S,
                    BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr, MAX_SPLITS: tl.constexpr,
                    NUM_PIVOTS: tl.constexpr, CAP: tl.constexpr, STATE: tl.constexpr):
    """Launch 4: the bracket after the first step, or after the second where the first's held
    more than CAP entries; the chunk's entries in it to the scratch."""
    row = tl.program_id(0).to(tl.int64)
    chunk = tl.program_id(1)
    p = _row_p(p_ptr, row)
    if p < 1.0:
        state_ptr += row * STATE
        key_lo, key_hi, row_max = row_keys(keys_ptr, row, S, MAX_SPLITS)
        lo = key_hi
        hi = key_hi
        pop = tl.zeros([], dtype=tl.int32)
        count_hi = tl.zeros([], dtype=tl.int32)
        mass_hi = tl.zeros([], dtype=tl.int64)
        if row_max < float("inf"):  # else +inf survivors hold all the mass: only they are kept
            lo, hi, pop, count_hi, mass_hi, total = _first_bracket(state_ptr, tally_ptr, row, S, key_hi, V, p,
                                                                   NUM_PIVOTS, MAX_SPLITS)
            if (lo < hi) & (pop > CAP):
                count, mass, _ = _summed_tallies(tally_ptr, 2, row, S, NUM_PIVOTS, MAX_SPLITS)
                lo, hi, pop, count_hi, mass_hi = narrow_step(spread_pivots(lo, hi, NUM_PIVOTS), count, mass, lo, hi,
                                                             count_hi, mass_hi, V, p * total.to(tl.float32), True)
            if chunk == 0:
                tl.store(state_ptr + TOTAL, total)
        if chunk == 0:
            tl.store(state_ptr + LO, lo.to(tl.int64))
            tl.store(state_ptr + HI, hi.to(tl.int64))
            tl.store(state_ptr + POP, pop.to(tl.int64))
            tl.store(state_ptr + COUNT_HI, count_hi.to(tl.int64))
            tl.store(state_ptr + MASS_HI, mass_hi)
            tl.store(state_ptr + CUT, hi.to(tl.int64))
            tl.store(state_ptr + RANKED, 0)
        if (lo < hi) & (pop <= CAP):
            start, end = chunk_columns(CHUNK, V)
            collect_chunk(logits_ptr + row * row_stride, start, end, lo, hi, state_ptr + COUNTER,
                          scratch_ptr + row * CAP, CAP, BLOCK, NUM_STAGES, False)


@jit(do_not_specialize=["p_ptr", "S", "guard_ptr"])
def _rank_kernel(logits_ptr, row_stride, p_ptr, keys_ptr, state_ptr, scratch_ptr, V, S, guard_ptr,
                 GUARDED: tl.constexpr, BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr, MAX_SPLITS: tl.constexpr,
                 TILE: tl.constexpr, NUM_PIVOTS: tl.constexpr, CAP: tl.constexpr, RANK_ROWS: tl.constexpr,
                 RANK_COLS: tl.constexpr, STATE: tl.constexpr):
    """Launch 5 (grid [B, R]): the cut from the scratch, or from the whole row when it
    overflowed; the row's last program to finish writes it."""
    row = tl.program_id(0).to(tl.int64)
    part = tl.program_id(1)
    p = _row_p(p_ptr, row)
    if p < 1.0:
        state_ptr += row * STATE
        scratch_ptr += row * CAP
        lo = tl.load(state_ptr + LO).to(tl.int32)
        hi = tl.load(state_ptr + HI).to(tl.int32)
        if lo < hi:
            key_lo, key_hi, row_max = row_keys(keys_ptr, row, S, MAX_SPLITS)
            n = tl.load(state_ptr + COUNTER).to(tl.int32)
            pop = tl.load(state_ptr + POP).to(tl.int32)
            count_hi = tl.load(state_ptr + COUNT_HI).to(tl.int32)
            mass_hi = tl.load(state_ptr + MASS_HI)
            total = tl.load(state_ptr + TOTAL)
            if pop <= CAP:
                cut = rank_cut(scratch_ptr, part * RANK_ROWS, tl.num_programs(1) * RANK_ROWS, n, lo, hi, count_hi,
                               mass_hi, row_max, V, p * total.to(tl.float32), True, RANK_ROWS, RANK_COLS)
                if cut < hi:
                    tl.atomic_min(state_ptr + CUT, cut.to(tl.int64))
            elif part == 0:
                cut = find_cut(logits_ptr + row * row_stride, V, scratch_ptr, lo, hi, pop, count_hi, mass_hi, row_max,
                               V, p, total, key_lo, spread_pivots(lo, hi, NUM_PIVOTS), True, CAP,
                               BLOCK, TILE, NUM_PIVOTS, RANK_ROWS, RANK_COLS, NUM_STAGES, False)[0]
                tl.store(state_ptr + CUT, cut.to(tl.int64))
        tl.debug_barrier()
        if tl.atomic_add(state_ptr + RANKED, 1) == tl.num_programs(1) - 1:
            if flag_clear(guard_ptr, GUARDED):
                cut = tl.load(state_ptr + CUT, cache_modifier=".cg").to(tl.int32)
                write_below_cut(logits_ptr + row * row_stride, 0, V, cut, BLOCK, NUM_STAGES)


def split_plan(batch: int, vocab: int, device: str, has_k: bool, has_p: bool) -> tuple[int, int] | None:
    """(S, CHUNK) for a [batch, vocab] call (with k and p given or not) that takes the split
    path, else None."""
    config = SPLIT_CONFIG[device]
    if has_k or not has_p or batch > config["MAX_ROWS"] or vocab < config["MIN_VOCAB"]:
        return None
    splits = min(config["MAX_SPLITS"], cdiv(config["PROGRAMS"], batch), vocab // config["MIN_CHUNK"])
    if splits < 2:
        return None
    chunk = cdiv(cdiv(vocab, splits), config["BLOCK"]) * config["BLOCK"]
    return cdiv(vocab, chunk), chunk


def _part_words(batch: int, splits: int, config: dict) -> tuple[int, int, int, int]:
    """The int64 words of the call's buffer parts (module docstring: state, scratch, tallies,
    keys), all but the last rounded up to an even count, so that every part starts at a
    multiple of 16 bytes."""
    state = batch * (PIVOTS.value + config["NUM_PIVOTS"])
    scratch = cdiv(batch * config["CAP"], 2)
    tallies = 2 * batch * splits * (2 * config["NUM_PIVOTS"] + 1)
    return state + (state & 1), scratch + (scratch & 1), tallies + (tallies & 1), batch * splits


def split_buffer_bytes(batch: int, plan: tuple[int, int], device: str) -> int:
    """Bytes the split path allocates for a call: its one buffer (module docstring)."""
    return 8 * sum(_part_words(batch, plan[0], SPLIT_CONFIG[device]))


def launch_split(logits: torch.Tensor, p: torch.Tensor, plan: tuple[int, int], device: str,
                 flag: torch.Tensor | None, check: bool) -> None:
    """Mask `logits` in place over the split path (validated arguments; `flag`/`check`: the
    guard as `apply_top_k_top_p` settled it)."""
    c = SPLIT_CONFIG[device]
    batch, vocab = logits.shape
    splits, chunk = plan
    words = _part_words(batch, splits, c)
    # One allocation, carved with one split and two dtype views (each view op costs host time).
    state, scratch, tallies, keys = logits.new_empty(sum(words), dtype=torch.int64).split_with_sizes(words)
    scratch, keys = scratch.view(torch.float32), keys.view(torch.int32)
    state_width = PIVOTS.value + c["NUM_PIVOTS"]
    grid, stride, warps = (batch, splits), logits.stride(0), c.get("num_warps", 4)
    ranks = (batch, max(1, min(c["CAP"] // c["RANK_ROWS"], c["PROGRAMS"] // batch)))
    common = dict(NUM_STAGES=c["NUM_STAGES"], MAX_SPLITS=c["MAX_SPLITS"], NUM_PIVOTS=c["NUM_PIVOTS"], CAP=c["CAP"],
                  STATE=state_width, num_warps=warps)
    _stats_kernel[grid](logits, stride, p, keys, batch, vocab, chunk, splits, flag, check, GUARDED=flag is not None,
                        BLOCK=c["BLOCK"], NUM_STAGES=c["NUM_STAGES"], num_warps=warps)
    for step in (1, 2):
        _tally_kernel[grid](logits, stride, p, keys, state, tallies, vocab, chunk, splits, TILE=c["TILE"],
                            SAMPLE=c["SAMPLE"], STEP=step, **common)
    _collect_kernel[grid](logits, stride, p, keys, state, tallies, scratch, vocab, chunk, splits, BLOCK=c["BLOCK"],
                          **common)
    _rank_kernel[ranks](logits, stride, p, keys, state, scratch, vocab, splits, flag, GUARDED=flag is not None,
                        BLOCK=c["ROW_BLOCK"], TILE=c["TILE"], RANK_ROWS=c["RANK_ROWS"], RANK_COLS=c["RANK_COLS"],
                        **common)
