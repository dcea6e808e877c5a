"""Sampling laws shared by registry records: each returns (law: fp64 [B, V], the ids that may
be drawn, the ids that must be drawn when likely enough), as `KernelInfo.law` states."""

import torch


def masked_input_law(original, reference, **_):
    """For masking kernels that keep entries bitwise: softmax in fp64 of the input values over
    the oracle's kept entries (no rounding enters); may be drawn: kept or ambiguous; must:
    kept and not ambiguous."""
    x = original.to(torch.float64).masked_fill(~reference.kept, float("-inf"))
    return torch.softmax(x, dim=-1), reference.kept | reference.ambiguous, reference.kept & ~reference.ambiguous


def exact_output_law(expected: torch.Tensor):
    """For kernels whose oracle gives the exact output, in the logits' dtype: softmax in fp64
    of those values; every entry that is not -inf may be drawn and must be (nothing is
    ambiguous). Rows holding +inf or NaN get NaN: no law."""
    x = expected.to(torch.float64)
    support = x > float("-inf")
    return torch.softmax(x, dim=-1), support, support
