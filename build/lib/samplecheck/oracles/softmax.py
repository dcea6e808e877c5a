"""fp64 reference for softmax with temperature, and the error bound of an fp32 computation.

Semantics (what every `softmax` backend is checked against):
- Input: logits [B, V] fp32/bf16/fp16 (exact values upcast to fp64) and a per-row float32
  temperature T, finite and > 0 (None: T = 1). Output: probabilities q = softmax(l / T)
  per row, computed in fp64 with the row max subtracted; a backend returns fp32 [B, V].
- -inf entries have probability exactly 0. Rows with NaN, +inf or no finite entry have no
  law (the oracle gives NaN there and the check skips them).

Precision: a backend computes in fp32 (unit roundoff u = 2**-24). With z = l / T and
m = max(z) per row, its error in log-probability is at most
  2u (|z_i| + |m|)        the quotient l / T, rounded once or, as l * (1/T), twice
  + u |z_i - m| <= u (|z_i| + |m|)   the subtraction of the max
  + u |z_i - m| + 2u       exp (argument scaled by log2 e in fp32, 2-ulp exp2)
  + (V / 256 + 32) u       the fp32 row sum (per-thread sequential partial sums of at most
                           V / 256 terms, then a tree) and the final division,
so `bound` = q * expm1(eta) + 2**-125 with eta = u * (5 (|z_i| + |m|) + V / 256 + 40):
the last term admits fp32 flushing a probability below 2**-126 to 0. The bound is a worst
case over summation orders; typical errors are a few ulp.
"""

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class SoftmaxReference:
    """probs: fp64 [B, V] oracle probabilities; bound: fp64 [B, V] admissible |p - q|;
    defined: bool [B], rows with a law."""

    probs: torch.Tensor
    bound: torch.Tensor
    defined: torch.Tensor


def softmax_reference(logits: torch.Tensor, temperature: torch.Tensor | None, *, unit: float) -> SoftmaxReference:
    x = logits.detach().to(torch.float64)
    t = torch.ones(x.size(0), dtype=torch.float64, device=x.device) if temperature is None \
        else temperature.detach().to(torch.float64)
    z = x / t[:, None]
    defined = ~torch.isnan(z).any(dim=-1) & ~(z == float("inf")).any(dim=-1) & torch.isfinite(z).any(dim=-1)
    m = z.masked_fill(~torch.isfinite(z), float("-inf")).amax(dim=-1, keepdim=True) if z.size(1) else z
    probs = torch.softmax(z, dim=-1)
    magnitude = torch.where(torch.isfinite(z), z.abs(), 0.0) + m.abs().nan_to_num(0.0, posinf=0.0, neginf=0.0)
    eta = unit * (5 * magnitude + x.size(1) / 256 + 40)
    bound = probs * torch.expm1(eta.clamp(max=50.0)) + 2.0**-125
    return SoftmaxReference(probs=probs, bound=bound, defined=defined)
