"""fp64 reference for min-p masking (log-space form, as vLLM MRV2's `_min_p_kernel`).

Semantics (what every min_p backend is checked against):
- Input: logits [B, V] in fp32/bf16/fp16 (the exact values, upcast to fp64; in the
  sampling pipeline they are already temperature-scaled) and a per-row float32
  min_p in [0, 1].
- Per row: m = max(l), threshold = m + log(min_p). Keep l iff l >= threshold (a token
  exactly at the threshold is kept; the mask is the strict `l < threshold`). In exact
  arithmetic this is the probability form p_i >= min_p * max(p), since
  p_i / p_max = exp(l_i - m).
- min_p == 0: off (threshold -inf, nothing is masked). min_p == 1: threshold = m,
  so the maximum and every entry tied with it are kept (tie policy `keep_all_ties`:
  the rule is by value, so ties at the threshold are all kept or all masked).
- The maximum is always kept. Kept entries are returned bitwise unchanged, masked
  entries become -inf; -inf entries stay -inf. An all -inf row is unchanged.
- NaN: in a row where min-p is on, NaN reads as -inf (it never sets the max) and is
  always masked; rows with min_p == 0 are unchanged, NaN included. +inf: it is the max, so
  the threshold is +inf and only the +inf entries are kept.

Precision: the oracle computes the threshold in fp64. A backend computes it in fp32:
log(min_p) with a few ulp of error, then the rounded sum m + log(min_p); its threshold
differs from the fp64 one by less than a few ulp of |log(min_p)| plus half an ulp of
|threshold|. The oracle reports as `ambiguous` every entry with
|l - threshold| <= band * (|log(min_p)| + |threshold|) (band = 2**-20, i.e. 8 fp32 ulp
of |log(min_p)| + 16 half-ulps of |threshold|); both outcomes are admissible there.
There is no band where the fp32 threshold is exact: at min_p == 0, at min_p == 1 (log 0,
threshold = m), for entries equal to the row max (always kept), and in rows whose
threshold is not finite.
"""

from dataclasses import dataclass

import torch

from samplecheck.oracles.top_k_top_p import MaskReference


@dataclass(frozen=True)
class MinPReference(MaskReference):
    """kept / ambiguous as in `MaskReference`; threshold: fp64 [B, 1], max + log(min_p)
    (-inf where min-p is off); scale: fp64 [B, 1], |log(min_p)| + |threshold|, the
    magnitude the ambiguity band is relative to (0 where the band is empty)."""

    threshold: torch.Tensor | None = None
    scale: torch.Tensor | None = None


def min_p_reference(logits: torch.Tensor, min_p: torch.Tensor | None, *, band: float = 0.0) -> MinPReference:
    """Kept and ambiguous masks for `logits` and per-row `min_p` (None: min-p off everywhere)."""
    x = logits.detach().to(torch.float64)
    kept = torch.ones_like(x, dtype=torch.bool)
    ambiguous = torch.zeros_like(kept)
    if min_p is None or x.numel() == 0:
        off = torch.full((x.size(0), 1), float("-inf"), dtype=torch.float64, device=x.device)
        return MinPReference(kept=kept, ambiguous=ambiguous, threshold=off, scale=torch.zeros_like(off))
    p = min_p.detach().to(torch.float64)[:, None]
    on = p > 0
    nan = x.isnan()
    x = x.masked_fill(nan, float("-inf"))
    row_max = x.max(dim=-1, keepdim=True).values
    log_p = torch.where(on, torch.log(p), 0.0)
    threshold = torch.where(on, row_max + log_p, float("-inf"))
    kept = ((x >= threshold) | ~on) & ~(nan & on)
    banded = on & (log_p != 0) & torch.isfinite(threshold)
    scale = torch.where(banded, log_p.abs() + threshold.abs(), 0.0)
    ambiguous = banded & (x != row_max) & ((x - threshold).abs() <= band * scale)
    return MinPReference(kept=kept, ambiguous=ambiguous, threshold=threshold, scale=scale)


def min_p_expected(logits: torch.Tensor, reference: MaskReference) -> torch.Tensor:
    """The oracle's output: `logits` with every entry the oracle drops set to -inf."""
    return logits.masked_fill(~reference.kept, float("-inf"))


# Rounding of a probability-space min-p in fp32 (unit roundoff u = 2**-24), in the log-ratio
# r_i = l_i - max: the subtraction of the max (u |r_i|), exp with its argument scaled by log2 e
# (u |r_i| + 2u), the two divisions by the row sum (2u) and the product min_p * p_max (u).
U32 = 2.0**-24


def min_p_softmax_reference(logits: torch.Tensor, min_p: torch.Tensor | None, *,
                            softmax_dtype: torch.dtype) -> MinPReference:
    """Kept and ambiguous masks of min-p decided in probability space: drop p_i < min_p * p_max,
    p the row's softmax computed in fp32 and stored in `softmax_dtype` (the product too).

    Kept is the log-space rule's (the same rule in exact arithmetic, with its NaN, +inf and
    off rules). Ambiguous: the finite entries below the row max whose exact log-ratio r_i lies
    within u (2 |r_i| + 10) + 3 u_d of log(min_p) (the fp32 steps above, then three roundings
    to `softmax_dtype`, unit roundoff u_d), or whose exact probability lies within two of that
    dtype's smallest subnormals of the exact threshold min_p / sum(exp(r)) (a probability or a
    threshold that underflows decides nothing)."""
    exact = min_p_reference(logits, min_p)
    if min_p is None or logits.numel() == 0:
        return exact
    x = logits.detach().to(torch.float64)
    x = x.masked_fill(x.isnan(), float("-inf"))
    p = min_p.detach().to(torch.float64)[:, None]
    row_max = x.max(dim=-1, keepdim=True).values
    measurable = (p > 0) & torch.isfinite(row_max)
    r = torch.where(measurable, x - row_max, float("-inf"))
    log_p = torch.log(p)
    log_sum = torch.logsumexp(r, dim=-1, keepdim=True)
    info = torch.finfo(softmax_dtype)
    slack = U32 * (2 * r.abs() + 10) + 3 * info.eps / 2
    underflow = 2 * info.tiny * info.eps
    near = ((r - log_p).abs() <= slack) | ((r - log_sum).exp() - (log_p - log_sum).exp()).abs().le(underflow)
    ambiguous = measurable & torch.isfinite(x) & (r != 0) & near
    return MinPReference(kept=exact.kept, ambiguous=ambiguous, threshold=exact.threshold, scale=exact.scale)
