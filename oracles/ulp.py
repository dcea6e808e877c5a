"""Spacing of floating-point values, in fp64: the admissible distances that the oracles with a
declared approximate arithmetic state."""

import torch


def ulp(x: torch.Tensor) -> torch.Tensor:
    """fp64 [same shape]: the spacing at |x| in x's own dtype (the next representable value
    above |x| minus |x|; the smallest subnormal's spacing at 0; NaN where x is not finite)."""
    a = x.abs()
    return torch.nextafter(a, torch.full_like(a, float("inf"))).to(torch.float64) - a.to(torch.float64)


def ulp32(x: torch.Tensor) -> torch.Tensor:
    """`ulp` of x rounded to fp32."""
    return ulp(x.to(torch.float32))
