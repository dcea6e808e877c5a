"""`samplecheck.kernels.cut_keys.order_key` on the host, in torch, for tests that check the keys
a kernel computed or stored."""

import torch


def order_key(x: torch.Tensor) -> torch.Tensor:
    """The int32 key of each fp32 value of `x`, as int64: key(a) < key(b) iff a < b, -0.0 folded
    into +0.0."""
    bits = torch.where(x == 0, torch.zeros_like(x), x).view(torch.int32)
    return (bits ^ ((bits >> 31) & 0x7FFFFFFF)).to(torch.int64)
