"""Exact dtype conversions at kernel loads and stores: bf16/fp16/fp32 in, fp32 compute, RTNE out.

Problem: under the Triton CPU interpreter (TRITON_INTERPRET=1), bf16 conversions are wrong
both ways, whereas the GPU and torch get them right:
- fp32 -> bf16 (`.to(tl.bfloat16)` and the implicit one in `tl.store`) truncates toward zero
  instead of rounding to nearest even: about half of all values come out 1 ulp off, values
  that should overflow to inf stay finite, and subnormals are wrong;
- bf16 -> fp32 (`.to(tl.float32)`) mangles bf16 subnormals (9.18e-41 loads as 0), findings F9.
The interpreter converts fp16 through numpy, which is exact one way and RTNE the other.

Contracts, on the GPU and in the interpreter alike:
- `to_fp32(x)` takes bf16/fp16/fp32 `x` and returns it in fp32 exactly, bit for bit equal to
  torch's `Tensor.float()`. bf16 widens by an integer shift of its bits.
- `to_output_dtype(x, OUT_DTYPE)` takes fp32 `x` and returns it in OUT_DTYPE (tl.bfloat16,
  tl.float16 or tl.float32) bit for bit equal to torch's `Tensor.to(dtype)`, except that NaN
  payloads may differ (NaN stays NaN). bf16 goes through integer RTNE on the fp32 bits, never
  through bf16 arithmetic, which the interpreter cannot do.
Kernels load logits as `to_fp32(tl.load(...))` and store computed fp32 values as
`tl.store(ptr, to_output_dtype(val, ptr.dtype.element_ty), mask=...)`.
"""

import torch
import triton
import triton.language as tl

from samplecheck.kernels.launching import jit
from samplecheck.kernels.runtime import check_launchable

OUT_DTYPES = (torch.bfloat16, torch.float16, torch.float32)


@triton.jit
def to_fp32(x):
    """bf16/fp16/fp32 `x` widened to fp32 exactly, subnormals included (see the module docstring)."""
    if x.dtype == tl.bfloat16:
        return (x.to(tl.uint16, bitcast=True).to(tl.uint32) << 16).to(tl.float32, bitcast=True)
    else:
        return x.to(tl.float32)


@triton.jit
def to_output_dtype(x, OUT_DTYPE: tl.constexpr):
    """fp32 `x` converted to OUT_DTYPE with round-to-nearest-even (see the module docstring)."""
    if OUT_DTYPE == tl.bfloat16:
        bits = x.to(tl.uint32, bitcast=True)
        # Adding 0x7FFF plus the kept lsb carries into bit 16 exactly when the dropped half
        # is above the halfway point, or at it with an odd lsb. NaN lanes are quieted
        # instead (their rounding sum may wrap and is discarded).
        bits = tl.where(x != x, bits | 0x400000, bits + 0x7FFF + ((bits >> 16) & 1))
        return (bits >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True)
    elif OUT_DTYPE == tl.float16:
        return x.to(tl.float16)
    else:
        tl.static_assert(OUT_DTYPE == tl.float32, "to_output_dtype: OUT_DTYPE must be bf16, fp16 or fp32")
        return x


@jit
def _store_rounded_kernel(src_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(src_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, to_output_dtype(x, out_ptr.dtype.element_ty), mask=mask)


def store_rounded(src: torch.Tensor, out: torch.Tensor, block: int = 1024) -> torch.Tensor:
    """Write contiguous fp32 `src` into contiguous `out` (bf16/fp16/fp32, same shape and device)
    through `to_output_dtype`; returns `out`."""
    if src.dtype != torch.float32 or out.dtype not in OUT_DTYPES:
        raise TypeError(f"src must be float32 and out one of {OUT_DTYPES}; got {src.dtype}, {out.dtype}")
    if src.shape != out.shape or src.device != out.device or not (src.is_contiguous() and out.is_contiguous()):
        raise ValueError("src and out must be contiguous tensors of one shape on one device")
    check_launchable(_store_rounded_kernel, src)
    n = src.numel()
    _store_rounded_kernel[(triton.cdiv(n, block),)](src, out, n, BLOCK=block)
    return out
