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
- Values (`samplecheck.kernels.validation.values_checked`): unchecked, k < -1 acts as off
  and p outside (0, 1] gives an unspecified mask of the row (never out of bounds).
- No host synchronisation: the call is two kernel launches after a memset of its counters.
- Scratch, allocated per call (nothing is cached between calls), with CAP2 and CHUNK from
  LAUNCH_CONFIG and S = cdiv(V, CHUNK) chunks a row: candidates [B, CAP2] fp32 values and
  [B, CAP2] int32 columns, partial results [B, S, 3] int32 and counters [B, 2] int32
  (on a GPU, CAP2 = 4096: 32 KiB a row plus 12 bytes a chunk).

Algorithm, no sort. Every fp32 value maps to an int32 key with the same order. The kept
set is always {x : key(x) >= c} for a cut key c, the smallest key at which a monotone
predicate holds:
- top-k: #(key > c) < k;
- top-p: mass(key > c) < p * mass(top-k survivors), mass = sum of exp(x - row max).
Each row is split into chunks of CHUNK columns, one program per (row, chunk):
1. Launch 1 reads each chunk once: its max and min key and, for top-k with k <= LANES,
   a key L_j with at least k of the chunk's entries at or above it (the k-th largest of
   its lane maxima, which are distinct entries, found from below by BOUND_STEPS pivot
   steps in registers). The row's cut is at least L = max_j L_j.
2. Launch 2, top-k rows: each chunk sets its entries below L (and NaN) to -inf and appends
   the others, with their columns, to the row's candidates (positions from an atomic
   counter); the last chunk to finish (an atomic ticket) finds the cut among the
   candidates, which hold every entry from L up: a compare-tile rank when there are at
   most RANK_CAP of them, else pivot steps over them down to a single key. Top-p then
   weighs the survivors among the candidates and finds its cut there the same way. Only
   the candidates below the cut are written.
   When more than CAP2 entries lie at or above L, or for rows with top-k off, one program
   finds the cut over the whole row: pivot steps (one pass each, counting and weighing
   the entries above NUM_PIVOTS pivots in [TILE, NUM_PIVOTS] tiles) shrink the bracket
   [lo, hi] (hi: the row max's key) until it holds at most CAP entries, which are copied
   and ranked; top-p starts from the bound max - ln(V / (1 - p)) - 1 (the entries below it
   hold less than (1 - p) of the survivors' mass); a last pass writes -inf below the cut.
Pivots: half spread evenly over the keys of [lo, hi), the first one lo (this half alone
always makes progress), half evenly over the fp32 values between lo's and hi's (keys are
log-like in the value, so on rows spanning a few units the value half narrows fastest).

Exactness and determinism: masses are sums of exp(x - max) in 2**-40 fixed point (int64).
Integer sums are exact in any order, so the cut depends neither on the summation order
(hence not on the row stride, the chunking, the candidates' order, the launch parameters
or which path found it) nor on the layouts Triton picks; the truncation costs
< V * 2**-40 of the mass (< 3e-7 for V <= 2**18), far inside the oracle's 1e-5 top-p band.
Counts and key compares are exact. V == 1 is specialized to a constant.
"""

import torch
import triton
import triton.language as tl

from samplecheck.kernels.rounding import to_fp32
from samplecheck.kernels.runtime import check_launchable
from samplecheck.kernels.guard import ValueGuard
from samplecheck.kernels.validation import check_top_k_top_p

# Launch parameters by device. CHUNK: columns a program reads in one step (in registers);
# LANES and BOUND_STEPS: the chunk bound's lane maxima and search steps; CAP2: candidates a
# row; RANK_CAP: most candidates ranked by compare tiles; TILE and NUM_PIVOTS: the compare
# tile of a pivot step; BLOCK: columns a step of the whole-row passes; CAP (<= CAP2, it
# uses the candidates' space): entries a whole-row search collects; RANK_ROWS x RANK_COLS:
# the rank's compare tile. On a GPU the tiles must fit in registers at 8 warps; the CPU
# interpreter pays per operation, so it takes wide tiles, and small CHUNK, CAP2 and CAP so
# that small rows exercise every path. The result depends on none of these.
LAUNCH_CONFIG = {
    "cuda": dict(CHUNK=4096, LANES=512, BOUND_STEPS=3, CAP2=4096, RANK_CAP=512, TILE=256, NUM_PIVOTS=16,
                 BLOCK=2048, CAP=1024, RANK_ROWS=64, RANK_COLS=32, NUM_STAGES=3, num_warps=8),
    "cpu": dict(CHUNK=512, LANES=128, BOUND_STEPS=2, CAP2=512, RANK_CAP=128, TILE=1024, NUM_PIVOTS=64,
                BLOCK=4096, CAP=128, RANK_ROWS=128, RANK_COLS=128, NUM_STAGES=1),
}
INT32_MIN = tl.constexpr(-2147483648)
INT32_MAX = tl.constexpr(2147483647)


@triton.jit
def _order_key(x):
    """int32 key with key(a) < key(b) iff a < b for fp32 a, b (-0.0 folded into +0.0)."""
    x = tl.where(x == 0.0, 0.0, x)
    bits = x.to(tl.int32, bitcast=True)
    return bits ^ ((bits >> 31) & 0x7FFFFFFF)


@triton.jit
def _key_value(key):
    """The fp32 value of an order key (the inverse of _order_key)."""
    return (key ^ ((key >> 31) & 0x7FFFFFFF)).to(tl.float32, bitcast=True)


@triton.jit
def _load_row(ptrs, mask):
    """Entries in fp32 (exact upcast), -inf where masked off; NaN reads as -inf. Loads
    bypass L1: other programs of the launch may have written these addresses."""
    x = to_fp32(tl.load(ptrs, mask=mask, other=float("-inf"), cache_modifier=".cg"))
    return tl.where(x == x, x, float("-inf"))


@triton.jit
def _weight(x, row_max):
    """exp(x - row_max) in 2**-40 fixed point: masses are int64 sums, exact in any order."""
    return (tl.exp(x - row_max) * 1099511627776.0).to(tl.int64)


@triton.jit
def _row_start(logits_ptr, row_stride, k_ptr, p_ptr, V, guard_ptr, GUARDED: tl.constexpr,
               HAS_K: tl.constexpr, HAS_P: tl.constexpr):
    """This program's row, its pointer, k (V when top-k is off), p (1 when off) and
    whether the row is masked at all (never when the guard is set)."""
    row = tl.program_id(0).to(tl.int64)
    row_ptr = logits_ptr + row * row_stride
    k = tl.zeros([], dtype=tl.int32) + V  # a tensor also when V == 1 is specialized to a constant
    if HAS_K:
        k_row = tl.load(k_ptr + row)
        k = tl.where((k_row > 0) & (k_row < V), k_row, V).to(tl.int32)
    p = 1.0
    if HAS_P:
        p = tl.load(p_ptr + row).to(tl.float32)
    active = (k < V) | (p < 1.0)
    if GUARDED:
        active &= tl.load(guard_ptr) == 0
    return row, row_ptr, k, p, active


@triton.jit
def _pivots(lo, hi, NUM_PIVOTS: tl.constexpr):
    """NUM_PIVOTS int32 keys in [lo, hi] (all lo if lo == hi), unordered: the first half
    spread evenly over the keys of [lo, hi), the first one lo; the second half evenly
    over the fp32 values strictly between lo's and hi's (the key half where those values
    are not finite)."""
    HALF: tl.constexpr = NUM_PIVOTS // 2
    j = tl.arange(0, NUM_PIVOTS)
    lo64 = lo.to(tl.int64)
    by_key = (lo64 + ((hi.to(tl.int64) - lo64) * (j % HALF)) // HALF).to(tl.int32)
    lo_v = _key_value(lo)
    hi_v = _key_value(hi)
    finite = (lo_v > float("-inf")) & (hi_v < float("inf"))
    t = (j - HALF + 1).to(tl.float32) / (HALF + 1)
    by_value = _order_key(tl.where(finite, lo_v, 0.0) * (1.0 - t) + tl.where(finite, hi_v, 0.0) * t)
    by_value = tl.minimum(tl.maximum(by_value, lo), hi)
    return tl.where(j >= HALF, tl.where(finite, by_value, by_key), by_key)


@triton.jit
def _kth_largest_bound(keys, k, lo, hi, STEPS: tl.constexpr, NUM_PIVOTS: tl.constexpr):
    """A key c with #(keys >= c) >= k, close below the k-th largest of `keys` (in registers,
    all in [lo, hi], #(keys >= lo) >= k): STEPS search steps, each keeping that invariant."""
    for _ in tl.static_range(STEPS):
        pivots = _pivots(lo, hi, NUM_PIVOTS)
        count = tl.sum((keys[:, None] > pivots[None, :]).to(tl.int32), axis=0)
        holds = count < k
        new_hi = tl.min(tl.where(holds, pivots, hi), axis=0)
        lo = tl.max(tl.where(holds, lo, pivots + 1), axis=0)
        hi = new_hi
    return lo


@triton.jit
def _above_pivots(x, pivots, row_max, count, mass, BY_MASS: tl.constexpr):
    """count and (BY_MASS) mass tiles plus the entries of x above each pivot and their weights."""
    above = _order_key(x)[:, None] > pivots[None, :]
    count += above.to(tl.int32)
    if BY_MASS:
        mass += tl.where(above, _weight(x, row_max)[:, None], 0)
    return count, mass


@triton.jit
def _narrow(row_ptr, V, lo, hi, pop, max_pop, row_max, k, mass_limit, BY_MASS: tl.constexpr,
            TILE: tl.constexpr, NUM_PIVOTS: tl.constexpr, NUM_STAGES: tl.constexpr):
    """Shrink the cut's bracket [lo, hi] (no entry of the V at row_ptr lies above hi) until
    it is one key or holds at most max_pop entries (pop: its population, or anything above
    max_pop). Each step is one pass counting (and weighing) the entries above NUM_PIVOTS
    pivots, accumulated in [TILE, NUM_PIVOTS] tiles and reduced once after the pass.
    Returns the new lo, hi, pop and the count and mass of the entries above hi."""
    offs = tl.arange(0, TILE)
    count_hi = tl.zeros([], dtype=tl.int32)
    mass_hi = tl.zeros([], dtype=tl.int64)
    while (lo < hi) & (pop > max_pop):
        pivots = _pivots(lo, hi, NUM_PIVOTS)
        count = tl.zeros([TILE, NUM_PIVOTS], dtype=tl.int32)
        mass = tl.zeros([TILE, NUM_PIVOTS], dtype=tl.int64)
        for start in tl.range(0, V, 4 * TILE, num_stages=NUM_STAGES):
            # Four tiles' loads are issued before any of them is compared.
            x0 = _load_row(row_ptr + start + offs, start + offs < V)
            x1 = _load_row(row_ptr + start + TILE + offs, start + TILE + offs < V)
            x2 = _load_row(row_ptr + start + 2 * TILE + offs, start + 2 * TILE + offs < V)
            x3 = _load_row(row_ptr + start + 3 * TILE + offs, start + 3 * TILE + offs < V)
            count, mass = _above_pivots(x0, pivots, row_max, count, mass, BY_MASS)
            count, mass = _above_pivots(x1, pivots, row_max, count, mass, BY_MASS)
            count, mass = _above_pivots(x2, pivots, row_max, count, mass, BY_MASS)
            count, mass = _above_pivots(x3, pivots, row_max, count, mass, BY_MASS)
        count = tl.sum(count, axis=0)
        mass = tl.sum(mass, axis=0)
        if BY_MASS:
            holds = mass.to(tl.float32) < mass_limit
        else:
            holds = count < k
        # Counts and masses fall as the pivot rises: the smallest holding pivot is the new
        # hi, one past the largest failing pivot the new lo (pivot lo fails unless lo is
        # the cut, which ends the loop).
        new_hi = tl.min(tl.where(holds, pivots, hi), axis=0)
        count_lo = tl.min(tl.where(holds, INT32_MAX, count), axis=0)
        count_hi = tl.max(tl.where(holds, count, count_hi), axis=0)
        mass_hi = tl.max(tl.where(holds, mass, mass_hi), axis=0)
        lo = tl.max(tl.where(holds, lo, pivots + 1), axis=0)
        hi = new_hi
        pop = count_lo - count_hi
    return lo, hi, pop, count_hi, mass_hi


@triton.jit
def _collect(row_ptr, V, lo, hi, scratch_ptr, CAP: tl.constexpr, BLOCK: tl.constexpr,
             NUM_STAGES: tl.constexpr):
    """One pass: copy the entries with key in [lo, hi] to scratch in column order (the
    first CAP of them) and return how many there are."""
    # Columns go in groups of 8 (one thread's vector): a scan over the groups' counts and
    # one within each group give every entry its position.
    groups = tl.arange(0, BLOCK // 8)[:, None] * 8 + tl.arange(0, 8)[None, :]
    n = tl.zeros([], dtype=tl.int32)
    tl.debug_barrier()  # earlier reads of the scratch are done before it is overwritten
    for start in tl.range(0, V, BLOCK, num_stages=NUM_STAGES):
        idx = start + groups
        x = _load_row(row_ptr + idx, idx < V)
        key = _order_key(x)
        take = ((idx < V) & (key >= lo) & (key <= hi)).to(tl.int32)
        group_count = tl.sum(take, axis=1)
        group_end = tl.cumsum(group_count, axis=0)
        pos = n + (group_end - group_count)[:, None] + tl.cumsum(take, axis=1) - 1
        tl.store(scratch_ptr + pos, x, mask=(take == 1) & (pos < CAP))
        n += tl.sum(group_count, axis=0)
    tl.debug_barrier()  # the scratch is written before any thread reads it
    return n


@triton.jit
def _measure(row_ptr, V, lo, hi, mass_floor, row_max, BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """One pass: the number of entries with key in [lo, hi] and the mass of key >= mass_floor."""
    offs = tl.arange(0, BLOCK)
    n = tl.zeros([BLOCK], dtype=tl.int32)
    mass = tl.zeros([BLOCK], dtype=tl.int64)
    for start in tl.range(0, V, BLOCK, num_stages=NUM_STAGES):
        idx = start + offs
        x = _load_row(row_ptr + idx, idx < V)
        key = _order_key(x)
        n += ((idx < V) & (key >= lo) & (key <= hi)).to(tl.int32)
        mass += tl.where((idx < V) & (key >= mass_floor), _weight(x, row_max), 0)
    return tl.sum(n, axis=0), tl.sum(mass, axis=0)


@triton.jit
def _rank_cut(scratch_ptr, n, lo, hi, count_hi, mass_hi, row_max, k, mass_limit,
              BY_MASS: tl.constexpr, RANK_ROWS: tl.constexpr, RANK_COLS: tl.constexpr):
    """The cut from the n scratch entries, which include every entry with key in [lo, hi]
    (and maybe some below lo, none above hi); count_hi and mass_hi: count and mass of the
    row's entries above hi. The predicate only changes at entries' keys, so the cut is the
    smallest entry key in [lo, hi] at which it holds (hi if there is none). Counts and
    masses above RANK_ROWS entries at a time accumulate over [RANK_ROWS, RANK_COLS]
    compare tiles."""
    rows = tl.arange(0, RANK_ROWS)
    cols = tl.arange(0, RANK_COLS)
    cut = hi
    for i in range(0, n, RANK_ROWS):
        xi = _load_row(scratch_ptr + i + rows, i + rows < n)
        key_i = _order_key(xi)
        count = tl.zeros([RANK_ROWS, RANK_COLS], dtype=tl.int32)
        mass = tl.zeros([RANK_ROWS, RANK_COLS], dtype=tl.int64)
        for j in range(0, n, RANK_COLS):
            xj = _load_row(scratch_ptr + j + cols, j + cols < n)
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
def _find_cut(row_ptr, V, scratch_ptr, lo, hi, n, row_max, k, mass_limit, BY_MASS: tl.constexpr,
              CAP: tl.constexpr, BLOCK: tl.constexpr, TILE: tl.constexpr, NUM_PIVOTS: tl.constexpr,
              RANK_ROWS: tl.constexpr, RANK_COLS: tl.constexpr, NUM_STAGES: tl.constexpr):
    """The cut in [lo, hi] (hi: the row max's key) over the whole row; n: the bracket's
    population, or anything above CAP. Pivot steps shrink the bracket to at most CAP
    entries, which are collected to the scratch and ranked."""
    count_hi = tl.zeros([], dtype=tl.int32)
    mass_hi = tl.zeros([], dtype=tl.int64)
    if n > CAP:
        lo, hi, n, count_hi, mass_hi = _narrow(row_ptr, V, lo, hi, n, CAP, row_max, k, mass_limit,
                                               BY_MASS, TILE, NUM_PIVOTS, NUM_STAGES)
    cut = lo
    if lo < hi:
        n = _collect(row_ptr, V, lo, hi, scratch_ptr, CAP, BLOCK, NUM_STAGES)
        cut = _rank_cut(scratch_ptr, n, lo, hi, count_hi, mass_hi, row_max, k, mass_limit, BY_MASS,
                        RANK_ROWS, RANK_COLS)
    return cut


@triton.jit
def _candidates_cut(cand_ptr, n, lo, hi, row_max, k, mass_limit, BY_MASS: tl.constexpr,
                    RANK_CAP: tl.constexpr, TILE: tl.constexpr, NUM_PIVOTS: tl.constexpr,
                    RANK_ROWS: tl.constexpr, RANK_COLS: tl.constexpr):
    """The cut in [lo, hi] from the n candidates, which hold every entry of the row from
    lo up (hi: the row max's key): ranked when n <= RANK_CAP, else pivot steps down to one key."""
    if n <= RANK_CAP:
        cut = _rank_cut(cand_ptr, n, lo, hi, 0, 0, row_max, k, mass_limit, BY_MASS, RANK_ROWS, RANK_COLS)
    else:
        cut, _, _, _, _ = _narrow(cand_ptr, n, lo, hi, n, 0, row_max, k, mass_limit, BY_MASS,
                                  TILE, NUM_PIVOTS, 1)
    return cut


@triton.jit
def _whole_row_top_p(row_ptr, V, scratch_ptr, cut, key_hi, row_max, k, p, CAP: tl.constexpr,
                     BLOCK: tl.constexpr, TILE: tl.constexpr, NUM_PIVOTS: tl.constexpr,
                     RANK_ROWS: tl.constexpr, RANK_COLS: tl.constexpr, NUM_STAGES: tl.constexpr):
    """The top-p cut over the whole row, given the top-k cut `cut` (the min key when off)."""
    if row_max == float("inf"):
        cut = key_hi  # +inf survivors hold all the mass: only they are kept
    else:
        log_v = tl.log(V + tl.zeros([], dtype=tl.float32))
        bound = row_max - (log_v - tl.log(1.0 - p)) - 1.0
        lo = tl.minimum(tl.maximum(cut, _order_key(bound)), key_hi)
        n, mass = _measure(row_ptr, V, lo, key_hi, cut, row_max, BLOCK, NUM_STAGES)
        cut = _find_cut(row_ptr, V, scratch_ptr, lo, key_hi, n, row_max, k, p * mass.to(tl.float32), True,
                        CAP, BLOCK, TILE, NUM_PIVOTS, RANK_ROWS, RANK_COLS, NUM_STAGES)
    return cut


@triton.jit
def _write_row(row_ptr, V, cut, BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """Write -inf below the cut and over NaN, nothing else. Columns go in groups of 8: a
    group dropped whole is one vector store, the others are stored entry by entry."""
    groups = tl.arange(0, BLOCK // 8)[:, None] * 8 + tl.arange(0, 8)[None, :]
    neg_inf = tl.full([BLOCK // 8, 8], float("-inf"), tl.float32).to(row_ptr.dtype.element_ty)
    for start in tl.range(0, V, BLOCK, num_stages=NUM_STAGES):
        idx = start + groups
        in_row = idx < V
        x = to_fp32(tl.load(row_ptr + idx, mask=in_row, other=float("-inf"), cache_modifier=".cg"))
        drop = in_row & ((_order_key(x) < cut) | (x != x))  # NaN is never kept
        whole = tl.min(drop.to(tl.int32), axis=1)[:, None] == 1
        tl.store(row_ptr + idx, neg_inf, mask=whole)
        tl.store(row_ptr + idx, neg_inf, mask=drop & ~whole)


@triton.jit
def _chunk_bounds_kernel(logits_ptr, row_stride, k_ptr, p_ptr, part_ptr, V, guard_ptr,
                         GUARDED: tl.constexpr, HAS_K: tl.constexpr, HAS_P: tl.constexpr,
                         CHUNK: tl.constexpr, LANES: tl.constexpr, BOUND_STEPS: tl.constexpr,
                         NUM_PIVOTS: tl.constexpr):
    """Launch 1, program (row, chunk): the chunk's max key, min key and top-k bound L_j
    (INT32_MIN when none) to part[row, chunk, 0:3]."""
    row, row_ptr, k, p, active = _row_start(logits_ptr, row_stride, k_ptr, p_ptr, V, guard_ptr,
                                            GUARDED, HAS_K, HAS_P)
    chunk = tl.program_id(1)
    if active:
        idx = chunk * CHUNK + tl.arange(0, CHUNK)
        in_row = idx < V
        key = _order_key(_load_row(row_ptr + idx, in_row))
        max_key = tl.max(key, axis=0)
        min_key = tl.min(tl.where(in_row, key, INT32_MAX), axis=0)
        bound = tl.zeros([], dtype=tl.int32) + INT32_MIN
        if k <= LANES:
            # Lane maxima (masked columns read as -inf, the lowest key: a bound at or below
            # it is below every entry) are distinct entries: #(lanes >= c) >= k is a bound.
            lanes = tl.max(tl.reshape(key, [LANES, CHUNK // LANES]), axis=1)
            bound = _kth_largest_bound(lanes, k, tl.min(lanes, axis=0), max_key, BOUND_STEPS, NUM_PIVOTS)
        elif k <= tl.sum(in_row.to(tl.int32), axis=0):
            bound = min_key
        out = part_ptr + (row * tl.num_programs(1) + chunk) * 3
        tl.store(out, max_key)
        tl.store(out + 1, min_key)
        tl.store(out + 2, bound)


@triton.jit
def _top_k_top_p_kernel(logits_ptr, row_stride, k_ptr, p_ptr, part_ptr, cand_ptr, col_ptr, counter_ptr, V,
                        guard_ptr, GUARDED: tl.constexpr, HAS_K: tl.constexpr, HAS_P: tl.constexpr,
                        CHUNK: tl.constexpr, CAP2: tl.constexpr, RANK_CAP: tl.constexpr, TILE: tl.constexpr,
                        NUM_PIVOTS: tl.constexpr, BLOCK: tl.constexpr, CAP: tl.constexpr,
                        RANK_ROWS: tl.constexpr, RANK_COLS: tl.constexpr, NUM_STAGES: tl.constexpr):
    """Launch 2, program (row, chunk); the module docstring states the algorithm."""
    row, row_ptr, k, p, active = _row_start(logits_ptr, row_stride, k_ptr, p_ptr, V, guard_ptr,
                                            GUARDED, HAS_K, HAS_P)
    chunk = tl.program_id(1)
    splits = tl.num_programs(1)
    cand_ptr += row * CAP2
    col_ptr += row * CAP2
    counter_ptr += row * 2
    if active:
        # The row's max and min keys and L from the chunks' partial results.
        part = part_ptr + row * splits * 3
        parts = tl.arange(0, 64)
        key_hi = tl.zeros([], dtype=tl.int32) + INT32_MIN
        key_lo = tl.zeros([], dtype=tl.int32) + INT32_MAX
        bound = tl.zeros([], dtype=tl.int32) + INT32_MIN
        for s in range(0, splits, 64):
            here = s + parts < splits
            key_hi = tl.maximum(key_hi, tl.max(tl.load(part + (s + parts) * 3, mask=here, other=INT32_MIN), axis=0))
            key_lo = tl.minimum(key_lo, tl.min(tl.load(part + (s + parts) * 3 + 1, mask=here, other=INT32_MAX), axis=0))
            bound = tl.maximum(bound, tl.max(tl.load(part + (s + parts) * 3 + 2, mask=here, other=INT32_MIN), axis=0))
        row_max = _key_value(key_hi)
        row_max = tl.where(row_max == float("-inf"), 0.0, row_max)
        if k < V:
            # Entries below L (and NaN) are dropped; the others become candidates.
            cols = chunk * CHUNK + tl.arange(0, CHUNK)
            in_row = cols < V
            raw = to_fp32(tl.load(row_ptr + cols, mask=in_row, other=float("-inf"), cache_modifier=".cg"))
            x = tl.where(raw == raw, raw, float("-inf"))
            key = _order_key(x)
            take = (in_row & (key >= bound)).to(tl.int32)
            # One atomic reserves the chunk's run of candidate positions.
            pos = tl.atomic_add(counter_ptr, tl.sum(take, axis=0)) + tl.cumsum(take, axis=0) - 1
            take = take == 1
            tl.store(cand_ptr + pos, x, mask=take & (pos < CAP2))
            tl.store(col_ptr + pos, cols, mask=take & (pos < CAP2))
            neg_inf = tl.full([CHUNK], float("-inf"), tl.float32).to(logits_ptr.dtype.element_ty)
            tl.store(row_ptr + cols, neg_inf, mask=in_row & ((key < bound) | (raw != raw)))
            tl.debug_barrier()  # every thread's stores precede the ticket (released with it)
            ticket = tl.atomic_add(counter_ptr + 1, 1)
            if ticket == splits - 1:
                # The last chunk of the row: the others' candidates and writes are visible.
                tl.debug_barrier()
                n = tl.atomic_add(counter_ptr, 0)
                if n <= CAP2:
                    cut = _candidates_cut(cand_ptr, n, bound, key_hi, row_max, k, 0.0, False, RANK_CAP,
                                          TILE, NUM_PIVOTS, RANK_ROWS, RANK_COLS)
                    if HAS_P:
                        if (p < 1.0) & (row_max == float("inf")):
                            cut = key_hi
                        elif p < 1.0:
                            offs = tl.arange(0, TILE)
                            kept = tl.zeros([TILE], dtype=tl.int64)
                            for start in range(0, n, TILE):
                                xs = _load_row(cand_ptr + start + offs, start + offs < n)
                                kept += tl.where(_order_key(xs) >= cut, _weight(xs, row_max), 0)
                            mass_limit = p * tl.sum(kept, axis=0).to(tl.float32)
                            cut = _candidates_cut(cand_ptr, n, cut, key_hi, row_max, k, mass_limit, True,
                                                  RANK_CAP, TILE, NUM_PIVOTS, RANK_ROWS, RANK_COLS)
                    for start in range(0, n, CHUNK):
                        i = start + tl.arange(0, CHUNK)
                        xs = tl.load(cand_ptr + i, mask=i < n, other=0.0, cache_modifier=".cg")
                        drop = (i < n) & (_order_key(xs) < cut)
                        dst = tl.load(col_ptr + i, mask=drop, other=0, cache_modifier=".cg")
                        tl.store(row_ptr + dst, neg_inf, mask=drop)
                else:
                    cut = _find_cut(row_ptr, V, cand_ptr, bound, key_hi, V, row_max, k, 0.0, False, CAP, BLOCK,
                                    TILE, NUM_PIVOTS, RANK_ROWS, RANK_COLS, NUM_STAGES)
                    if HAS_P:
                        if p < 1.0:
                            cut = _whole_row_top_p(row_ptr, V, cand_ptr, cut, key_hi, row_max, k, p, CAP, BLOCK,
                                                   TILE, NUM_PIVOTS, RANK_ROWS, RANK_COLS, NUM_STAGES)
                    _write_row(row_ptr, V, cut, BLOCK, NUM_STAGES)
        elif chunk == 0:
            # Top-p alone: one program finds the cut over the whole row.
            cut = _whole_row_top_p(row_ptr, V, cand_ptr, key_lo, key_hi, row_max, k, p, CAP, BLOCK,
                                   TILE, NUM_PIVOTS, RANK_ROWS, RANK_COLS, NUM_STAGES)
            _write_row(row_ptr, V, cut, BLOCK, NUM_STAGES)


def apply_top_k_top_p(logits: torch.Tensor, k: torch.Tensor | None = None,
                      p: torch.Tensor | None = None) -> torch.Tensor:
    """Mask `logits` in place (see the module docstring) and return it."""
    flag = check_top_k_top_p(logits, k, p).settle()
    batch, vocab = logits.shape
    if batch == 0 or vocab == 0 or (k is None and p is None):
        return logits
    check_launchable(_top_k_top_p_kernel, logits)
    config = LAUNCH_CONFIG[logits.device.type]
    splits = triton.cdiv(vocab, config["CHUNK"])
    device = logits.device
    part = torch.empty((batch, splits, 3), dtype=torch.int32, device=device)
    candidates = torch.empty((batch, config["CAP2"]), dtype=torch.float32, device=device)
    columns = torch.empty((batch, config["CAP2"]), dtype=torch.int32, device=device)
    counters = torch.zeros((batch, 2), dtype=torch.int32, device=device)
    flags = dict(GUARDED=flag is not None, HAS_K=k is not None, HAS_P=p is not None)
    warps = {"num_warps": config["num_warps"]} if "num_warps" in config else {}
    _chunk_bounds_kernel[(batch, splits)](
        logits, logits.stride(0), k, p, part, vocab, flag, **flags, CHUNK=config["CHUNK"], LANES=config["LANES"],
        BOUND_STEPS=config["BOUND_STEPS"], NUM_PIVOTS=config["NUM_PIVOTS"], **warps,
    )
    _top_k_top_p_kernel[(batch, splits)](
        logits, logits.stride(0), k, p, part, candidates, columns, counters, vocab, flag, **flags,
        **{key: value for key, value in config.items() if key not in ("LANES", "BOUND_STEPS")},
    )
    return logits
