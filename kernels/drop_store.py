"""Writing -inf at a row's dropped entries and nothing else, as vectors where it can.

A masked store whose mask varies within a thread's vector is split into one store per entry
(2-byte stores for bf16/fp16). Kernels that drop entries therefore tile their columns in
groups of 8 adjacent columns (`group_columns`: 16 bytes of bf16/fp16, one thread's vector):
a group dropped whole is written with one vector store, and only the groups that keep an
entry are written entry by entry (`store_neg_inf`). Kept entries are never written.
"""

import triton
import triton.language as tl


@triton.jit
def group_columns(BLOCK: tl.constexpr):
    """Column offsets 0 .. BLOCK - 1 as a [BLOCK // 8, 8] tile: row g holds columns 8g .. 8g + 7."""
    return tl.arange(0, BLOCK // 8)[:, None] * 8 + tl.arange(0, 8)[None, :]


@triton.jit
def store_neg_inf(ptrs, drop):
    """Store -inf at `ptrs` where `drop` ([G, 8] tiles laid out by `group_columns`), nothing
    elsewhere."""
    neg_inf = tl.full(ptrs.shape, float("-inf"), tl.float32).to(ptrs.dtype.element_ty)
    whole = tl.min(drop.to(tl.int32), axis=1)[:, None] == 1
    tl.store(ptrs, neg_inf, mask=whole)
    tl.store(ptrs, neg_inf, mask=drop & ~whole)
