"""Triton top-k then top-p masking, in place, with the keep-all-ties policy.

Contract (the oracle `samplecheck.oracles.top_k_top_p` states the semantics in full):
- `logits` [B, V] fp32/bf16/fp16, any row stride, column stride 1. Loads upcast to fp32;
  no fp32 copy is made. Masked entries are set to -inf in place; kept entries and the
  row-stride gaps are never written.
- `k` [B] int32/int64 or None: k <= 0 or k >= V turns top-k off for that row.
- `p` [B] float32 or None, in (0, 1]: p == 1 turns top-p off for that row.
- Top-p applies after top-k, on the renormalised survivors.
- Non-finite entries (docs/backends.md, "Edge values"): in a row where top-k or top-p is
  on, NaN reads as -inf (it never counts towards k nor carries mass) and is always dropped
  (set to -inf); +inf entries rank above every finite one, and when the survivors hold
  +inf, top-p keeps exactly the +inf entries (they hold all the mass). Rows with both off
  are untouched, NaN included.
- Values (`samplecheck.kernels.validation.values_checked`): deferred or captured, the
  kernel checks k >= -1 and p in (0, 1] itself (every program reads all B values, so a
  bad value anywhere makes every row write nothing; program 0 sets the guard flag's bits):
  one launch per call. Unchecked, k < -1 acts as off and p outside (0, 1] gives an
  unspecified mask of the row (never out of bounds).
- Scratch: each call allocates a [B, CAP] fp32 buffer (CAP from LAUNCH_CONFIG: 4 KiB a
  row on a GPU) for the candidates described below; nothing is cached between calls.

Algorithm, per row (one program), no sort of the row. Every fp32 value maps to an int32
key with the same order. The kept set is always {x : key(x) >= c} for a cut key c, the
smallest key at which a monotone predicate holds:
- top-k: #(key > c) < k;
- top-p: mass(key > c) < p * mass(top-k survivors), mass = sum of exp(x - row max).
Each cut lies in a bracket [lo, hi] of keys, hi = the row max's key:
1. Pass 1 reads the row max, the min key and the lane maxima (lane j sees the columns
   j mod BLOCK; merged to LANES lanes of adjacent columns).
2. Lower bounds raise lo. Top-k with k <= LANES: the lane maxima are distinct entries, so
   the k-th largest of them is <= the cut; BOUND_STEPS NUM_PIVOTS-ary search steps over
   them (in registers) give a key at or below it. Top-p: the entries below
   max - ln(V / (1 - p)) - 1 hold less than (1 - p) of the survivors' mass, so they are
   all masked.
3. Candidates: one pass copies the entries with key in [lo, hi] to the row's scratch in
   column order (positions from cumsums) and counts them; the top-p stage's pass also
   weighs the survivors. If more than CAP fall in the bracket, search steps over the whole
   row (one pass each, counting and weighing the entries above NUM_PIVOTS pivots in
   [NUM_PIVOTS, TILE] compare tiles, and summing the survivors' mass) shrink it until it
   is one key or holds at most CAP entries, which are then copied.
   The top-p stage reads SAMPLE entries first (columns (i * V) // SAMPLE). When more than
   CAP / 2 of the row's entries lie in its bracket by the sample's count, it skips the
   candidate pass and its first search step takes its pivots from the sample, sorted in
   registers: around the entry where the sample's own mass reaches p, at spacings
   growing from about CAP / 2 expected entries. Later steps spread the pivots evenly over
   the bracket. The sample only places pivots: every pivot is checked against the whole
   row, so the cut does not depend on it.
4. The cut is the smallest candidate key at which the predicate holds: the count and mass
   above every candidate come from [RANK_ROWS, RANK_COLS] compare tiles over the scratch.
   Top-p reuses the top-k candidates when they hold every top-k survivor.
5. A last pass writes -inf below the cut.
With k = 50, or a top-p whose bound is tight, that is three passes over the row (max,
candidates, write) and a few hundred compares per candidate; top-p on a flat row takes a
search step and a candidate pass more (a second step when the sample's guess misses).

Exactness and determinism: masses are sums of exp(x - max) in 2**-40 fixed point (int64).
Integer sums are exact in any order, so the cut depends neither on the summation order
(hence not on the row stride, the launch parameters or which path found it) nor on the
layouts Triton picks; the truncation costs < V * 2**-40 of the mass (< 3e-7 for
V <= 2**18), far inside the oracle's 1e-5 top-p band. Counts and key compares are exact.
row_stride and V are specialized on divisibility by 16 so that aligned rows move as
16-byte vectors; V == 1 is specialized to a constant; B (read only by the value checks) is
not specialized.
"""

import torch
import triton
import triton.language as tl

from samplecheck.kernels.drop_store import group_columns, store_neg_inf
from samplecheck.kernels.rounding import to_fp32
from samplecheck.kernels.runtime import check_launchable
from samplecheck.kernels.guard import CHECK_BLOCK, INT64_MAX_JIT, record_failed, rows_in_range
from samplecheck.kernels.validation import check_top_k_top_p

# Launch parameters by device. BLOCK: columns per step of the streaming passes (max,
# candidates, write), NUM_STAGES: their software pipelining depth; LANES: lane maxima kept
# for the top-k bound; TILE and NUM_PIVOTS: the compare tile of a full-row search step;
# CAP: scratch entries per row; RANK_ROWS x RANK_COLS: the candidates' compare tile; SAMPLE:
# the entries sampled to place the first passes (a power of two). On a
# GPU the tiles must fit in registers (at most 128 a thread at 8 warps, 2 programs per
# SM); the CPU interpreter pays per operation, so it takes wide tiles, and a small CAP so
# that its small rows exercise both the candidate and the full-row search. The result
# depends on none of these.
LAUNCH_CONFIG = {
    "cuda": dict(BLOCK=2048, NUM_STAGES=3, LANES=512, BOUND_STEPS=3, TILE=256, NUM_PIVOTS=16, CAP=1024,
                 RANK_ROWS=16, RANK_COLS=256, SAMPLE=1024, num_warps=8),
    "cpu": dict(BLOCK=4096, NUM_STAGES=1, LANES=1024, BOUND_STEPS=2, TILE=4096, NUM_PIVOTS=256, CAP=256,
                RANK_ROWS=128, RANK_COLS=128, SAMPLE=32),
}


@triton.jit
def _order_key(x):
    """int32 key with key(a) < key(b) iff a < b for fp32 a, b (-0.0 folded into +0.0)."""
    x = tl.where(x == 0.0, 0.0, x)
    bits = x.to(tl.int32, bitcast=True)
    return bits ^ ((bits >> 31) & 0x7FFFFFFF)


@triton.jit
def _load_row(ptrs, mask):
    """Row entries in fp32 (exact upcast), -inf where masked off; NaN reads as -inf."""
    x = to_fp32(tl.load(ptrs, mask=mask, other=float("-inf")))
    return tl.where(x == x, x, float("-inf"))


@triton.jit
def _weight(x, row_max):
    """exp(x - row_max) in 2**-40 fixed point: masses are int64 sums, exact in any order."""
    return (tl.exp(x - row_max) * 1099511627776.0).to(tl.int64)


@triton.jit
def _pivots(lo, hi, NUM_PIVOTS: tl.constexpr):
    """NUM_PIVOTS int32 keys spread over [lo, hi), the first one lo (all lo if lo == hi)."""
    lo64 = lo.to(tl.int64)
    steps = tl.arange(0, NUM_PIVOTS).to(tl.int64)
    return (lo64 + ((hi.to(tl.int64) - lo64) * steps) // NUM_PIVOTS).to(tl.int32)


@triton.jit
def _kth_largest_bound(keys, k, lo, hi, STEPS: tl.constexpr, NUM_PIVOTS: tl.constexpr):
    """A key c with #(keys >= c) >= k, close below the k-th largest of `keys` (in registers,
    all in [lo, hi]): STEPS NUM_PIVOTS-ary search steps, each keeping that invariant."""
    for _ in tl.static_range(STEPS):
        pivots = _pivots(lo, hi, NUM_PIVOTS)
        count = tl.sum((keys[:, None] > pivots[None, :]).to(tl.int32), axis=0)
        holds = count < k
        new_hi = tl.min(tl.where(holds, pivots, hi), axis=0)
        lo = tl.max(tl.where(holds, lo, pivots + 1), axis=0)
        hi = new_hi
    return lo


@triton.jit
def _narrow(row_ptr, V, lo, hi, pop, max_pop, row_max, k, p, total, mass_floor, pivots,
            BY_MASS: tl.constexpr, TILE: tl.constexpr, NUM_PIVOTS: tl.constexpr, NUM_STAGES: tl.constexpr):
    """Shrink the cut's bracket [lo, hi] (hi: the row max's key) until it is one key or
    holds at most max_pop entries (pop: its population, or anything above max_pop). Each
    step is one pass over the row counting (and weighing) the entries above NUM_PIVOTS
    pivots: `pivots` (any keys; clamped into [lo, hi]) at the first step, then keys spread
    evenly over the bracket. BY_MASS, each pass also sums `total`, the mass of the entries
    with key >= mass_floor, and the limit is p * total. Returns the new lo, hi, pop, the
    count and mass of the entries above hi, and total."""
    offs = tl.arange(0, TILE)
    count_hi = tl.zeros([], dtype=tl.int32)
    mass_hi = tl.zeros([], dtype=tl.int64)
    while (lo < hi) & (pop > max_pop):
        pivots = tl.minimum(tl.maximum(pivots, lo), hi)
        # Per-lane tallies, reduced across the tile once after the pass (a reduction per
        # step would synchronise the program's warps at every step). Pivots run along the
        # first axis, so each thread compares its own entries with every pivot and no
        # entry moves between threads.
        lane_count = tl.zeros([NUM_PIVOTS, TILE], dtype=tl.int32)
        lane_mass = tl.zeros([NUM_PIVOTS, TILE], dtype=tl.int64)
        lane_total = tl.zeros([TILE], dtype=tl.int64)
        for start in tl.range(0, V, TILE, num_stages=NUM_STAGES):
            idx = start + offs
            x = _load_row(row_ptr + idx, idx < V)
            key = _order_key(x)
            above = key[None, :] > pivots[:, None]
            lane_count += above.to(tl.int32)
            if BY_MASS:
                w = _weight(x, row_max)
                lane_mass += tl.where(above, w[None, :], 0)
                lane_total += tl.where(key >= mass_floor, w, 0)
        count = tl.sum(lane_count, axis=1)
        mass = tl.sum(lane_mass, axis=1)
        if BY_MASS:
            total = tl.sum(lane_total, axis=0)
            holds = mass.to(tl.float32) < p * total.to(tl.float32)
        else:
            holds = count < k
        # Counts and masses fall as the pivot rises: the smallest holding pivot is the new
        # hi, one past the largest failing pivot the new lo (pivot lo fails unless lo is
        # the cut, which ends the loop).
        new_hi = tl.min(tl.where(holds, pivots, hi), axis=0)
        count_lo = tl.min(tl.where(holds, 2147483647, count), axis=0)
        count_hi = tl.max(tl.where(holds, count, count_hi), axis=0)
        mass_hi = tl.max(tl.where(holds, mass, mass_hi), axis=0)
        lo = tl.max(tl.where(holds, lo, pivots + 1), axis=0)
        hi = new_hi
        pop = count_lo - count_hi
        pivots = _pivots(lo, hi, NUM_PIVOTS)
    return lo, hi, pop, count_hi, mass_hi, total


@triton.jit
def _collect(row_ptr, V, lo, hi, scratch_ptr, row_max, mass_floor, WITH_MASS: tl.constexpr,
             CAP: tl.constexpr, BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """One pass: copy the entries with key in [lo, hi] to scratch in column order (the
    first CAP of them) and count them; WITH_MASS, also sum the mass of key >= mass_floor."""
    # Columns go in groups of 8 (one thread's vector): a scan over the groups' counts and
    # one within each group give every entry its position.
    groups = group_columns(BLOCK)
    n = tl.zeros([], dtype=tl.int32)
    lane_mass = tl.zeros([BLOCK // 8, 8], dtype=tl.int64)  # reduced once, after the pass
    tl.debug_barrier()  # earlier reads of the scratch are done before it is overwritten
    for start in tl.range(0, V, BLOCK, num_stages=NUM_STAGES):
        idx = start + groups
        in_row = idx < V
        x = _load_row(row_ptr + idx, in_row)
        key = _order_key(x)
        take = (in_row & (key >= lo) & (key <= hi)).to(tl.int32)
        group_count = tl.sum(take, axis=1)
        group_end = tl.cumsum(group_count, axis=0)
        pos = n + (group_end - group_count)[:, None] + tl.cumsum(take, axis=1) - 1
        tl.store(scratch_ptr + pos, x, mask=(take == 1) & (pos < CAP))
        n += tl.sum(group_count, axis=0)
        if WITH_MASS:
            lane_mass += tl.where(in_row & (key >= mass_floor), _weight(x, row_max), 0)
    tl.debug_barrier()  # the scratch is written before any thread reads it
    return n, tl.sum(tl.sum(lane_mass, axis=1), axis=0)


@triton.jit
def _rank_cut(scratch_ptr, n, lo, hi, count_hi, mass_hi, row_max, k, mass_limit,
              BY_MASS: tl.constexpr, RANK_ROWS: tl.constexpr, RANK_COLS: tl.constexpr):
    """The cut from the n scratch entries, which include every entry with key in [lo, hi]
    (and maybe some below lo); count_hi and mass_hi: count and mass of the row's entries
    above hi. The predicate only changes at entries' keys, so the cut is the smallest
    entry key in [lo, hi] at which it holds (hi if there is none). Counts and masses above
    RANK_ROWS entries at a time accumulate over [RANK_ROWS, RANK_COLS] compare tiles."""
    rows = tl.arange(0, RANK_ROWS)
    cols = tl.arange(0, RANK_COLS)
    cut = hi
    for i in range(0, n, RANK_ROWS):
        xi = tl.load(scratch_ptr + i + rows, mask=i + rows < n, other=float("-inf"))
        key_i = _order_key(xi)
        count = tl.zeros([RANK_ROWS, RANK_COLS], dtype=tl.int32)
        mass = tl.zeros([RANK_ROWS, RANK_COLS], dtype=tl.int64)
        for j in range(0, n, RANK_COLS):
            xj = tl.load(scratch_ptr + j + cols, mask=j + cols < n, other=float("-inf"))
            above = _order_key(xj)[None, :] > key_i[:, None]
            count += above.to(tl.int32)
            if BY_MASS:
                mass += tl.where(above, _weight(xj, row_max)[None, :], 0)
        if BY_MASS:
            holds = (tl.sum(mass, axis=1) + mass_hi).to(tl.float32) < mass_limit
        else:
            holds = tl.sum(count, axis=1) + count_hi < k
        holds &= (i + rows < n) & (key_i >= lo) & (key_i <= hi)
        cut = tl.minimum(cut, tl.min(tl.where(holds, key_i, hi), axis=0))
    return cut


@triton.jit
def _find_cut(row_ptr, V, scratch_ptr, lo, hi, n, row_max, k, p, total, mass_floor, pivots,
              BY_MASS: tl.constexpr, CAP: tl.constexpr, BLOCK: tl.constexpr, TILE: tl.constexpr,
              NUM_PIVOTS: tl.constexpr, RANK_ROWS: tl.constexpr, RANK_COLS: tl.constexpr,
              NUM_STAGES: tl.constexpr):
    """The cut in [lo, hi] (hi: the row max's key). n <= CAP: the scratch holds n entries,
    every entry with key in [lo, hi] and maybe some below lo, and `total` is the mass of
    key >= mass_floor (BY_MASS). n > CAP: it does not (n is the bracket's population or
    V); full-row search steps (first pivots: `pivots`) shrink the bracket and sum `total`
    first, and the bracket's entries are collected then. Returns the cut, the scratch's
    entry count and whether the scratch holds every entry from the cut up."""
    count_hi = tl.zeros([], dtype=tl.int32)
    mass_hi = tl.zeros([], dtype=tl.int64)
    collected = n <= CAP
    if n > CAP:
        lo, hi, n, count_hi, mass_hi, total = _narrow(row_ptr, V, lo, hi, n, CAP, row_max, k, p, total,
                                                      mass_floor, pivots, BY_MASS, TILE, NUM_PIVOTS,
                                                      NUM_STAGES)
        collected = lo < hi  # else the cut is lo
        if collected:
            n, _ = _collect(row_ptr, V, lo, hi, scratch_ptr, row_max, lo, False, CAP, BLOCK, NUM_STAGES)
    cut = lo
    if collected:
        cut = _rank_cut(scratch_ptr, n, lo, hi, count_hi, mass_hi, row_max, k, p * total.to(tl.float32),
                        BY_MASS, RANK_ROWS, RANK_COLS)
    return cut, n, collected & (count_hi == 0)


@triton.jit
def _sampled_cut_pivots(sample, row_max, p, mass_floor, V, CAP: tl.constexpr, SAMPLE: tl.constexpr,
                        NUM_PIVOTS: tl.constexpr):
    """NUM_PIVOTS keys around the top-p cut that the sample (keys, largest first) predicts:
    the sample entry where its mass of key >= mass_floor first reaches p, and entries
    0, 1, 3, 5, 8, 11, 16, ... steps away on either side, where a step of the sample holds
    about CAP / 2 of the row's entries. A guess only: the search checks every pivot against
    the whole row."""
    x = sample ^ ((sample >> 31) & 0x7FFFFFFF)  # the order key is its own inverse
    w = tl.where(sample >= mass_floor, tl.exp(x.to(tl.float32, bitcast=True) - row_max), 0.0)
    mass = tl.cumsum(w, axis=0)
    at = tl.sum((mass < p * tl.sum(w, axis=0)).to(tl.int32), axis=0)
    step = tl.maximum((CAP * SAMPLE) // (2 * V), 1)
    t = tl.arange(0, NUM_PIVOTS) - NUM_PIVOTS // 2
    growth = tl.minimum(tl.exp2(tl.abs(t).to(tl.float32) * 0.585), SAMPLE)  # about 1.5 ** |t|
    reach = tl.abs(t) + growth.to(tl.int32) - 1  # 0, 1, 3, 5, 8, 11, 16, ...
    at = tl.minimum(tl.maximum(at + tl.where(t < 0, -reach, reach) * step, 0), SAMPLE - 1)
    return tl.sum(tl.where(tl.arange(0, SAMPLE)[None, :] == at[:, None], sample[None, :], 0), axis=1)


@triton.jit(do_not_specialize=["k_ptr", "p_ptr", "B", "guard_ptr"])
def _top_k_top_p_kernel(logits_ptr, row_stride, k_ptr, p_ptr, scratch_ptr, B, V, guard_ptr, check,
                        GUARDED: tl.constexpr, HAS_K: tl.constexpr, HAS_P: tl.constexpr,
                        BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr, LANES: tl.constexpr,
                        BOUND_STEPS: tl.constexpr, TILE: tl.constexpr,
                        NUM_PIVOTS: tl.constexpr, CAP: tl.constexpr, RANK_ROWS: tl.constexpr,
                        RANK_COLS: tl.constexpr, SAMPLE: tl.constexpr):
    """One program per row; the module docstring states the algorithm."""
    row = tl.program_id(0).to(tl.int64)
    row_ptr = logits_ptr + row * row_stride
    scratch_ptr += row * CAP
    offs = tl.arange(0, BLOCK)
    k = tl.zeros([], dtype=tl.int32) + V  # a tensor also when V == 1 is specialized to a constant
    if HAS_K:
        k_row = tl.load(k_ptr + row)
        k = tl.where((k_row > 0) & (k_row < V), k_row, V).to(tl.int32)
    p = 1.0
    if HAS_P:
        p = tl.load(p_ptr + row).to(tl.float32)
    clear = True
    if GUARDED:
        clear = tl.load(guard_ptr) == 0
        if check:
            # The call's value checks (bit 1: k, then p), made by every program over all B rows
            # (from cache), so a bad value anywhere makes every row write nothing.
            failed = tl.zeros([], dtype=tl.int32)
            p_bit = 1
            if HAS_K:
                failed |= tl.where(rows_in_range(k_ptr, B, -1, INT64_MAX_JIT, False, False, CHECK_BLOCK), 0, 1)
                p_bit = 2
            if HAS_P:
                failed |= tl.where(rows_in_range(p_ptr, B, 0.0, 1.0, True, False, CHECK_BLOCK), 0, p_bit)
            record_failed(guard_ptr, failed)
            clear = clear & (failed == 0)
    if ((k < V) | (p < 1.0)) & clear:
        zero_mass = tl.zeros([], dtype=tl.int64)
        # Pass 1: the row max, the min key and the lane maxima.
        lane_max = tl.full([BLOCK], float("-inf"), tl.float32)
        lane_min = tl.full([BLOCK], float("inf"), tl.float32)
        for start in tl.range(0, V, BLOCK, num_stages=NUM_STAGES):
            idx = start + offs
            in_row = idx < V
            x = _load_row(row_ptr + idx, in_row)
            lane_max = tl.maximum(lane_max, x)
            lane_min = tl.minimum(lane_min, tl.where(in_row, x, float("inf")))
        row_max = tl.max(lane_max, axis=0)
        key_lo = _order_key(tl.min(lane_min, axis=0))
        key_hi = _order_key(row_max)
        row_max = tl.where(row_max == float("-inf"), 0.0, row_max)
        cut = key_lo
        n = tl.zeros([], dtype=tl.int32) + V
        covered = tl.zeros([], dtype=tl.int1)
        if HAS_K:
            if k < V:
                lo = key_lo
                if (k <= LANES) | (V <= CAP):
                    if k <= LANES:
                        lanes = tl.reshape(_order_key(lane_max), [LANES, BLOCK // LANES])
                        lanes = tl.max(lanes, axis=1)
                        lo = _kth_largest_bound(lanes, k, tl.min(lanes, axis=0), key_hi,
                                                BOUND_STEPS, NUM_PIVOTS)
                    n, _ = _collect(row_ptr, V, lo, key_hi, scratch_ptr, row_max, lo, False,
                                    CAP, BLOCK, NUM_STAGES)
                cut, n, covered = _find_cut(row_ptr, V, scratch_ptr, lo, key_hi, n, row_max, k, 1.0,
                                            zero_mass, cut, _pivots(lo, key_hi, NUM_PIVOTS), False,
                                            CAP, BLOCK, TILE, NUM_PIVOTS, RANK_ROWS, RANK_COLS, NUM_STAGES)
        if HAS_P:
            if (p < 1.0) & (row_max == float("inf")):
                cut = key_hi  # +inf survivors hold all the mass: only they are kept
            elif p < 1.0:
                if covered:
                    # The scratch holds every top-k survivor: weigh them there.
                    kept_mass = tl.zeros([RANK_ROWS], dtype=tl.int64)
                    for start in range(0, n, RANK_ROWS):
                        idx = start + tl.arange(0, RANK_ROWS)
                        x = tl.load(scratch_ptr + idx, mask=idx < n, other=float("-inf"))
                        kept_mass += tl.where(_order_key(x) >= cut, _weight(x, row_max), 0)
                    lo = cut
                    mass = tl.sum(kept_mass, axis=0)
                    pivots = _pivots(lo, key_hi, NUM_PIVOTS)
                else:
                    # The entries below the bound hold less than 1 - p of the mass. When the
                    # sample says that more than CAP / 2 lie above it, the bracket is narrowed
                    # from pivots the sample predicts, without collecting it first.
                    sample_cols = (tl.arange(0, SAMPLE).to(tl.int64) * V) // SAMPLE
                    log_v = tl.log(V + tl.zeros([], dtype=tl.float32))
                    bound = row_max - (log_v - tl.log(1.0 - p)) - 1.0
                    lo = tl.minimum(tl.maximum(cut, _order_key(bound)), key_hi)
                    pivots = _pivots(lo, key_hi, NUM_PIVOTS)
                    sample = _order_key(_load_row(row_ptr + sample_cols, sample_cols < V))
                    above = tl.sum(((sample >= lo) & (sample <= key_hi)).to(tl.int64), axis=0)
                    mass = zero_mass
                    if (above * V > (CAP // 2) * SAMPLE) & (V > CAP):
                        n = tl.zeros([], dtype=tl.int32) + V
                        pivots = _sampled_cut_pivots(tl.sort(sample, descending=True), row_max, p, cut, V, CAP,
                                                     SAMPLE, NUM_PIVOTS)
                    else:
                        n, mass = _collect(row_ptr, V, lo, key_hi, scratch_ptr, row_max, cut, True,
                                           CAP, BLOCK, NUM_STAGES)
                cut, _, _ = _find_cut(row_ptr, V, scratch_ptr, lo, key_hi, n, row_max, k, p, mass, cut, pivots,
                                      True, CAP, BLOCK, TILE, NUM_PIVOTS, RANK_ROWS, RANK_COLS, NUM_STAGES)
        # Final pass: write -inf below the cut, nothing else.
        groups = group_columns(BLOCK)
        for start in tl.range(0, V, BLOCK, num_stages=NUM_STAGES):
            idx = start + groups
            in_row = idx < V
            x = to_fp32(tl.load(row_ptr + idx, mask=in_row, other=float("-inf")))
            store_neg_inf(row_ptr + idx, in_row & ((_order_key(x) < cut) | (x != x)))  # NaN is never kept


def apply_top_k_top_p(logits: torch.Tensor, k: torch.Tensor | None = None,
                      p: torch.Tensor | None = None) -> torch.Tensor:
    """Mask `logits` in place (see the module docstring) and return it."""
    guard = check_top_k_top_p(logits, k, p)
    batch, vocab = logits.shape
    launched = batch > 0 and vocab > 0 and (k is not None or p is not None)
    flag = guard.settle(in_kernel=launched)  # else the checks are launched on their own
    if not launched:
        return logits
    check_launchable(_top_k_top_p_kernel, logits)
    config = LAUNCH_CONFIG[logits.device.type]
    scratch = torch.empty((batch, config["CAP"]), dtype=torch.float32, device=logits.device)
    _top_k_top_p_kernel[(batch,)](
        logits, logits.stride(0), k, p, scratch, batch, vocab, flag, guard.on_device, GUARDED=flag is not None,
        HAS_K=k is not None, HAS_P=p is not None, **config,
    )
    return logits
