"""A GPU's fp32 division and exponential under Triton's CPU interpreter.

The interpreter computes fp32 math with numpy, nearly correctly rounded; an NVIDIA GPU does not,
so a kernel whose result needs either exact passes on the CPU and fails on a GPU. Inside
`gpu_fp32_math()` the interpreter's fp32 `/` and `tl.exp` are modelled as Triton computes them on
an NVIDIA GPU; each model stays within the GPU's own error bound, so a kernel that is correct on a
GPU stays correct under it.

- `/` (`gpu_quotient`): Triton lowers an fp32 `/` to an approximate division (PTX `div.full.f32`,
  within 2 ulp; `tl.div_rn` is the correctly rounded one). Modelled as a / b = fl(a * r), with r
  the reciprocal of b moved by -1, 0 or +1 ulp (chosen from b's bits: deterministic) except where
  b is a power of two (a hardware reciprocal is exact there, so x / 1 stays x). Quotients whose
  reciprocal or product leaves fp32's finite normal range, or lands more than 2 ulp from the
  quotient, keep numpy's division. An exact `/` is what finding V12 needs (docs/findings-vllm.md).
- `tl.exp` (`gpu_exp`): Triton lowers an fp32 exp to `ex2.approx.f32` of `x * log2(e)`, the
  product rounded to fp32 (the PTX of an H100, session 51). That rounding costs up to about 64
  ulp of the result for |x| near 100 (measured on the GPU: 62 ulp on [-100, 0], mean 10; the
  interpreter's numpy exp about 2): modelled exactly, with the power of two correctly rounded
  (ex2.approx's own error, up to 2 ulp, is not modelled). `tl.exp2`, `tl.log` (libdevice, within
  an ulp) and other dtypes keep numpy's.
"""

import contextlib

import numpy as np

MIX = np.uint32(0x9E3779B1)  # an odd multiplier that spreads b's bits over the ulp choice
MANTISSA = np.uint32(0x007FFFFF)
MAX_ULPS = 2  # PTX's bound for div.full.f32: a product further off (at a binade's edge) is not modelled
LOG2E = np.float32(1.4426950408889634)  # the constant Triton multiplies by before ex2.approx


def gpu_quotient(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """fp32 lhs / rhs as `gpu_fp32_math` models it (module docstring)."""
    a, b = np.broadcast_arrays(np.asarray(lhs, np.float32), np.asarray(rhs, np.float32))
    with np.errstate(all="ignore"):
        exact = a / b
        reciprocal = np.float32(1) / b
        bits = b.view(np.uint32)
        step = ((bits * MIX) >> np.uint32(16)) % np.uint32(3)  # 0: an ulp down, 1: as is, 2: an ulp up
        moved = np.where(step == 2, np.nextafter(reciprocal, np.float32(np.inf)),
                         np.where(step == 0, np.nextafter(reciprocal, np.float32(-np.inf)), reciprocal))
        reciprocal = np.where(bits & MANTISSA == 0, reciprocal, moved)
        product = a * reciprocal
    normal = np.isfinite(product) & np.isfinite(reciprocal) & (np.abs(b) >= np.finfo(np.float32).tiny)
    product, exact = product.astype(np.float32), exact.astype(np.float32)
    gap = np.abs(product.view(np.int32).astype(np.int64) - exact.view(np.int32).astype(np.int64))
    return np.where(normal & (gap <= MAX_ULPS), product, exact)


def gpu_exp(x: np.ndarray) -> np.ndarray:
    """fp32 exp(x) as `gpu_fp32_math` models it: 2 ** fl32(x * LOG2E), correctly rounded to fp32
    (module docstring)."""
    with np.errstate(all="ignore"):
        power = np.asarray(x, np.float32) * LOG2E
        return np.exp2(power.astype(np.float64)).astype(np.float32)


@contextlib.contextmanager
def gpu_fp32_math():
    """The interpreter's fp32 `/` and exp as a GPU's (module docstring), restored on exit."""
    from triton.runtime.interpreter import InterpreterBuilder

    numpy_fdiv, numpy_exp = InterpreterBuilder.create_fdiv, InterpreterBuilder.create_exp

    def create_fdiv(self, lhs, rhs):
        if np.result_type(lhs.data, rhs.data) != np.float32:
            return numpy_fdiv(self, lhs, rhs)
        return self.binary_op(lhs, rhs, gpu_quotient)

    def create_exp(self, arg):
        if arg.data.dtype != np.float32:
            return numpy_exp(self, arg)
        return self.unary_op(arg, gpu_exp)

    InterpreterBuilder.create_fdiv, InterpreterBuilder.create_exp = create_fdiv, create_exp
    try:
        yield
    finally:
        InterpreterBuilder.create_fdiv, InterpreterBuilder.create_exp = numpy_fdiv, numpy_exp
