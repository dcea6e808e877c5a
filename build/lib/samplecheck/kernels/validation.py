"""Argument checks shared by the kernels' backends.

Each error names the parameter and its allowed range. Checks on values read the
parameter tensors once on the host (one device synchronisation per call).
"""

import torch

LOGIT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
INDEX_DTYPES = (torch.int32, torch.int64)


def check_logits(logits: torch.Tensor) -> None:
    """logits: a 2-D fp32/bf16/fp16 tensor whose columns are contiguous (stride(1) == 1)."""
    if not isinstance(logits, torch.Tensor):
        raise TypeError(f"logits must be a torch.Tensor, got {type(logits).__name__}")
    if logits.dim() != 2:
        raise ValueError(f"logits must be 2-D [batch, vocab], got shape {tuple(logits.shape)}")
    if logits.dtype not in LOGIT_DTYPES:
        raise TypeError(f"logits dtype must be one of float32, bfloat16, float16; got {logits.dtype}")
    if logits.size(1) > 1 and logits.stride(1) != 1:
        raise ValueError(
            f"logits must have column stride 1 (any row stride is fine); got strides {logits.stride()}"
        )


def check_row_param(name: str, value: torch.Tensor, logits: torch.Tensor, dtypes) -> None:
    """A per-row parameter: a contiguous tensor of one of `dtypes`, shape [batch], on the
    logits' device."""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape [batch] or None, got {type(value).__name__}")
    if value.dtype not in dtypes:
        allowed = ", ".join(str(d).removeprefix("torch.") for d in dtypes)
        raise TypeError(f"{name} dtype must be one of {allowed}; got {value.dtype}")
    if value.shape != (logits.size(0),):
        raise ValueError(f"{name} must have shape [batch] = [{logits.size(0)}], got {tuple(value.shape)}")
    if value.device != logits.device:
        raise ValueError(f"{name} is on {value.device} but logits are on {logits.device}")
    if value.numel() > 1 and value.stride(0) != 1:
        raise ValueError(f"{name} must be contiguous (stride 1), got stride {value.stride(0)}")


def check_range(name: str, value: torch.Tensor, ok: torch.Tensor, allowed: str) -> None:
    """Raise `ValueError("{name} must be {allowed}; got {first value where not ok}")` unless
    `ok` (a bool tensor over `value`, False for NaN where NaN is out of range) holds everywhere."""
    if value.numel() and not bool(ok.all()):
        raise ValueError(f"{name} must be {allowed}; got {value[~ok][0].item()}")


def check_top_k_top_p(logits: torch.Tensor, k: torch.Tensor | None, p: torch.Tensor | None) -> None:
    """k: per-row int32/int64, k <= 0 (only -1 and 0 allowed) or k >= V disables top-k;
    p: per-row float32, in (0, 1], p == 1 disables top-p."""
    check_logits(logits)
    if k is not None:
        check_row_param("k", k, logits, INDEX_DTYPES)
        if k.numel() and bool((k < -1).any()):
            bad = int(k.min())
            raise ValueError(f"k must be -1 or 0 (top-k off) or >= 1 (k >= vocab is clamped); got {bad}")
    if p is not None:
        check_row_param("p", p, logits, (torch.float32,))
        check_range("p", p, (p > 0) & (p <= 1), "in (0, 1] (1 turns top-p off)")


PAD_ID = -1


def check_token_ids(name: str, ids: torch.Tensor, logits: torch.Tensor, *, dims: int = 2,
                    ignored: tuple[int, ...] = ()) -> None:
    """A batch of token-id lists: int32/int64, `dims` dimensions with shape[0] == batch, on
    the logits' device, right-padded with -1 (PAD_ID). Every entry is in [0, V), -1, or
    one of `ignored` (ids the kernel documents as skipped, e.g. the pad id V)."""
    shape = "[batch, length]" if dims == 2 else "[batch, " + ", ".join(["n"] * (dims - 1)) + "]"
    if not isinstance(ids, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor {shape} or None, got {type(ids).__name__}")
    if ids.dtype not in INDEX_DTYPES:
        raise TypeError(f"{name} dtype must be one of int32, int64; got {ids.dtype}")
    if ids.dim() != dims or ids.size(0) != logits.size(0):
        raise ValueError(f"{name} must have shape {shape} with batch = {logits.size(0)}, got {tuple(ids.shape)}")
    if ids.device != logits.device:
        raise ValueError(f"{name} is on {ids.device} but logits are on {logits.device}")
    if ids.numel():
        ok = ((ids >= 0) & (ids < logits.size(1))) | (ids == PAD_ID)
        for extra in ignored:
            ok |= ids == extra
        if not bool(ok.all()):
            bad = int(ids[~ok][0])
            also = "".join(f", {i}" for i in ignored)
            raise ValueError(f"{name} must hold token ids in [0, {logits.size(1)}) or -1 (padding){also}; got {bad}")
