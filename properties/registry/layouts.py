"""Row layouts for logits, with poisoned gaps.

A layout places contiguous [B, V] values into a larger buffer: rows padded to a multiple
of 64 and sliced (how vLLM's compute_logits makes them), row strides V+1 and V+37, or a
storage offset. Every element of the buffer outside the view is a gap, filled with a
poison value that would show up in any output that reads it.
"""

from dataclasses import dataclass

import torch

LAYOUTS = ("contig", "padded64", "stride+1", "stride+37", "offset")
OFFSET_ELEMENTS = 5


def row_stride(layout: str, vocab: int) -> int:
    if layout in ("contig", "offset"):
        return vocab
    if layout == "padded64":
        return -(-vocab // 64) * 64
    if layout.startswith("stride+"):
        return vocab + int(layout.removeprefix("stride+"))
    raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")


@dataclass
class Placed:
    """`view` is a [B, V] view into `buffer`; `gaps` marks the buffer elements outside it."""

    view: torch.Tensor
    buffer: torch.Tensor
    gaps: torch.Tensor

    def gap_bytes(self) -> torch.Tensor:
        return as_bits(self.buffer)[self.gaps]


def place(values: torch.Tensor, layout: str, poison: float) -> Placed:
    """Copy contiguous `values` [B, V] into a fresh buffer laid out as `layout`."""
    batch, vocab = values.shape
    stride = row_stride(layout, vocab)
    offset = OFFSET_ELEMENTS if layout == "offset" else 0
    size = offset + max(batch - 1, 0) * stride + vocab + (stride - vocab)
    buffer = torch.full((size,), poison, dtype=values.dtype, device=values.device)
    view = buffer.as_strided((batch, vocab), (stride, 1), offset)
    view.copy_(values)
    gaps = torch.ones(size, dtype=torch.bool, device=values.device)
    gaps.as_strided((batch, vocab), (stride, 1), offset).fill_(False)
    return Placed(view=view, buffer=buffer, gaps=gaps)


def as_bits(t: torch.Tensor) -> torch.Tensor:
    """The same bytes as a signed integer tensor: NaN equals NaN, -0.0 differs from +0.0."""
    return t.view({1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])
