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


# Declared variants (samplecheck.registry.semantics): other tie policies at the k-th value and
# other top-p boundary rules. The default arguments give `top_k_top_p_reference` itself.
EXACTLY_K_POLICIES = ("exactly_k_any", "exactly_k_lowest_index")
TOP_P_BOUNDARIES = ("strict", "strict_by_position", "inclusive", "pivot_search")
# `pivot_search`: the cut probability is found by a ternary search over [min prob, max prob]
# stopped after 18 steps, so it is known to (2/3)**18 of that range.
PIVOT_RESOLUTION = (2.0 / 3.0) ** 18
TOP_K_VALUES = ("input", "fp32_probabilities")
# `fp32_probabilities`: an fp32 softmax rounds x - max to eps32 / 2 relative, and exp and the
# normalising division to a few ulps, so two logits d apart may get one fp32 probability while
# d <= ~1.2 eps32 (|x - max| + 1) (measured on randn rows of scale 0.1 to 10, V = 262144);
# the band is that bound with a factor of about 3 for chains of such ties and another softmax.
PROBABILITY_TIE_WIDTH = 4 * torch.finfo(torch.float32).eps
# Below 2**-126 an fp32 probability is subnormal, a multiple of 2**-149, and below 2**-150 it is
# 0: the softmax's exp and its division each round to that grid, so probabilities within four
# of its steps may tie whatever their logits (rows whose k-th probability underflows keep
# every entry that underflows with it).
PROBABILITY_TIE_FLOOR = 4 * 2.0**-149


def probability_ties(x: torch.Tensor, kth: torch.Tensor, k_on: torch.Tensor) -> torch.Tensor:
    """bool [B, V]: the finite entries of fp64 logits `x` whose fp32 softmax probability may
    equal the k-th largest's (`kth` [B, 1]) though their logits differ, in rows where top-k is
    on: within PROBABILITY_TIE_WIDTH * (|kth - row max| + 1) of it (rounding), or with an
    exact probability within PROBABILITY_TIE_FLOOR of its (subnormal or underflowing)."""
    row_max = x.max(dim=-1, keepdim=True).values
    width = PROBABILITY_TIE_WIDTH * ((kth - row_max).abs() + 1)
    finite = torch.isfinite(x) & torch.isfinite(kth) & torch.isfinite(row_max)
    shift = torch.where(torch.isfinite(row_max), row_max, 0.0)
    weight = torch.exp(x - shift)
    mass = weight.sum(dim=-1, keepdim=True)
    floor = (weight / mass - torch.exp(kth - shift) / mass).abs() <= PROBABILITY_TIE_FLOOR
    return k_on[:, None] & finite & (((x - kth).abs() <= width) | floor)


@dataclass(frozen=True)
class DeclaredMaskReference(MaskReference):
    """A MaskReference plus, per row, the k-th value's tied group (`group`, bool [B, V]) and
    how many of its entries must be kept (`group_count`, int64 [B]; -1: no count claimed)."""

    group: torch.Tensor
    group_count: torch.Tensor


def top_k_top_p_declared_reference(logits: torch.Tensor, k: torch.Tensor | None, p: torch.Tensor | None, *,
                                   tie_policy: str = "keep_all_ties", top_p_boundary: str = "strict",
                                   top_k_values: str = "input", band: float = 0.0) -> DeclaredMaskReference:
    """Kept and ambiguous masks under a declared tie policy and top-p boundary rule.

    Tie policy (top-k, by input value, exact):
    - `keep_all_ties`: as `top_k_top_p_reference`;
    - `exactly_k_any`: every value strictly above the k-th largest is kept; of the values
      tied with it, exactly k - #above are kept, any of them (the group is ambiguous and
      `group_count` states the count);
    - `exactly_k_lowest_index`: the same count, taken from the lowest column ids (exact).
    Top-p runs on the survivors' mass, which depends only on how many tied entries survive,
    not on which: it is computed with the lowest-index choice.
    Top-p boundary (band as in `top_k_top_p_reference`):
    - `strict`: keep x iff the mass strictly above x (by value) < p;
    - `inclusive`: keep x iff that mass <= p (differs from `strict` only at exact equality);
    - `strict_by_position`: keep x iff the mass before x in a descending sort < p, with ties
      in any order: of a tied group that straddles the boundary any prefix may be kept, so
      its members are ambiguous (the first is kept when the mass above the group is < p);
    - `pivot_search`: `strict_by_position`, with the cut found as a probability by a bounded
      search: every survivor whose probability (of the survivors' mass) lies within
      PIVOT_RESOLUTION * (max prob - min prob) of the smallest probability `strict` keeps is
      ambiguous.
    A row whose tied group is cut by top-p (or is ambiguous there) claims no count.
    Top-k values (with `keep_all_ties` only):
    - `input`: the k-th largest is taken over the input values, as above;
    - `fp32_probabilities`: over an fp32 softmax of the row, whose rounding ties distinct
      logits: the entries of `probability_ties` are ambiguous while the k-th value survives
      top-p, and top-p's band is widened by their mass (in the survivors' mass, each
      decision may count them or not).
    """
    if tie_policy not in TIE_POLICIES + EXACTLY_K_POLICIES:
        raise ValueError(f"tie_policy must be one of {TIE_POLICIES + EXACTLY_K_POLICIES}, got {tie_policy!r}")
    if top_p_boundary not in TOP_P_BOUNDARIES:
        raise ValueError(f"top_p_boundary must be one of {TOP_P_BOUNDARIES}, got {top_p_boundary!r}")
    if top_k_values not in TOP_K_VALUES:
        raise ValueError(f"top_k_values must be one of {TOP_K_VALUES}, got {top_k_values!r}")
    if top_k_values != "input" and tie_policy != "keep_all_ties":
        raise ValueError(f"top_k_values={top_k_values!r} is defined with tie_policy='keep_all_ties' only")
    x = logits.detach().to(torch.float64)
    nan = x.isnan()  # NaN reads as -inf and is masked wherever a filter is on (as the base rule)
    x = x.masked_fill(nan, float("-inf"))
    batch, vocab = x.shape
    none = torch.zeros_like(x, dtype=torch.bool)
    no_count = torch.full((batch,), -1, dtype=torch.int64, device=x.device)
    if tie_policy == "keep_all_ties" and top_p_boundary == "strict" and top_k_values == "input":
        base = top_k_top_p_reference(logits, k, p, band=band)
        return DeclaredMaskReference(base.kept, base.ambiguous, none, no_count)
    kept = torch.ones_like(none)
    group, count, near = none.clone(), no_count.clone(), none
    if k is not None:
        k_on = (k > 0) & (k < vocab)
        kth = x.sort(dim=-1, descending=True).values.gather(
            1, (torch.where(k_on, k, vocab).long() - 1).clamp(min=0)[:, None])
        above = (x > kth) & k_on[:, None]
        if tie_policy == "keep_all_ties":
            kept &= (x >= kth) | ~k_on[:, None]
        else:
            tied = (x == kth) & k_on[:, None] & torch.isfinite(kth)
            wanted = (k.long() - above.sum(dim=-1))[:, None]
            first = tied & (tied.long().cumsum(dim=-1) <= wanted)
            kept &= above | first | ~k_on[:, None] | ~torch.isfinite(kth)
            group = tied
            count = torch.where(k_on & tied.any(dim=-1), wanted.squeeze(1), -1)
        if top_k_values == "fp32_probabilities":
            near = probability_ties(x, kth, k_on)
    ambiguous = none.clone()
    if p is not None:
        survivors = x.masked_fill(~kept, float("-inf"))
        row_max = survivors.max(dim=-1, keepdim=True).values
        weight = torch.exp(survivors - torch.where(torch.isfinite(row_max), row_max, 0.0))
        # A row holding +inf: its +inf entries carry all the mass (as the base rule).
        weight = torch.where(row_max == float("inf"), (survivors == float("inf")).to(weight.dtype), weight)
        mass = weight.sum(dim=-1, keepdim=True)
        above_mass = _mass_above_by_value(survivors, weight)
        limit = p.to(torch.float64)[:, None] * mass
        p_on = (p < 1)[:, None]
        keep_p = above_mass <= limit if top_p_boundary == "inclusive" else above_mass < limit
        slack = band * mass
        if near.any():  # the probability ties' mass, counted or not by each decision
            shift = torch.where(torch.isfinite(row_max), row_max, 0.0)
            slack = slack + torch.exp(x - shift).masked_fill(~near, 0.0).sum(dim=-1, keepdim=True)
        ambiguous = p_on & kept & (above_mass > 0) & ((above_mass - limit).abs() <= slack)
        if top_p_boundary == "pivot_search":
            prob = weight / mass
            alive = p_on & kept & torch.isfinite(survivors)
            cut = prob.masked_fill(~(alive & keep_p), float("inf")).amin(dim=-1, keepdim=True)
            spread = prob.masked_fill(~alive, 0.0).amax(dim=-1, keepdim=True) - prob.masked_fill(
                ~alive, float("inf")).amin(dim=-1, keepdim=True)
            ambiguous |= alive & ((prob - cut).abs() <= PIVOT_RESOLUTION * spread)
        if top_p_boundary in ("strict_by_position", "pivot_search"):
            # A tied member's mass before it lies in [above, above + tie mass - own weight].
            last_place = above_mass + _tie_mass(survivors, weight) - weight
            ambiguous |= p_on & kept & keep_p & (last_place >= limit - slack)
        kept &= keep_p | ~p_on
    if near.any():
        kth_alive = ((x == kth) & (kept | ambiguous)).any(dim=-1, keepdim=True)
        ambiguous |= near & kth_alive
    on = torch.zeros(batch, dtype=torch.bool, device=x.device)
    if k is not None:
        on |= (k > 0) & (k < vocab)
    if p is not None:
        on |= p < 1
    dropped = nan & on[:, None]
    kept, ambiguous, group = kept & ~dropped, ambiguous & ~dropped, group & ~dropped
    if tie_policy == "exactly_k_lowest_index":
        return DeclaredMaskReference(kept, ambiguous, none, no_count)
    # Every member of the tied group shares the decision of the members chosen above.
    alive = (group & kept).any(dim=-1, keepdim=True)
    unsure = (group & ambiguous).any(dim=-1, keepdim=True)
    group &= alive | unsure
    count = torch.where((alive & ~unsure).squeeze(1), count, -1)
    return DeclaredMaskReference(kept, ambiguous | group, group, count)

def _tie_mass(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """For each entry, the summed weight of the entries of its row with the same value."""
    ordered, order = x.sort(dim=-1, descending=True, stable=True)
    w = weight.gather(1, order)
    starts = torch.ones_like(ordered, dtype=torch.bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    group = starts.long().cumsum(dim=-1) - 1
    totals = torch.zeros_like(w).scatter_add_(1, group, w)
    return torch.empty_like(w).scatter_(1, order, totals.gather(1, group))
