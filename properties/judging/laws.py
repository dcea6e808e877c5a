"""Sampling laws shared by registry records: each returns (law: fp64 [B, V], the ids that may
be drawn, the ids that must be drawn when likely enough), as `KernelInfo.law` states."""

import torch


def masked_input_law(original, reference, **_):
    """For masking kernels that keep entries bitwise: softmax in fp64 of the input values over
    every entry that may be kept (kept or ambiguous; no rounding enters); may be drawn: those;
    must: kept and not ambiguous. A backend keeps one admissible set, whose law is this one
    restricted to it and renormalised (`condition_on_kept`)."""
    may = reference.kept | reference.ambiguous
    x = original.to(torch.float64).masked_fill(~may, float("-inf"))
    return torch.softmax(x, dim=-1), may, reference.kept & ~reference.ambiguous


def condition_on_kept(law: torch.Tensor, support: torch.Tensor, required: torch.Tensor,
                      kept: torch.Tensor) -> torch.Tensor:
    """The law given which ambiguous ids a backend keeps (`kept`, bool, same shape): `law` on
    the required ids and the ambiguous ids kept, renormalised over the last dimension."""
    keep = required | (support & ~required & kept)
    restricted = torch.where(keep, law, 0.0)
    total = restricted.sum(dim=-1, keepdim=True)
    return torch.where(total > 0, restricted / torch.where(total > 0, total, 1.0), restricted)


def exact_output_law(expected: torch.Tensor):
    """For kernels whose oracle gives the exact output, in the logits' dtype: softmax in fp64
    of those values; every entry that is not -inf may be drawn and must be (nothing is
    ambiguous). Rows holding +inf or NaN get NaN: no law."""
    x = expected.to(torch.float64)
    support = x > float("-inf")
    return torch.softmax(x, dim=-1), support, support


def value_error_slack(reference) -> torch.Tensor | float:
    """Per row, how far (TV and max |dp|) an admissible output's softmax may be from the
    oracle's law when the reference admits each value within an absolute distance d of its
    own (`reference.value_bound`, fp64 [B, V]; None or absent: bitwise, slack 0). Every
    logit moving by at most d = the row's largest finite bound moves every log-probability
    by at most 2 d, so |p - q| <= q expm1(2 d) <= expm1(2 d) per id, and TV <= expm1(2 d) / 2."""
    bound = getattr(reference, "value_bound", None)
    if bound is None:
        return 0.0
    worst = torch.where(torch.isfinite(bound), bound, 0.0).amax(dim=-1)
    return torch.expm1(2 * worst.to(torch.float64))
