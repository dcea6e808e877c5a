"""A GPU's fp32 division under Triton's CPU interpreter.

On NVIDIA GPUs Triton lowers an fp32 `/` to an approximate division (PTX `div.full.f32`,
within 2 ulp of the quotient; `tl.div_rn` is the correctly rounded one). The interpreter
computes both with numpy, correctly rounded, so a kernel that needs `/` exact (x / x == 1)
masks correctly on the CPU and not on a GPU (finding V12, docs/findings-vllm.md). Inside
`approximate_division()` the interpreter's fp32 `/` is modelled as a GPU computes it: a / b =
fl(a * r), with r the reciprocal of b moved by -1, 0 or +1 ulp (chosen from b's bits:
deterministic) except where b is a power of two (a hardware reciprocal is exact there, so
x / 1 stays x). That is within the GPU's bound, so a kernel that is correct on a GPU stays
correct under it. `tl.div_rn`, other dtypes, and quotients whose reciprocal or product leaves
fp32's finite normal range, or land more than 2 ulp from the quotient, keep numpy's exact
division.
"""

import contextlib

import numpy as np

MIX = np.uint32(0x9E3779B1)  # an odd multiplier that spreads b's bits over the ulp choice
MANTISSA = np.uint32(0x007FFFFF)
MAX_ULPS = 2  # PTX's bound for div.full.f32: a product further off (at a binade's edge) is not modelled


def gpu_quotient(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """fp32 lhs / rhs as `approximate_division` models it (module docstring)."""
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


@contextlib.contextmanager
def approximate_division():
    """The interpreter's fp32 `/` as a GPU's (module docstring), restored on exit."""
    from triton.runtime.interpreter import InterpreterBuilder

    exact = InterpreterBuilder.create_fdiv

    def create_fdiv(self, lhs, rhs):
        if np.result_type(lhs.data, rhs.data) != np.float32:
            return exact(self, lhs, rhs)
        return self.binary_op(lhs, rhs, gpu_quotient)

    InterpreterBuilder.create_fdiv = create_fdiv
    try:
        yield
    finally:
        InterpreterBuilder.create_fdiv = exact
