"""Triton top-k then top-p masking, in place, with the keep-all-ties policy.

Contract (the oracle `oracles.top_k_top_p` states the semantics in full):
- `logits` [B, V] fp32/bf16/fp16, any row stride, column stride 1. Loads upcast to fp32;
  no fp32 copy is made. Masked entries are set to -inf in place; kept entries and the
  row-stride gaps are never written.
- `k` [B] int32/int64 or None: k <= 0 or k >= V turns top-k off for that row.
- `p` [B] float32 or None, in (0, 1]: p == 1 turns top-p off for that row.
- Top-p applies after top-k, on the renormalised survivors.

Algorithm, per row (one program): no sort. Every fp32 value maps to an int32 key with the
same order. The kept set is always {x : key(x) >= c} for a cut key c, the smallest key at
which a monotone predicate holds:
- top-k: #(key > c) < k;
- top-p: mass(key > c) < p * mass(top-k survivors).
The cut is found by a NUM_PIVOTS-ary search over the key range, one pass over the row per
step (32-bit keys take log(2**32) / log(NUM_PIVOTS) steps), after one pass for the max and the key range, and
before one pass that writes -inf.
"""

import torch
import triton
import triton.language as tl

from kernels.runtime import check_launchable
from kernels.validation import check_top_k_top_p

# (BLOCK, NUM_PIVOTS) by device. On a GPU the [BLOCK, NUM_PIVOTS] tile must fit in
# registers; the CPU interpreter pays per operation, so it takes wide tiles. The cut found
# does not depend on NUM_PIVOTS; BLOCK sets the fp32 summation order of the mass.
LAUNCH_CONFIG = {"cuda": (1024, 32), "cpu": (4096, 256)}


@triton.jit
def _order_key(x):
    """int32 key with key(a) < key(b) iff a < b for fp32 a, b (-0.0 folded into +0.0)."""
    x = tl.where(x == 0.0, 0.0, x)
    bits = x.to(tl.int32, bitcast=True)
    return bits ^ ((bits >> 31) & 0x7FFFFFFF)


@triton.jit
def _search_cut(row_ptr, V, lo, hi, row_max, k, mass_limit,
                BY_MASS: tl.constexpr, BLOCK: tl.constexpr, NUM_PIVOTS: tl.constexpr):
    """Smallest key c in [lo, hi] with count(key > c) < k (BY_MASS=False) or
    mass(key > c) < mass_limit (BY_MASS=True). The predicate must hold at hi."""
    offs = tl.arange(0, BLOCK)
    steps = tl.arange(0, NUM_PIVOTS).to(tl.int64)
    while lo < hi:
        pivots = lo + ((hi - lo) * steps) // NUM_PIVOTS
        pivots32 = pivots.to(tl.int32)
        count = tl.zeros([NUM_PIVOTS], dtype=tl.int32)
        mass = tl.zeros([NUM_PIVOTS], dtype=tl.float32)
        for start in range(0, V, BLOCK):
            idx = start + offs
            x = tl.load(row_ptr + idx, mask=idx < V, other=float("-inf")).to(tl.float32)
            above = _order_key(x)[:, None] > pivots32[None, :]
            if BY_MASS:
                e = tl.exp(x - row_max)
                mass += tl.sum(tl.where(above, e[:, None], 0.0), axis=0)
            else:
                count += tl.sum(above.to(tl.int32), axis=0)
        if BY_MASS:
            holds = mass < mass_limit
        else:
            holds = count < k
        new_hi = tl.min(tl.where(holds, pivots, hi), axis=0)
        lo = tl.max(tl.where(holds, lo, pivots + 1), axis=0)
        hi = new_hi
    return lo


@triton.jit(do_not_specialize=["row_stride", "V"])
def _top_k_top_p_kernel(logits_ptr, row_stride, k_ptr, p_ptr, V,
                        HAS_K: tl.constexpr, HAS_P: tl.constexpr,
                        BLOCK: tl.constexpr, NUM_PIVOTS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    row_ptr = logits_ptr + row * row_stride
    offs = tl.arange(0, BLOCK)
    k = V.to(tl.int64)
    if HAS_K:
        k_row = tl.load(k_ptr + row).to(tl.int64)
        k = tl.where((k_row > 0) & (k_row < V), k_row, V)
    p = 1.0
    if HAS_P:
        p = tl.load(p_ptr + row).to(tl.float32)
    if (k < V) | (p < 1.0):
        # Pass 1: the row max and the key range.
        row_max = float("-inf")
        lo = tl.full([], 2147483647, tl.int64)
        hi = tl.full([], -2147483648, tl.int64)
        for start in range(0, V, BLOCK):
            idx = start + offs
            in_row = idx < V
            x = tl.load(row_ptr + idx, mask=in_row, other=float("-inf")).to(tl.float32)
            key = _order_key(x).to(tl.int64)
            row_max = tl.maximum(row_max, tl.max(x, axis=0))
            lo = tl.minimum(lo, tl.min(tl.where(in_row, key, 2147483647), axis=0))
            hi = tl.maximum(hi, tl.max(tl.where(in_row, key, -2147483648), axis=0))
        row_max = tl.where(row_max == float("-inf"), 0.0, row_max)
        cut = lo
        if HAS_K:
            if k < V:
                cut = _search_cut(row_ptr, V, lo, hi, row_max, k, 0.0, False, BLOCK, NUM_PIVOTS)
        if HAS_P:
            if p < 1.0:
                kept_mass = tl.zeros([BLOCK], dtype=tl.float32)
                for start in range(0, V, BLOCK):
                    idx = start + offs
                    x = tl.load(row_ptr + idx, mask=idx < V, other=float("-inf")).to(tl.float32)
                    kept_mass += tl.where(_order_key(x).to(tl.int64) >= cut, tl.exp(x - row_max), 0.0)
                mass_limit = p * tl.sum(kept_mass, axis=0)
                cut = _search_cut(row_ptr, V, cut, hi, row_max, k, mass_limit, True, BLOCK, NUM_PIVOTS)
        # Final pass: write -inf below the cut, nothing else.
        neg_inf = tl.full([BLOCK], float("-inf"), tl.float32).to(logits_ptr.dtype.element_ty)
        for start in range(0, V, BLOCK):
            idx = start + offs
            in_row = idx < V
            x = tl.load(row_ptr + idx, mask=in_row, other=float("-inf")).to(tl.float32)
            drop = in_row & (_order_key(x).to(tl.int64) < cut)
            tl.store(row_ptr + idx, neg_inf, mask=drop)


def apply_top_k_top_p(logits: torch.Tensor, k: torch.Tensor | None = None,
                      p: torch.Tensor | None = None) -> torch.Tensor:
    """Mask `logits` in place (see the module docstring) and return it."""
    check_top_k_top_p(logits, k, p)
    batch, vocab = logits.shape
    if batch == 0 or vocab == 0 or (k is None and p is None):
        return logits
    check_launchable(_top_k_top_p_kernel, logits)
    block, num_pivots = LAUNCH_CONFIG[logits.device.type]
    _top_k_top_p_kernel[(batch,)](
        logits, logits.stride(0), k, p, vocab,
        HAS_K=k is not None, HAS_P=p is not None, BLOCK=block, NUM_PIVOTS=num_pivots,
    )
    return logits
