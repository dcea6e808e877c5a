"""Triton helpers shared by kernels that split a row over several programs."""

import triton
import triton.language as tl


@triton.jit
def max_of_chunk_maxima(maxima_ptr, row, splits, SPLIT_BLOCK: tl.constexpr):
    """The max of the row's `splits` chunk maxima (a contiguous [B, splits] fp32 scratch;
    exact in any order)."""
    offs = tl.arange(0, SPLIT_BLOCK)
    lane_max = tl.full([SPLIT_BLOCK], float("-inf"), tl.float32)
    for start in range(0, splits, SPLIT_BLOCK):
        s = start + offs
        lane_max = tl.maximum(lane_max, tl.load(maxima_ptr + row * splits + s, mask=s < splits,
                                                other=float("-inf")))
    return tl.max(lane_max, axis=0)
