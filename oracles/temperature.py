"""fp64 reference for temperature scaling.

Semantics (what every temperature backend is checked against):
- Input: logits [B, V] in fp32/bf16/fp16 (the exact values, upcast to fp64) and a
  per-row float32 temperature T >= 0, finite.
- 0 < T != 1: l' = l / T, as the correctly rounded fp32 quotient, then rounded to the
  logits' dtype with round-to-nearest-even: l' = rnd_dtype(rnd_fp32(l / T)). The fp32
  step is part of the contract (vLLM's kernels divide in fp32 too), so for bf16/fp16 the
  result is double-rounded: it can be 1 ulp away from rnd_dtype(l / T) when rnd_fp32(l / T)
  lands exactly on a midpoint of the narrow format. For fp32 logits the two agree.
- T == 0 (greedy) and T == 1: the row is returned bitwise unchanged (no division).
- Edge cases: -inf / T = -inf, +-0 / T = +-0 (sign kept); l / T beyond the dtype's
  range is +-inf (no clamp; fp16 overflows above 65504, fp32 and bf16 above
  ~3.4e38); quotients in the subnormal range are rounded, not flushed. A finite logit
  never becomes NaN for a valid T. NaN logits stay NaN (NaN / T; untouched in T == 0
  and T == 1 rows), +-inf / T = +-inf.
- No ties are involved (elementwise op).

Precision: the oracle divides in fp64 and rounds the quotient to fp32. That equals the
correctly rounded fp32 quotient exactly: rounding a quotient of p-bit floats to q >= 2p + 2
bits and then to p bits is innocuous (Figueroa, "When is double rounding innocuous?",
1995; fp64 has 53 >= 2*24 + 2 bits; the same holds at the overflow threshold and in the
subnormal range, and 2.4e7 random fp32/bf16 pairs covering every exponent agree). So the
oracle's `expected` is the bit pattern a correct backend must produce, and the check
is bitwise (`ulps` = 0 for every dtype).
"""

from dataclasses import dataclass

import torch

from samplecheck.oracles.ulp import ulp


@dataclass(frozen=True)
class TemperatureReference:
    """scaled: fp64 [B, V], l / T rounded once to fp64 (l itself in T in {0, 1} rows);
    expected: the contract's output in the logits' dtype; active: bool [B], rows with
    0 < T != 1; ulps: the admissible distance from `expected` in units in the last place."""

    scaled: torch.Tensor
    expected: torch.Tensor
    active: torch.Tensor
    ulps: int = 0

    @property
    def value_bound(self) -> torch.Tensor | None:
        """The admissible absolute distance of each output entry from `expected`: `ulps` of
        its dtype's spacing at |expected| (fp64 [B, V]; None when the check is bitwise)."""
        return None if self.ulps == 0 else self.ulps * ulp(self.expected)


def temperature_reference(logits: torch.Tensor, temperature: torch.Tensor | None, *,
                          ulps: int = 0) -> TemperatureReference:
    """The reference output for `logits` and per-row `temperature` (None: every row unchanged)."""
    x = logits.detach().to(torch.float64)
    if temperature is None:
        active = torch.zeros(x.size(0), dtype=torch.bool, device=x.device)
        return TemperatureReference(x, logits.detach().clone(), active, ulps)
    t = temperature.detach().to(torch.float64)
    active = (t != 0) & (t != 1)
    divisor = torch.where(active, t, 1.0)[:, None]
    scaled = torch.where(active[:, None], x / divisor, x)
    rounded = scaled.to(torch.float32).to(logits.dtype)
    expected = torch.where(active[:, None], rounded, logits.detach())
    return TemperatureReference(scaled, expected, active, ulps)
