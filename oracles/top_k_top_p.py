"""fp64 reference for top-k then top-p masking.

Semantics (what every top_k_top_p backend is checked against):
- Input: logits [B, V] in any float dtype; the exact values are upcast to fp64.
- Top-k, per row: off when k <= 0 or k >= V. Otherwise keep x iff x >= the k-th largest
  value. Tie policy `keep_all_ties`: every value tied with the k-th largest is kept, so
  more than k entries can remain.
- Top-p, per row, after top-k, on the renormalised survivors: off when p == 1. Otherwise
  keep x iff the mass of survivors with value strictly greater than x is < p. Mass is
  measured by value, so ties at the boundary are all kept; the crossing token is kept; a
  tiny p keeps the maximum and its ties.
- Kept entries are returned bitwise unchanged; masked entries become -inf. -inf entries
  have zero mass and stay -inf. An all -inf row is returned unchanged.
- NaN: in a row where top-k or top-p is on, NaN reads as -inf (it never counts towards k
  and carries no mass) and is always masked, so an all-NaN row becomes all -inf. Rows with
  both off are returned unchanged, NaN included.
- +inf: ranks above every finite value for top-k; when the top-k survivors hold +inf,
  those entries hold all the mass (the limit of exp(x - max)), so top-p keeps exactly the
  +inf entries.

Precision: probabilities are exp(x - max) in fp64 and sums are fp64. A backend computing
in fp32 cannot reproduce decisions whose fp64 margin is below its rounding error, so
the oracle reports as `ambiguous` every survivor of top-k with
|mass_above(x) - p * mass| <= band * mass; both outcomes are admissible there. The row
maximum and its ties are never ambiguous: no mass lies above them, so `0 < p` is exact
in any precision (the tiny-p rule).
"""

from dataclasses import dataclass

import torch

TIE_POLICIES = ("keep_all_ties",)


@dataclass(frozen=True)
class MaskReference:
    """kept[b, v]: the oracle keeps the entry; ambiguous[b, v]: either outcome is admissible."""

    kept: torch.Tensor
    ambiguous: torch.Tensor


def _mass_above_by_value(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """For each entry, the sum of `weight` over entries of its row with a strictly greater value."""
    ordered, order = x.sort(dim=-1, descending=True, stable=True)
    w = weight.gather(1, order)
    before = w.cumsum(dim=-1) - w
    starts_group = torch.ones_like(ordered, dtype=torch.bool)
    starts_group[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    group = starts_group.long().cumsum(dim=-1) - 1
    group_start_mass = torch.zeros_like(before).scatter_add_(1, group, before * starts_group)
    sorted_mass = group_start_mass.gather(1, group)
    return torch.empty_like(sorted_mass).scatter_(1, order, sorted_mass)


def top_k_top_p_reference(logits: torch.Tensor, k: torch.Tensor | None, p: torch.Tensor | None,
                          *, tie_policy: str = "keep_all_ties", band: float = 0.0) -> MaskReference:
    """Kept and ambiguous masks for `logits` under the semantics above."""
    if tie_policy not in TIE_POLICIES:
        raise ValueError(f"tie_policy must be one of {TIE_POLICIES}, got {tie_policy!r}")
    x = logits.detach().to(torch.float64)
    nan = x.isnan()
    x = x.masked_fill(nan, float("-inf"))
    batch, vocab = x.shape
    kept = torch.ones_like(x, dtype=torch.bool)
    ambiguous = torch.zeros_like(kept)
    on = torch.zeros(batch, dtype=torch.bool, device=x.device)
    if k is not None:
        k_on = (k > 0) & (k < vocab)
        on |= k_on
        kth = x.sort(dim=-1, descending=True).values.gather(
            1, (torch.where(k_on, k, vocab).long() - 1).clamp(min=0)[:, None])
        kept &= (x >= kth) | ~k_on[:, None]
    if p is not None:
        survivors = x.masked_fill(~kept, float("-inf"))
        row_max = survivors.max(dim=-1, keepdim=True).values
        weight = torch.exp(survivors - torch.where(torch.isfinite(row_max), row_max, 0.0))
        weight = torch.where(row_max == float("inf"), (survivors == float("inf")).to(weight.dtype), weight)
        mass = weight.sum(dim=-1, keepdim=True)
        above = _mass_above_by_value(survivors, weight)
        limit = p.to(torch.float64)[:, None] * mass
        p_on = (p < 1)[:, None]
        ambiguous = p_on & kept & (above > 0) & ((above - limit).abs() <= band * mass)
        kept &= (above < limit) | ~p_on
        on |= p < 1
    kept &= ~(nan & on[:, None])
    return MaskReference(kept=kept, ambiguous=ambiguous)


def top_k_top_p_expected(logits: torch.Tensor, reference: MaskReference) -> torch.Tensor:
    """The oracle's output: `logits` with every entry the oracle drops set to -inf."""
    return logits.masked_fill(~reference.kept, float("-inf"))
