"""Argument checks shared by the kernels' backends, and how value checks run.

Every public entry point validates before it writes anything, so a bad input raises and
leaves the logits and every other argument bitwise unchanged. Each error names the caller's
parameter and its allowed range (docs/validation.md).

Two kinds of checks:
- Layout checks (types, ranks, shapes, dtypes, devices, list caps, Python scalars) read
  only tensor metadata: they run on every call, raise at once and never synchronise.
- Value checks (ranges of per-row parameters, token ids) depend on tensor values. Each
  call collects them in a `samplecheck.kernels.guard.ValueGuard`, run by the mode
  `value_check_mode()` returns:
  - "eager": read the values back (one device sync) and raise before anything is written;
  - "deferred": check on the device (no sync); a failed check sets a flag that makes the
    call's kernels write nothing, and the error (the same message) is raised by
    `raise_pending()` (which waits for the flags), or by a later call once the pool of
    flags holding it has reached the host (`samplecheck.kernels.value_modes`);
  - "captured" (automatic while the current CUDA stream captures a graph): as deferred,
    but nothing is recorded: a replay with a bad value writes nothing and raises nothing;
  - "off" (`unchecked_values()`): no check; an out-of-range value gives an unspecified
    result that never reads or writes outside its tensors (every kernel masks its
    id-addressed loads and stores to [0, V)).
  The default, "auto", is "eager" for CPU tensors (reading back costs nothing) and
  "deferred" for CUDA tensors; `value_checks(mode)` or the environment variable
  SAMPLECHECK_VALUE_CHECKS (auto, eager, deferred, off) choose another.
"""

import torch

from samplecheck.kernels.guard import FLOAT32_MAX, PAD_ID, RangeCheck, ValueGuard, check_range  # noqa: F401
from samplecheck.kernels.value_modes import (MODE_ENV, MODES, raise_pending, unchecked_values,  # noqa: F401
                                             value_check_mode, value_checks, values_checked)

LOGIT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
INDEX_DTYPES = (torch.int32, torch.int64)
# The largest value of each index dtype: torch.iinfo(dtype).max, which costs on the host each call.
INDEX_MAX = {dtype: torch.iinfo(dtype).max for dtype in INDEX_DTYPES}


def _dtype_names(dtypes) -> str:
    return ", ".join(str(d).removeprefix("torch.") for d in dtypes)


def check_logits(logits: torch.Tensor) -> None:
    """logits: a 2-D fp32/bf16/fp16 tensor on a CPU or CUDA device whose columns are
    contiguous (stride(1) == 1)."""
    if not isinstance(logits, torch.Tensor):
        raise TypeError(f"logits must be a torch.Tensor, got {type(logits).__name__}")
    if not (logits.is_cuda or logits.is_cpu):  # the two device types kernels run on
        raise ValueError(f"logits must be on a CPU or CUDA device (kernels read their values); got {logits.device}")
    if logits.dim() != 2:
        raise ValueError(f"logits must be 2-D [batch, vocab], got shape {tuple(logits.shape)}")
    if logits.dtype not in LOGIT_DTYPES:
        raise TypeError(f"logits dtype must be one of float32, bfloat16, float16; got {logits.dtype}")
    if logits.stride()[1] != 1 and logits.size(1) > 1:
        raise ValueError(
            f"logits must have column stride 1 (any row stride is fine); got strides {logits.stride()}"
        )


def check_row_param(name: str, value: torch.Tensor, logits: torch.Tensor, dtypes) -> None:
    """A per-row parameter: a contiguous tensor of one of `dtypes`, shape [batch], on the
    logits' device."""
    if value is None:
        kinds = " or ".join(str(d).removeprefix("torch.") for d in dtypes)
        article = "an" if kinds.startswith("int") else "a"
        raise TypeError(f"{name} is required: {article} {kinds} tensor of shape [batch]")
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape [batch] or None, got {type(value).__name__}")
    if value.dtype not in dtypes:
        raise TypeError(f"{name} dtype must be one of {_dtype_names(dtypes)}; got {value.dtype}")
    batch = logits.shape[0]
    if value.shape != (batch,):
        raise ValueError(f"{name} must have shape [batch] = [{batch}], got {tuple(value.shape)}")
    if value.device != logits.device:
        raise ValueError(f"{name} must be on the logits' device {logits.device}; got {value.device}")
    if value.numel() > 1 and value.stride(0) != 1:
        raise ValueError(f"{name} must be contiguous (stride 1), got stride {value.stride(0)}")


def range_describer(name: str, value: torch.Tensor, allowed: str, lo, hi, *, lo_open: bool = False,
                    hi_open: bool = False):
    """The eager check lo <(=) value <(=) hi (NaN out of range): raises `check_range`'s error."""
    return RangeCheck(value, lo, hi, lo_open, hi_open, name, allowed).describe


def guard_range(guard: ValueGuard, name: str, value: torch.Tensor, allowed: str, lo, hi, *,
                lo_open: bool = False, hi_open: bool = False) -> None:
    """Add the check lo <(=) value <(=) hi (NaN out of range) of parameter `name` to `guard`:
    one `RangeCheck`, its eager form (`describe`, as `range_describer`) and its device form."""
    check = RangeCheck(value, lo, hi, lo_open, hi_open, name, allowed)
    guard.check(name, check.describe, check)


def check_sampled_vocab(logits: torch.Tensor) -> None:
    """A sampler's logits have a column to sample (a sampled id lies in [0, vocab))."""
    if logits.size(1) == 0:
        raise ValueError("logits must have vocab >= 1 (a sampled id lies in [0, vocab)); got vocab 0")


def check_seed(name: str, seed) -> None:
    """A Python int that `torch.Generator.manual_seed` takes: in [-2**63, 2**64 - 1]."""
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"{name} must be an int in [-2**63, 2**64 - 1]; got {type(seed).__name__} {seed!r}")
    if not -2**63 <= seed < 2**64:
        raise ValueError(f"{name} must be an int in [-2**63, 2**64 - 1]; got {seed}")


def check_top_k_top_p(logits: torch.Tensor, k: torch.Tensor | None, p: torch.Tensor | None,
                      *, names: tuple[str, str] = ("k", "p"), guard: ValueGuard | None = None) -> ValueGuard:
    """k: per-row int32/int64, k <= 0 (only -1 and 0 allowed) or k >= V disables top-k;
    p: per-row float32, in (0, 1], p == 1 disables top-p. `names`: the caller's names for
    k and p in messages. Value checks go to `guard` (a new one if None), which is returned;
    unchecked (mode off), k < -1 acts as off and p outside (0, 1] gives an unspecified mask
    of the row."""
    k_name, p_name = names
    check_logits(logits)
    guard = ValueGuard(logits.device, "top_k_top_p") if guard is None else guard
    if k is not None:
        check_row_param(k_name, k, logits, INDEX_DTYPES)
        guard_range(guard, k_name, k, "-1 or 0 (top-k off) or >= 1 (k >= vocab is clamped)", -1,
                    INDEX_MAX[k.dtype])
    if p is not None:
        check_row_param(p_name, p, logits, (torch.float32,))
        guard_range(guard, p_name, p, "in (0, 1] (1 turns top-p off)", 0.0, 1.0, lo_open=True)
    return guard


def check_min_p(logits: torch.Tensor, min_p: torch.Tensor | None, guard: ValueGuard | None = None) -> ValueGuard:
    """min_p: per-row float32 [batch] on the logits' device, in [0, 1], or None. The range
    is a value check, added to `guard` (a new one if None) and returned; unchecked, min_p > 1
    acts as 1 and min_p < 0 or NaN as 0 (off)."""
    check_logits(logits)
    guard = ValueGuard(logits.device, "apply_min_p") if guard is None else guard
    if min_p is not None:
        check_row_param("min_p", min_p, logits, (torch.float32,))
        guard_range(guard, "min_p", min_p, "in [0, 1] (0 turns min-p off, 1 keeps only the maximum and its ties)",
                    0.0, 1.0)
    return guard


def check_softmax_temperature(logits: torch.Tensor, temperature: torch.Tensor | None) -> None:
    """temperature: per-row float32 [batch] on the logits' device, finite and > 0, or None."""
    check_logits(logits)
    if temperature is None:
        return
    check_row_param("temperature", temperature, logits, (torch.float32,))
    guard = ValueGuard(logits.device, "softmax_torch")
    guard_range(guard, "temperature", temperature, "finite and > 0 for a softmax", 0.0, FLOAT32_MAX, lo_open=True)
    guard.check_now()


def _id_shape(dims: int) -> str:
    """The shape of a batch of id lists of `dims` dimensions, as error messages name it."""
    return "[batch, length]" if dims == 2 else "[batch, " + ", ".join(["n"] * (dims - 1)) + "]"


def check_id_layout(name: str, ids: torch.Tensor, logits: torch.Tensor, *, dims: int = 2) -> None:
    """A batch of token-id lists: int32/int64, `dims` dimensions with shape[0] == batch, on
    the logits' device."""
    if ids is None:
        raise TypeError(f"{name} is required: an int32/int64 tensor {_id_shape(dims)}, right-padded with -1")
    if not isinstance(ids, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor {_id_shape(dims)} or None, got {type(ids).__name__}")
    if ids.dtype not in INDEX_DTYPES:
        raise TypeError(f"{name} dtype must be one of int32, int64; got {ids.dtype}")
    if ids.dim() != dims or ids.size(0) != logits.size(0):
        raise ValueError(f"{name} must have shape {_id_shape(dims)} with batch = {logits.size(0)}, "
                         f"got {tuple(ids.shape)}")
    if ids.device != logits.device:
        raise ValueError(f"{name} must be on the logits' device {logits.device}; got {ids.device}")


def token_ids_describer(name: str, ids: torch.Tensor, vocab: int, ignored: tuple[int, ...] = ()):
    """The eager check: every entry is in [0, vocab), -1 (PAD_ID), or one of `ignored`."""
    def describe() -> None:
        ok = ((ids >= 0) & (ids < vocab)) | (ids == PAD_ID)
        for extra in ignored:
            ok |= ids == extra
        if ids.numel() and not bool(ok.all()):
            also = "".join(f", {i}" for i in ignored)
            raise ValueError(f"{name} must hold token ids in [0, {vocab}) or -1 (padding){also}; got {int(ids[~ok][0])}")
    return describe


def history(output_token_ids: torch.Tensor) -> torch.Tensor:
    """The generated history as every op reads it: the entries before each row's first -1;
    that -1 and every later entry become -1 (unknown, ignored). A new tensor; no sync."""
    if output_token_ids.numel() == 0:
        return output_token_ids.clone()
    ended = (output_token_ids == PAD_ID).to(torch.int32).cummax(dim=1).values.bool()
    return output_token_ids.masked_fill(ended, PAD_ID)
