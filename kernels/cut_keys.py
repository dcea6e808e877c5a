"""Keys of fp32 values and the streaming passes over a row that read them, for the top-k/top-p
cut search (`samplecheck.kernels.cut_search`) and the kernels that select by key.

Every fp32 value maps to an int32 key with the same order (`order_key`); a row keeps the
entries with key >= its cut. A row's mass sums `weight`s, exp(x - row max) in 2**-40 fixed
point (int64), exact in any order.
"""

import triton
import triton.language as tl

from samplecheck.kernels.drop_store import group_columns, store_neg_inf
from samplecheck.kernels.rounding import to_fp32

INT32_MAX_JIT = tl.constexpr(2**31 - 1)
INT32_MIN_JIT = tl.constexpr(-2**31)


@triton.jit
def order_key(x):
    """int32 key with key(a) < key(b) iff a < b for fp32 a, b (-0.0 folded into +0.0)."""
    x = tl.where(x == 0.0, 0.0, x)
    bits = x.to(tl.int32, bitcast=True)
    return bits ^ ((bits >> 31) & 0x7FFFFFFF)


@triton.jit
def neg_inf_key():
    """`order_key(-inf)`: below every other value's key (a lane without an entry holds it)."""
    return order_key(tl.full([], float("-inf"), tl.float32))


@triton.jit
def key_value(key):
    """The fp32 value of an int32 key (`order_key` is its own inverse on the bits)."""
    return (key ^ ((key >> 31) & 0x7FFFFFFF)).to(tl.float32, bitcast=True)


@triton.jit
def load_row(ptrs, mask):
    """Row entries in fp32 (exact upcast), -inf where masked off; NaN reads as -inf."""
    x = to_fp32(tl.load(ptrs, mask=mask, other=float("-inf")))
    return tl.where(x == x, x, float("-inf"))


@triton.jit
def lane_extremes(row_ptr, start, end, BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """One pass over columns [start, end): per lane (lane j sees the columns start + j mod
    BLOCK) the max (-inf for no column) and the min above -inf (+inf for none), NaN read as
    -inf."""
    offs = tl.arange(0, BLOCK)
    lane_max = tl.full([BLOCK], float("-inf"), tl.float32)
    lane_min = tl.full([BLOCK], float("inf"), tl.float32)
    for first in tl.range(start, end, BLOCK, num_stages=NUM_STAGES):
        idx = first + offs
        live = idx < end
        x = load_row(row_ptr + idx, live)
        lane_max = tl.maximum(lane_max, x)
        lane_min = tl.minimum(lane_min, tl.where(x > float("-inf"), x, float("inf")))
    return lane_max, lane_min


@triton.jit
def merged_lanes(lane_max, LANES: tl.constexpr, BLOCK: tl.constexpr):
    """The keys of `lane_extremes`' BLOCK lane maxima merged into LANES lanes of adjacent
    lanes: each still the max of distinct entries (-inf's key for a lane with no column)."""
    return tl.max(tl.reshape(order_key(lane_max), [LANES, BLOCK // LANES]), axis=1)


@triton.jit
def row_extremes(row_ptr, V, BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """One pass over the row (`lane_extremes`): (the lane maxima, the row max, 0 for a row of
    -inf and NaN only, the keys of the row's smallest entry above -inf and of its max; the
    max's for a row of -inf and NaN only)."""
    lane_max, lane_min = lane_extremes(row_ptr, 0, V, BLOCK, NUM_STAGES)
    row_max = tl.max(lane_max, axis=0)
    key_hi = order_key(row_max)
    key_lo = tl.minimum(order_key(tl.min(lane_min, axis=0)), key_hi)
    return lane_max, tl.where(row_max == float("-inf"), 0.0, row_max), key_lo, key_hi


@triton.jit
def write_below_cut(row_ptr, start, end, cut, BLOCK: tl.constexpr, NUM_STAGES: tl.constexpr):
    """One pass over columns [start, end): -inf at every entry with key < cut and at NaN (never
    kept); nothing else is written."""
    groups = group_columns(BLOCK)
    for first in tl.range(start, end, BLOCK, num_stages=NUM_STAGES):
        idx = first + groups
        live = idx < end
        x = to_fp32(tl.load(row_ptr + idx, mask=live, other=float("-inf")))
        store_neg_inf(row_ptr + idx, live & ((order_key(x) < cut) | (x != x)))


@triton.jit
def weight(x, row_max):
    """exp(x - row_max) in 2**-40 fixed point: masses are int64 sums, exact in any order."""
    return (tl.exp(x - row_max) * 1099511627776.0).to(tl.int64)
