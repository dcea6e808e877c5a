"""Triton helpers of the top-k/top-p cut search, shared by the one-program-per-row kernel
(`samplecheck.kernels.top_k_top_p`) and the kernels that split rows over programs
(`samplecheck.kernels.top_k_top_p_split`, `samplecheck.kernels.top_k_split`,
`samplecheck.kernels.top_k_chunks`).

The cut is a key: every fp32 value maps to an int32 key with the same order
(`samplecheck.kernels.cut_keys.order_key`), and a row keeps the entries with key >= cut. The
cut is the smallest key at which a monotone predicate holds:
- top-k: #(key > c) < k;
- top-p: mass(key > c) < p * total, where mass sums `weight`s: exp(x - row max) in 2**-40
  fixed point (int64), and total is the mass of the entries with key >= a floor (the top-k
  cut, or the row's smallest key).
Integer sums are exact in any order, so a cut depends on neither the summation order nor the
way a row is split over programs. A bracket [lo, hi] holds the cut; search steps count (and
weigh) the entries above pivots to shrink it, and once at most CAP entries lie in it they
are copied to a scratch and ranked: a digit of the cut at a time by one program (`digit_cut`)
or against each other in compare tiles (`rank_cut`, which a row's several programs share).
"""

import triton
import triton.language as tl

from samplecheck.kernels.chunk_codes import low_zero_bits
from samplecheck.kernels.cut_keys import (INT32_MAX_JIT, INT32_MIN_JIT, key_value, load_row, merged_lanes,
                                          neg_inf_key, order_key, row_extremes, weight, write_below_cut)
from samplecheck.kernels.drop_store import group_columns, store_neg_inf
from samplecheck.kernels.rounding import to_fp32


@triton.jit
def spread_pivots(lo, hi, NUM_PIVOTS: tl.constexpr):
    """NUM_PIVOTS int32 keys spread over [lo, hi), the first one lo (all lo if lo == hi)."""
    lo64 = lo.to(tl.int64)
    steps = tl.arange(0, NUM_PIVOTS).to(tl.int64)
    return (lo64 + ((hi.to(tl.int64) - lo64) * steps) // NUM_PIVOTS).to(tl.int32)


@triton.jit
def kth_largest_bound(keys, k, lo, hi, STEPS: tl.constexpr, NUM_PIVOTS: tl.constexpr):
    """A key c in [lo, hi] close below the k-th largest of `keys` (in registers, at most hi;
    those below lo never count): STEPS NUM_PIVOTS-ary search steps over [lo, hi], each raising
    c only to a key with #(keys >= c) >= k, so c is lo or such a key."""
    for _ in tl.static_range(STEPS):
        pivots = spread_pivots(lo, hi, NUM_PIVOTS)
        count = tl.sum((keys[:, None] > pivots[None, :]).to(tl.int32), axis=0)
        holds = count < k
        new_hi = tl.min(tl.where(holds, pivots, hi), axis=0)
        lo = tl.max(tl.where(holds, lo, pivots + 1), axis=0)
        hi = new_hi
    return lo


@triton.jit
def tally_above(row_ptr, start, end, pivots, row_max, mass_floor, BY_MASS: tl.constexpr, TILE: tl.constexpr,
                NUM_PIVOTS: tl.constexpr, NUM_STAGES: tl.constexpr):
    """One pass over columns [start, end): the count and (BY_MASS) mass of the entries above
    each pivot, and the mass of the entries with key >= mass_floor."""
    offs = tl.arange(0, TILE)
    # Per-lane tallies, reduced across the tile once after the pass (a reduction per step
    # would synchronise the program's warps at every step). Pivots run along the first axis,
    # so each thread compares its own entries with every pivot and no entry moves.
    lane_count = tl.zeros([NUM_PIVOTS, TILE], dtype=tl.int32)
    lane_mass = tl.zeros([NUM_PIVOTS, TILE], dtype=tl.int64)
    lane_total = tl.zeros([TILE], dtype=tl.int64)
    for first in tl.range(start, end, TILE, num_stages=NUM_STAGES):
        idx = first + offs
        x = load_row(row_ptr + idx, idx < end)
        key = order_key(x)
        above = key[None, :] > pivots[:, None]
        lane_count += above.to(tl.int32)
        if BY_MASS:
            w = weight(x, row_max)
            lane_mass += tl.where(above, w[None, :], 0)
            lane_total += tl.where(key >= mass_floor, w, 0)
    return tl.sum(lane_count, axis=1), tl.sum(lane_mass, axis=1), tl.sum(lane_total, axis=0)


@triton.jit
def narrow_step(pivots, count, mass, lo, hi, count_hi, mass_hi, k, mass_limit, BY_MASS: tl.constexpr):
    """The bracket after one search step: `count`/`mass` above each pivot (in [lo, hi]) over
    the whole row; count_hi/mass_hi: those above hi. Returns lo, hi, the bracket's
    population and the new count_hi, mass_hi."""
    if BY_MASS:
        holds = mass.to(tl.float32) < mass_limit
    else:
        holds = count < k
    # Counts and masses fall as the pivot rises: the smallest holding pivot is the new hi,
    # one past the largest failing pivot the new lo (pivot lo fails unless lo is the cut).
    new_hi = tl.min(tl.where(holds, pivots, hi), axis=0)
    count_lo = tl.min(tl.where(holds, INT32_MAX_JIT, count), axis=0)
    count_hi = tl.max(tl.where(holds, count, count_hi), axis=0)
    mass_hi = tl.max(tl.where(holds, mass, mass_hi), axis=0)
    lo = tl.max(tl.where(holds, lo, pivots + 1), axis=0)
    return lo, new_hi, count_lo - count_hi, count_hi, mass_hi


@triton.jit
def narrow(row_ptr, V, lo, hi, pop, max_pop, count_hi, mass_hi, row_max, k, p, total, mass_floor, pivots,
           BY_MASS: tl.constexpr, TILE: tl.constexpr, NUM_PIVOTS: tl.constexpr, NUM_STAGES: tl.constexpr):
    """Shrink the cut's bracket [lo, hi] until it is one key or holds at most max_pop
    entries (pop: its population, or anything above max_pop; count_hi/mass_hi: the count
    and mass above hi). Each step is one pass over the row: `pivots` (any keys; clamped into
    [lo, hi]) at the first step, then keys spread evenly over the bracket. BY_MASS, each
    pass also sums `total`, the mass of the entries with key >= mass_floor, and the limit is
    p * total. Returns the new lo, hi, pop, count_hi, mass_hi and total."""
    while (lo < hi) & (pop > max_pop):
        pivots = tl.minimum(tl.maximum(pivots, lo), hi)
        count, mass, row_total = tally_above(row_ptr, 0, V, pivots, row_max, mass_floor, BY_MASS, TILE,
                                             NUM_PIVOTS, NUM_STAGES)
        if BY_MASS:
            total = row_total
        lo, hi, pop, count_hi, mass_hi = narrow_step(pivots, count, mass, lo, hi, count_hi, mass_hi, k,
                                                     p * total.to(tl.float32), BY_MASS)
        pivots = spread_pivots(lo, hi, NUM_PIVOTS)
    return lo, hi, pop, count_hi, mass_hi, total


@triton.jit
def compact_positions(take):
    """For a [G, 8] 0/1 tile laid out by `group_columns`: each taken entry's position among
    the taken ones in column order, and their number."""
    group_count = tl.sum(take, axis=1)
    group_end = tl.cumsum(group_count, axis=0)
    pos = (group_end - group_count)[:, None] + tl.cumsum(take, axis=1) - 1
    return pos, tl.sum(group_count, axis=0)


@triton.jit
def in_bracket(ptrs, mask, lo, hi):
    """Entries at `ptrs` (as `load_row` reads them: NaN as -inf), their keys, 1 where the key is
    in [lo, hi] (int32), and where the entry is NaN."""
    raw = to_fp32(tl.load(ptrs, mask=mask, other=float("-inf")))
    nan = raw != raw
    x = tl.where(nan, float("-inf"), raw)
    key = order_key(x)
    return x, key, (mask & (key >= lo) & (key <= hi)).to(tl.int32), nan


@triton.jit
def collect(row_ptr, V, lo, hi, scratch_ptr, row_max, mass_floor, WITH_MASS: tl.constexpr,
            CAP: tl.constexpr, BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr, DROP: tl.constexpr):
    """One pass: copy the entries with key in [lo, hi] to scratch in column order (the
    first CAP of them) and count them; WITH_MASS, also sum the mass of key >= mass_floor.
    DROP (lo at or below the row's cut): also write -inf at the entries with key below lo and
    at NaN, and store each copied entry's column (int32 bits) CAP entries after it, so that
    `write_cut` finishes the row from the scratch."""
    groups = group_columns(BLOCK)
    n = tl.zeros([], dtype=tl.int32)
    lane_mass = tl.zeros([BLOCK // 8, 8], dtype=tl.int64)  # reduced once, after the pass
    tl.debug_barrier()  # earlier reads of the scratch are done before it is overwritten
    for start in tl.range(0, V, BLOCK, num_stages=NUM_STAGES):
        idx = start + groups
        in_row = idx < V
        x, key, take, nan = in_bracket(row_ptr + idx, in_row, lo, hi)
        pos, taken = compact_positions(take)
        pos += n
        stored = (take == 1) & (pos < CAP)
        tl.store(scratch_ptr + pos, x, mask=stored)
        if DROP:
            tl.store(scratch_ptr + CAP + pos, idx.to(tl.float32, bitcast=True), mask=stored)
            store_neg_inf(row_ptr + idx, in_row & ((key < lo) | nan))
        n += taken
        if WITH_MASS:
            lane_mass += tl.where(in_row & (key >= mass_floor), weight(x, row_max), 0)
    tl.debug_barrier()  # the scratch is written before any thread reads it
    return n, tl.sum(tl.sum(lane_mass, axis=1), axis=0)


@triton.jit
def collect_chunk(row_ptr, start, end, lo, hi, counter_ptr, scratch_ptr, CAP: tl.constexpr, BLOCK: tl.constexpr,
                  NUM_STAGES: tl.constexpr, DROP: tl.constexpr):
    """One pass over columns [start, end) of a row split over programs: copy the entries with
    key in [lo, hi] to the row's scratch (CAP entries) at positions reserved by an atomic add
    at `counter_ptr` (int64), which ends at the population of [lo, hi] over every program;
    entries past CAP are counted, not stored. The scratch's order varies from run to run.
    DROP (lo at or below the row's cut), as `collect`'s: also write -inf at the entries with
    key below lo and at NaN, and store each copied entry's column CAP entries after it."""
    groups = group_columns(BLOCK)
    for first in tl.range(start, end, BLOCK, num_stages=NUM_STAGES):
        idx = first + groups
        live = idx < end
        x, key, take, nan = in_bracket(row_ptr + idx, live, lo, hi)
        # Prefix sums only for a block that holds a candidate: most blocks of a row hold none.
        if tl.sum(tl.sum(take, axis=1), axis=0) > 0:
            pos, taken = compact_positions(take)
            pos += tl.atomic_add(counter_ptr, taken.to(tl.int64)).to(tl.int32)
            stored = (take == 1) & (pos < CAP)
            tl.store(scratch_ptr + pos, x, mask=stored)
            if DROP:
                tl.store(scratch_ptr + CAP + pos, idx.to(tl.float32, bitcast=True), mask=stored)
        if DROP:
            store_neg_inf(row_ptr + idx, live & ((key < lo) | nan))


@triton.jit
def rank_cut(scratch_ptr, first, stride, n, lo, hi, count_hi, mass_hi, row_max, k, mass_limit,
             BY_MASS: tl.constexpr, RANK_ROWS: tl.constexpr, RANK_COLS: tl.constexpr):
    """The cut from the n scratch entries, which include every entry with key in [lo, hi]
    (and maybe some below lo); count_hi and mass_hi: count and mass of the row's entries
    above hi. The predicate only changes at entries' keys, so the cut is the smallest entry
    key in [lo, hi] at which it holds (hi if there is none). This call ranks the RANK_ROWS
    entries from `first` on, then from first + stride, ... (first = 0, stride = RANK_ROWS:
    all of them), each against all n, in [RANK_ROWS, RANK_COLS] compare tiles."""
    rows = tl.arange(0, RANK_ROWS)
    cols = tl.arange(0, RANK_COLS)
    cut = hi
    for i in range(first, n, stride):
        xi = tl.load(scratch_ptr + i + rows, mask=i + rows < n, other=float("-inf"))
        key_i = order_key(xi)
        count = tl.zeros([RANK_ROWS, RANK_COLS], dtype=tl.int32)
        mass = tl.zeros([RANK_ROWS, RANK_COLS], dtype=tl.int64)
        for j in range(0, n, RANK_COLS):
            xj = tl.load(scratch_ptr + j + cols, mask=j + cols < n, other=float("-inf"))
            above = order_key(xj)[None, :] > key_i[:, None]
            count += above.to(tl.int32)
            if BY_MASS:
                mass += tl.where(above, weight(xj, row_max)[None, :], 0)
        if BY_MASS:
            holds = (tl.sum(mass, axis=1) + mass_hi).to(tl.float32) < mass_limit
        else:
            holds = tl.sum(count, axis=1) + count_hi < k
        holds &= (i + rows < n) & (key_i >= lo) & (key_i <= hi)
        cut = tl.minimum(cut, tl.min(tl.where(holds, key_i, hi), axis=0))
    return cut


@triton.jit
def digit_cut(scratch_ptr, n, lo, hi, count_hi, mass_hi, row_max, k, mass_limit, BY_MASS: tl.constexpr,
              LOW_BITS: tl.constexpr, DIGIT_BITS: tl.constexpr, ROWS: tl.constexpr):
    """`rank_cut` of all n scratch entries by one program, a digit of the cut at a time: keys
    biased to [0, 2**32) keep their order, and the cut's bits are fixed DIGIT_BITS a step from
    the top down to LOW_BITS (below which a scratch key's bits depend on its sign alone:
    `low_zero_bits`). A step counts (and, BY_MASS, weighs) the next digit of the bracket's
    entries that share the fixed bits, in [ROWS, 2**DIGIT_BITS] tiles; the count or mass above
    a digit's largest entry is what lies above the shared bits (count_hi/mass_hi and the
    earlier steps' higher digits) plus the higher digits' sums, so the predicate, monotone,
    holds for some entry of a digit exactly when it holds there: the cut's digit is the
    smallest present digit where it holds. A step where lo and hi share the digit takes it
    unread. hi where no entry holds."""
    rows = tl.arange(0, ROWS)
    digits = tl.arange(0, 1 << DIGIT_BITS)
    lo_biased = lo.to(tl.int64) - INT32_MIN_JIT
    hi_biased = hi.to(tl.int64) - INT32_MIN_JIT
    cut = tl.zeros([], dtype=tl.int64)  # the biased cut's bits fixed so far
    count_above = count_hi  # count and mass above the entries that share the fixed bits
    mass_above = mass_hi
    found = tl.full([], 1, tl.int1)
    for shift in range(32 - DIGIT_BITS, LOW_BITS - DIGIT_BITS, -DIGIT_BITS):
        if (lo_biased >> shift) == (hi_biased >> shift):
            cut += ((lo_biased >> shift) & ((1 << DIGIT_BITS) - 1)) << shift
        elif found:
            count_tile = tl.zeros([ROWS, 1 << DIGIT_BITS], dtype=tl.int32)
            mass_tile = tl.zeros([ROWS, 1 << DIGIT_BITS], dtype=tl.int64)
            for first in range(0, n, ROWS):
                live = first + rows < n
                x = tl.load(scratch_ptr + first + rows, mask=live, other=float("-inf"))
                key = order_key(x)
                biased = key.to(tl.int64) - INT32_MIN_JIT
                sharing = live & (key >= lo) & (key <= hi) & ((biased >> (shift + DIGIT_BITS)) ==
                                                              (cut >> (shift + DIGIT_BITS)))
                digit = (biased >> shift) & ((1 << DIGIT_BITS) - 1)
                at = sharing[:, None] & (digit[:, None] == digits[None, :])
                count_tile += at.to(tl.int32)
                if BY_MASS:
                    mass_tile += tl.where(at, weight(x, row_max)[:, None], 0)
            counts = tl.sum(count_tile, axis=0)
            count_higher = tl.sum(counts, axis=0) - tl.cumsum(counts, axis=0)
            if BY_MASS:
                masses = tl.sum(mass_tile, axis=0)
                mass_higher = tl.sum(masses, axis=0) - tl.cumsum(masses, axis=0)
                holds = (mass_above + mass_higher).to(tl.float32) < mass_limit
            else:
                holds = count_above + count_higher < k
            chosen = tl.min(tl.where(holds & (counts > 0), digits, 1 << DIGIT_BITS), axis=0)
            found = chosen < (1 << DIGIT_BITS)
            count_above += tl.sum(tl.where(digits == chosen, count_higher, 0), axis=0)
            if BY_MASS:
                mass_above += tl.sum(tl.where(digits == chosen, mass_higher, 0), axis=0)
            cut += chosen.to(tl.int64) << shift
    # Below the last digit an entry's key holds the sign's constant bits: 0 for a positive key, 1
    # for a negative one (`order_key` flips a negative value's bits).
    cut = tl.where(cut >> 31 == 0, cut | ((1 << (LOW_BITS // DIGIT_BITS * DIGIT_BITS)) - 1), cut)
    return tl.where(found, (cut + INT32_MIN_JIT).to(tl.int32), hi)


@triton.jit
def find_cut(row_ptr, V, scratch_ptr, lo, hi, n, count_hi, mass_hi, row_max, k, p, total, mass_floor, pivots,
             BY_MASS: tl.constexpr, CAP: tl.constexpr, BLOCK: tl.constexpr, TILE: tl.constexpr,
             NUM_PIVOTS: tl.constexpr, RANK_ROWS: tl.constexpr, RANK_COLS: tl.constexpr,
             NUM_STAGES: tl.constexpr, DROP: tl.constexpr):
    """The cut in [lo, hi] (count_hi/mass_hi: count and mass above hi), by one program.
    n <= CAP: the scratch holds n entries, every entry with key in [lo, hi] and maybe some
    below lo, and `total` is the mass of key >= mass_floor (BY_MASS). n > CAP: it does not
    (n is the bracket's population or V); full-row search steps (first pivots: `pivots`)
    shrink the bracket and sum `total` first, and the bracket's entries are collected then.
    The scratch is ranked in [RANK_ROWS, RANK_COLS] compare tiles (`rank_cut`), or a digit at a
    time where RANK_ROWS is 0 (`digit_cut`: 4-bit digits, 8 steps at most for fp32 logits and 4
    for bf16, in [128, 16] tiles, whose int64 masses take 16 registers a thread at 8 warps): the
    same cut.
    DROP: lo is at or below the row's cut, and every pass that filled the scratch was a
    `collect` with DROP (so is this one's). Returns the cut, the scratch's entry count,
    whether the scratch holds every entry from the cut up, and the number of scratch entries
    `write_cut` may finish the row from: with DROP, that count where the scratch holds the
    whole bracket; else -1."""
    collected = n <= CAP
    listed = tl.zeros([], dtype=tl.int32) - 1
    if DROP:
        listed = tl.where(collected, n, -1)
    if n > CAP:
        lo, hi, n, count_hi, mass_hi, total = narrow(row_ptr, V, lo, hi, n, CAP, count_hi, mass_hi, row_max, k, p,
                                                     total, mass_floor, pivots, BY_MASS, TILE, NUM_PIVOTS,
                                                     NUM_STAGES)
        collected = lo < hi  # else the cut is lo
        if collected:
            n, _ = collect(row_ptr, V, lo, hi, scratch_ptr, row_max, lo, False, CAP, BLOCK, NUM_STAGES, DROP)
            if DROP:
                listed = n  # at most CAP: the narrowed bracket's population
    cut = lo
    if collected:
        if RANK_ROWS == 0:
            cut = digit_cut(scratch_ptr, n, lo, hi, count_hi, mass_hi, row_max, k, p * total.to(tl.float32),
                            BY_MASS, low_zero_bits(row_ptr.dtype.element_ty), 4, 128)
        else:
            cut = rank_cut(scratch_ptr, 0, RANK_ROWS, n, lo, hi, count_hi, mass_hi, row_max, k,
                           p * total.to(tl.float32), BY_MASS, RANK_ROWS, RANK_COLS)
    return cut, n, collected & (count_hi == 0), listed


@triton.jit
def sampled_cut_pivots(sample, row_max, p, mass_floor, V, CAP: tl.constexpr, SAMPLE: tl.constexpr,
                       NUM_PIVOTS: tl.constexpr):
    """NUM_PIVOTS keys around the top-p cut that the sample (keys, largest first) predicts:
    the sample entry where its mass of key >= mass_floor first reaches p, and entries
    0, 1, 3, 5, 8, 11, 16, ... steps away on either side, where a step of the sample holds
    about CAP / 2 of the row's entries. A guess only: the search checks every pivot against
    the whole row."""
    w = tl.where(sample >= mass_floor, tl.exp(key_value(sample) - row_max), 0.0)
    mass = tl.cumsum(w, axis=0)
    at = tl.sum((mass < p * tl.sum(w, axis=0)).to(tl.int32), axis=0)
    step = tl.maximum((CAP * SAMPLE) // (2 * V), 1)
    t = tl.arange(0, NUM_PIVOTS) - NUM_PIVOTS // 2
    growth = tl.minimum(tl.exp2(tl.abs(t).to(tl.float32) * 0.585), SAMPLE)  # about 1.5 ** |t|
    reach = tl.abs(t) + growth.to(tl.int32) - 1  # 0, 1, 3, 5, 8, 11, 16, ...
    at = tl.minimum(tl.maximum(at + tl.where(t < 0, -reach, reach) * step, 0), SAMPLE - 1)
    return tl.sum(tl.where(tl.arange(0, SAMPLE)[None, :] == at[:, None], sample[None, :], 0), axis=1)


@triton.jit
def top_p_first_step(row_ptr, V, mass_floor, key_hi, row_max, p, CAP: tl.constexpr, SAMPLE: tl.constexpr,
                     NUM_PIVOTS: tl.constexpr):
    """Where the top-p search starts (p < 1, a finite row max): its bracket's lo (the bound:
    entries below row_max - ln(V / (1 - p)) - 1 hold less than 1 - p of the mass; never below
    mass_floor), its first pivots, and whether those come from the sample. SAMPLE entries
    (columns (i * V) // SAMPLE) are read; when more than CAP / 2 of the row's entries lie in
    the bracket by their count (and V > CAP), the pivots are placed around the cut they
    predict (`sampled_cut_pivots`), else spread evenly over the bracket."""
    sample_cols = (tl.arange(0, SAMPLE).to(tl.int64) * V) // SAMPLE
    log_v = tl.log(V + tl.zeros([], dtype=tl.float32))
    bound = row_max - (log_v - tl.log(1.0 - p)) - 1.0
    lo = tl.minimum(tl.maximum(mass_floor, order_key(bound)), key_hi)
    pivots = spread_pivots(lo, key_hi, NUM_PIVOTS)
    sample = order_key(load_row(row_ptr + sample_cols, sample_cols < V))
    above = tl.sum(((sample >= lo) & (sample <= key_hi)).to(tl.int64), axis=0)
    sampled = (above * V > (CAP // 2) * SAMPLE) & (V > CAP)
    if sampled:
        pivots = sampled_cut_pivots(tl.sort(sample, descending=True), row_max, p, mass_floor, V, CAP, SAMPLE,
                                    NUM_PIVOTS)
    return lo, pivots, sampled


@triton.jit
def lanes_bound(lanes, k, key_lo, key_hi, STEPS: tl.constexpr, NUM_PIVOTS: tl.constexpr):
    """`kth_largest_bound` over lane maxima `lanes` (distinct entries of a row; -inf's key for
    a lane without one) from their smallest above -inf when at least k are (at or below the
    k-th largest of them, so of the row's entries), else from key_lo, the row's smallest key
    above -inf."""
    finite = lanes > neg_inf_key()
    smallest = tl.min(tl.where(finite, lanes, key_hi), axis=0)
    start = tl.where(tl.sum(finite.to(tl.int32), axis=0) >= k, smallest, key_lo)
    return kth_largest_bound(lanes, k, start, key_hi, STEPS, NUM_PIVOTS)


@triton.jit
def top_k_cut(row_ptr, V, k, scratch_ptr, lane_max, row_max, key_lo, key_hi, BLOCK: tl.constexpr,
              NUM_STAGES: tl.constexpr, LANES: tl.constexpr, BOUND_STEPS: tl.constexpr, TILE: tl.constexpr,
              NUM_PIVOTS: tl.constexpr, CAP: tl.constexpr, RANK_ROWS: tl.constexpr, RANK_COLS: tl.constexpr,
              DROP: tl.constexpr):
    """The top-k cut of a row with 0 < k < V, from its `row_extremes`, as `find_cut` returns it
    (cut, candidates in the scratch, whether they hold every survivor), and the scratch's
    entries `write_cut` may finish the row from (-1: none): the bracket, from the row's
    smallest key above -inf (key_lo), raised to the k-th largest lane maximum's bound where
    k <= LANES, candidates collected (`collect`, with DROP) when that bound applies or the row
    fits the scratch, then searched."""
    zero_mass = tl.zeros([], dtype=tl.int64)
    n = tl.zeros([], dtype=tl.int32) + V
    lo = key_lo
    if (k <= LANES) | (V <= CAP):
        if k <= LANES:
            lanes = merged_lanes(lane_max, LANES, BLOCK)
            lo = lanes_bound(lanes, k, key_lo, key_hi, BOUND_STEPS, NUM_PIVOTS)
        n, _ = collect(row_ptr, V, lo, key_hi, scratch_ptr, row_max, lo, False, CAP, BLOCK, NUM_STAGES, DROP)
    return find_cut(row_ptr, V, scratch_ptr, lo, key_hi, n, tl.zeros([], dtype=tl.int32), zero_mass, row_max, k,
                    1.0, zero_mass, key_lo, spread_pivots(lo, key_hi, NUM_PIVOTS), False, CAP, BLOCK, TILE,
                    NUM_PIVOTS, RANK_ROWS, RANK_COLS, NUM_STAGES, DROP)


@triton.jit
def row_cut(row_ptr, V, k, p, scratch_ptr, HAS_K: tl.constexpr, HAS_P: tl.constexpr, BLOCK: tl.constexpr,
            NUM_STAGES: tl.constexpr, LANES: tl.constexpr, BOUND_STEPS: tl.constexpr, TILE: tl.constexpr,
            NUM_PIVOTS: tl.constexpr, CAP: tl.constexpr, RANK_ROWS: tl.constexpr, RANK_COLS: tl.constexpr,
            SAMPLE: tl.constexpr, DROP: tl.constexpr):
    """The cut of a row with top-k or top-p on (k < V or p < 1; `row_params.row_k_p`), found by
    one program with a CAP-entry fp32 scratch (2 * CAP entries with DROP): the algorithm
    `samplecheck.kernels.top_k_top_p`'s module docstring states (pass 1, the top-k cut, then
    the top-p cut over its survivors). Returns the cut and what `write_cut` needs: with DROP,
    each candidate pass writes -inf below its bracket (at or below the cut) and at NaN and
    lists its candidates' columns, and `listed` is the number of scratch entries that list
    every entry the row still has below the cut (-1: none do, and `write_cut` makes a pass)."""
    zero_count = tl.zeros([], dtype=tl.int32)
    zero_mass = tl.zeros([], dtype=tl.int64)
    # Pass 1: the row max, the min key and the lane maxima.
    lane_max, row_max, key_lo, key_hi = row_extremes(row_ptr, V, BLOCK, NUM_STAGES)
    cut = key_lo
    n = tl.zeros([], dtype=tl.int32) + V
    covered = tl.zeros([], dtype=tl.int1)
    listed = tl.zeros([], dtype=tl.int32) - 1
    if HAS_K:
        if k < V:
            cut, n, covered, listed = top_k_cut(row_ptr, V, k, scratch_ptr, lane_max, row_max, key_lo, key_hi,
                                                BLOCK, NUM_STAGES, LANES, BOUND_STEPS, TILE, NUM_PIVOTS, CAP,
                                                RANK_ROWS, RANK_COLS, DROP)
    if HAS_P:
        if (p < 1.0) & (row_max == float("inf")):
            cut = key_hi  # +inf survivors hold all the mass: only they are kept
            listed = tl.where(covered, listed, -1)  # a narrowed top-k bracket may end below key_hi
        elif p < 1.0:
            if covered:
                # The scratch holds every top-k survivor (n <= CAP): weigh them there.
                idx = tl.arange(0, CAP)
                x = tl.load(scratch_ptr + idx, mask=idx < n, other=float("-inf"))
                lo = cut
                mass = tl.sum(tl.where(order_key(x) >= cut, weight(x, row_max), 0), axis=0)
                pivots = spread_pivots(lo, key_hi, NUM_PIVOTS)
            else:
                # When the sample says that more than CAP / 2 entries lie in the bracket,
                # it is narrowed from the pivots the sample predicts, without collecting it.
                lo, pivots, sampled = top_p_first_step(row_ptr, V, cut, key_hi, row_max, p, CAP, SAMPLE,
                                                       NUM_PIVOTS)
                mass = zero_mass
                if sampled:
                    n = tl.zeros([], dtype=tl.int32) + V
                else:
                    n, mass = collect(row_ptr, V, lo, key_hi, scratch_ptr, row_max, cut, True, CAP, BLOCK,
                                      NUM_STAGES, DROP)
            cut, _, _, listed = find_cut(row_ptr, V, scratch_ptr, lo, key_hi, n, zero_count, zero_mass, row_max, k,
                                         p, mass, cut, pivots, True, CAP, BLOCK, TILE, NUM_PIVOTS, RANK_ROWS,
                                         RANK_COLS, NUM_STAGES, DROP)
    return cut, listed


@triton.jit
def write_cut(row_ptr, V, cut, scratch_ptr, listed, CAP: tl.constexpr, BLOCK: tl.constexpr,
              NUM_STAGES: tl.constexpr):
    """-inf at every entry with key below cut and at NaN, nothing else, after `row_cut`: where
    `listed` >= 0, its collect wrote the entries below its bracket and NaN, and the scratch's
    first `listed` entries (their columns CAP entries after them) are the rest of the row, so
    only those are written; else one pass over the row (`write_below_cut`)."""
    if listed >= 0:
        neg_inf = tl.full([BLOCK], float("-inf"), tl.float32).to(row_ptr.dtype.element_ty)
        for start in range(0, listed, BLOCK):
            i = start + tl.arange(0, BLOCK)
            live = i < listed
            x = tl.load(scratch_ptr + i, mask=live, other=0.0)
            column = tl.load(scratch_ptr + CAP + i, mask=live, other=0.0).to(tl.int32, bitcast=True)
            tl.store(row_ptr + column, neg_inf, mask=live & (order_key(x) < cut))
    else:
        write_below_cut(row_ptr, 0, V, cut, BLOCK, NUM_STAGES)
