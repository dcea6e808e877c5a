"""allowed_token_ids, logit_bias and min_tokens per row, in place (vLLM MRV2 `_bias_kernel`).

Contract (the oracle `samplecheck.oracles.logit_bias` states the semantics in full):
- `logits` [B, V] fp32/bf16/fp16, any row stride, column stride 1. Modified in place and
  returned. Every part is optional; each row applies them in this order:
  1. `allowed_token_ids` [B, A] int32/int64, right-padded with -1, A <= 1024: a row holding at
     least one id masks (-inf) every other token; its allowed entries keep their exact bits.
     A row of -1 only is unrestricted. Repeated allowed ids are harmless.
  2. `logit_bias_ids` [B, K] int32/int64 (-1 padded, K <= 1024) with `logit_bias_values`
     [B, K] float32 (finite where the id is not -1; values at -1 positions are ignored):
     l[t] = round_to_dtype(fp32(l[t]) + b), one fp32 add, then round-to-nearest-even into
     the logits' dtype (`samplecheck.kernels.rounding.to_output_dtype`); -inf + b stays -inf and an
     fp16/bf16/fp32 overflow gives +-inf. Ids must be unique within a row (ValueError).
  3. `stop_token_ids` [B, S] int32/int64 (-1 padded, S <= 128) with `min_tokens` [B] and
     `output_len` [B] (int32/int64, >= 0; output_len = tokens generated so far): rows with
     output_len < min_tokens mask every stop id to -inf. The three come together.
- Every id is in [0, V) or -1 (ValueError otherwise: an id >= V would address the next row
  or the row-stride gap, GHSA-wr27-mx79-rg6c). Id ranges, unique bias ids, finite bias
  values and min_tokens/output_len >= 0 are value checks (`values_checked`); unchecked,
  the kernel skips ids outside [0, V) (they address nothing), and repeated bias ids or
  negative counts give an unspecified result inside the row.
- Grouped fields: `logit_bias_ids` and `logit_bias_values` come together, and so do
  `stop_token_ids`, `min_tokens` and `output_len` (ValueError naming the missing one
  otherwise); `allowed_token_ids` stands alone.
- Non-finite logits: allowed entries keep their bits (NaN, +-inf included); a bias adds in
  IEEE fp32 (NaN stays NaN, +inf + b = +inf). Only the listed entries, and the whole row of
  a restricted row, are written; row-stride gaps never are.

One program per row, no scratch: the allowed values are gathered into registers (one block
of max(ALLOWED_FLOOR, next power of two of A) <= MAX_ALLOWED ids), the row is filled with
-inf, and they are scattered back; the bias and stop entries, independent of each other, go
in steps of LIST_BLOCK ids. A barrier separates each phase, since on a GPU different threads
of the program store to the same entries in consecutive phases (#46245). So the launch
constants do not follow the list widths: the flags, one of four allowlist blocks, LIST_BLOCK
and BLOCK.

Value checks (deferred or captured mode, `samplecheck.kernels.validation`): when the batch's
lists are small (at most INLINE_CHECK_IDS ids read, counting the bias ids once more per
REPEAT_TILE of their row for the repeat check), every program checks every list and count of
the batch itself (`logit_bias_failures`), writes nothing where a check fails, and program 0
records the failed checks in the call's guard flag: one launch. Larger calls launch
`_logit_bias_guard_kernel` (one program per row) first.
"""

import contextlib

import numpy as np
import torch
import triton
import triton.language as tl

from samplecheck.kernels.rounding import to_fp32, to_output_dtype
from samplecheck.kernels.launching import jit
from samplecheck.kernels.runtime import cdiv, check_launchable, device_kind, is_interpreted, next_power_of_2
from samplecheck.kernels.guard import (FLOAT32_MAX_JIT, INLINE_CHECK_IDS, INT64_MAX_JIT, ValueGuard, list_has_bad_id,
                                      record_failed, rows_in_range)
from samplecheck.kernels.validation import (INDEX_DTYPES, INDEX_MAX, PAD_ID, check_id_layout, check_logits,
                                            check_row_param, range_describer, token_ids_describer)

# Per-row caps of vLLM MRV2 (entries per list, padding included).
MAX_ALLOWED = 1024
MAX_BIAS = 1024
MAX_STOP = 128
# Entries per step of the -inf fill (the interpreter pays per operation, so the CPU block is wide).
BLOCK = {"cuda": 1024, "cpu": 4096}
# Ids per step of the bias and stop lists (narrow on the CPU, so that the suite's short lists
# span several steps).
LIST_BLOCK = {"cuda": 256, "cpu": 4}
# Smallest allowlist block: widths up to MAX_ALLOWED take one of 128, 256, 512 or 1024.
ALLOWED_FLOOR = 128
# The fused value check (one program per row): ids per step, and the side of the tile of id
# pairs compared for repeats.
GUARD_BLOCK = {"cuda": 256, "cpu": 64}
REPEAT_TILE = {"cuda": 64, "cpu": 16}


def _check_width(name: str, ids: torch.Tensor, cap: int) -> None:
    if ids.size(1) > cap:
        raise ValueError(f"{name} may hold at most {cap} ids per row (padding included); got {ids.size(1)}")


def _check_pair(first: str, a, second: str, b) -> None:
    if (a is None) != (b is None):
        raise ValueError(f"{first} and {second} must be given together (or both None)")


def check_logit_bias(logits, allowed_token_ids, logit_bias_ids, logit_bias_values,
                     stop_token_ids, min_tokens, output_len, guard: ValueGuard | None = None) -> ValueGuard:
    """Shapes, dtypes, devices and caps of every argument (raised at once), and the value
    checks (id ranges, finite and unique bias entries, counts >= 0), added to `guard` (a new
    one if None) as one fused device check, and returned."""
    check_logits(logits)
    guard = ValueGuard(logits.device, "apply_logit_bias") if guard is None else guard
    vocab = logits.size(1)
    named = []  # (name, eager check), in the order of the flag's bits
    if allowed_token_ids is not None:
        check_id_layout("allowed_token_ids", allowed_token_ids, logits)
        _check_width("allowed_token_ids", allowed_token_ids, MAX_ALLOWED)
        named.append(("allowed_token_ids", token_ids_describer("allowed_token_ids", allowed_token_ids, vocab)))
    _check_pair("logit_bias_ids", logit_bias_ids, "logit_bias_values", logit_bias_values)
    if logit_bias_ids is not None:
        check_id_layout("logit_bias_ids", logit_bias_ids, logits)
        _check_width("logit_bias_ids", logit_bias_ids, MAX_BIAS)
        _check_bias_values(logit_bias_ids, logit_bias_values)
        named += [("logit_bias_ids", token_ids_describer("logit_bias_ids", logit_bias_ids, vocab)),
                  ("logit_bias_values", _finite_values_describer(logit_bias_ids, logit_bias_values)),
                  ("logit_bias_ids", _unique_ids_describer(logit_bias_ids))]
    _check_pair("min_tokens", min_tokens, "stop_token_ids", stop_token_ids)
    _check_pair("min_tokens", min_tokens, "output_len", output_len)
    if stop_token_ids is not None:
        check_id_layout("stop_token_ids", stop_token_ids, logits)
        _check_width("stop_token_ids", stop_token_ids, MAX_STOP)
        named.append(("stop_token_ids", token_ids_describer("stop_token_ids", stop_token_ids, vocab)))
        for name, count in (("min_tokens", min_tokens), ("output_len", output_len)):
            check_row_param(name, count, logits, INDEX_DTYPES)
            named.append((name, range_describer(name, count, ">= 0", 0, INDEX_MAX[count.dtype])))
    if named:
        guard.fused(named, lambda flag, first: _launch_guard(
            flag, first, vocab, allowed_token_ids, logit_bias_ids, logit_bias_values, stop_token_ids,
            min_tokens, output_len))
    return guard


def _repeated_ids(ids: torch.Tensor) -> torch.Tensor:
    """bool [B, K - 1]: True at an id (not -1) equal to its predecessor in the row's sorted ids."""
    ordered = ids.sort(dim=1).values
    return (ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] != PAD_ID)


def _check_bias_values(ids: torch.Tensor, values: torch.Tensor) -> None:
    """float32 values shaped like the ids, on their device."""
    if not isinstance(values, torch.Tensor):
        raise TypeError(f"logit_bias_values must be a torch.Tensor [batch, length], got {type(values).__name__}")
    if values.dtype != torch.float32:
        raise TypeError(f"logit_bias_values dtype must be float32; got {values.dtype}")
    if values.shape != ids.shape:
        raise ValueError(f"logit_bias_values must have the shape of logit_bias_ids {tuple(ids.shape)}, "
                         f"got {tuple(values.shape)}")
    if values.device != ids.device:
        raise ValueError(f"logit_bias_values must be on the device of logit_bias_ids {ids.device}; got {values.device}")


def _finite_values_describer(ids: torch.Tensor, values: torch.Tensor):
    """The eager check: bias values are finite where an id is given."""
    def describe() -> None:
        bad = (ids != PAD_ID) & ~torch.isfinite(values)
        if ids.numel() and bool(bad.any()):
            raise ValueError("logit_bias_values must be finite where logit_bias_ids is not -1; "
                             f"got {values[bad][0].item()}")
    return describe


def _unique_ids_describer(ids: torch.Tensor):
    """The eager check: no bias id (other than -1) repeats within a row."""
    def describe() -> None:
        repeated = _repeated_ids(ids)
        if ids.numel() and bool(repeated.any()):
            row = int(repeated.any(dim=1).nonzero()[0])
            repeat = int(ids.sort(dim=1).values[:, 1:][repeated][0])
            raise ValueError(f"logit_bias_ids must not repeat an id within a row; row {row} repeats {repeat}")
    return describe


@triton.jit
def _any_repeat(ids_ptr, length, TILE: tl.constexpr):
    """True when an id other than -1 occurs twice in the list (pairs compared in tiles)."""
    lanes = tl.arange(0, TILE)
    repeats = tl.zeros([], dtype=tl.int32)
    for i in range(0, length, TILE):
        a = tl.load(ids_ptr + i + lanes, mask=i + lanes < length, other=-1)
        for j in range(i, length, TILE):
            b = tl.load(ids_ptr + j + lanes, mask=j + lanes < length, other=-1)
            later = (j + lanes)[None, :] > (i + lanes)[:, None]
            repeats += tl.sum(tl.sum(((a[:, None] == b[None, :]) & (a[:, None] != -1) & later).to(tl.int32),
                                     axis=1), axis=0)
    return repeats > 0


@triton.jit
def logit_bias_failures(rows, V, allowed_ptr, A, bias_ids_ptr, bias_values_ptr, K, stop_ptr, S, min_tokens_ptr,
                        output_len_ptr, bias_first, stop_first, HAS_ALLOWED: tl.constexpr, HAS_BIAS: tl.constexpr,
                        HAS_STOP: tl.constexpr, BLOCK: tl.constexpr, TILE: tl.constexpr):
    """The failed checks of `rows` consecutive rows (pointers at the first; A, K, S: the
    lists' widths), as bits in check_logit_bias' order: a group given takes consecutive bits
    (allowed ids from 0; bias ids, values, repeats from `bias_first`; stop ids, min_tokens,
    output_len from `stop_first`), a group not given none."""
    failed = tl.zeros([], dtype=tl.int32)
    if HAS_ALLOWED:
        failed |= tl.where(list_has_bad_id(allowed_ptr, rows * A, V, -1, BLOCK), 1, 0)
    if HAS_BIAS:
        bias = tl.where(list_has_bad_id(bias_ids_ptr, rows * K, V, -1, BLOCK), 1, 0)
        bad_values = tl.zeros([], dtype=tl.int32)
        for start in range(0, rows * K, BLOCK):
            k = start + tl.arange(0, BLOCK)
            given = tl.load(bias_ids_ptr + k, mask=k < rows * K, other=-1) != -1
            b = tl.load(bias_values_ptr + k, mask=given, other=0.0)
            bad_values += tl.sum((given & ~((b == b) & (tl.abs(b) <= FLOAT32_MAX_JIT))).to(tl.int32), axis=0)
        bias |= tl.where(bad_values > 0, 2, 0)
        repeats = tl.zeros([], dtype=tl.int32)
        for row in range(0, rows):
            repeats += _any_repeat(bias_ids_ptr + row * K, K, TILE).to(tl.int32)
        failed |= (bias | tl.where(repeats > 0, 4, 0)) << bias_first
    if HAS_STOP:
        stop = tl.where(list_has_bad_id(stop_ptr, rows * S, V, -1, BLOCK), 1, 0)
        count_max = tl.full([], INT64_MAX_JIT, tl.int64)  # a tensor: the counts may be int32
        stop |= tl.where(rows_in_range(min_tokens_ptr, rows, 0, count_max, False, False, BLOCK), 0, 2)
        stop |= tl.where(rows_in_range(output_len_ptr, rows, 0, count_max, False, False, BLOCK), 0, 4)
        failed |= stop << stop_first
    return failed


@jit(do_not_specialize=["flag_ptr", "first", "bias_first", "stop_first", "V", "allowed_ptr", "A", "bias_ids_ptr",
                       "bias_values_ptr", "K", "stop_ptr", "S", "min_tokens_ptr", "output_len_ptr"])
def _logit_bias_guard_kernel(flag_ptr, first, bias_first, stop_first, V, allowed_ptr, A, bias_ids_ptr,
                             bias_values_ptr, K, stop_ptr, S, min_tokens_ptr, output_len_ptr,
                             HAS_ALLOWED: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_STOP: tl.constexpr,
                             BLOCK: tl.constexpr, TILE: tl.constexpr):
    """One program per row: its failed checks OR-ed into the flag from bit `first`."""
    row = tl.program_id(0).to(tl.int64)
    failed = logit_bias_failures(1, V, allowed_ptr + row * A, A, bias_ids_ptr + row * K, bias_values_ptr + row * K,
                                 K, stop_ptr + row * S, S, min_tokens_ptr + row, output_len_ptr + row, bias_first,
                                 stop_first, HAS_ALLOWED, HAS_BIAS, HAS_STOP, BLOCK, TILE)
    if failed != 0:
        tl.atomic_or(flag_ptr, failed << first)


def group_firsts(allowed, bias_ids) -> tuple[int, int]:
    """The first bits of the bias and stop groups (`logit_bias_failures`), relative to the
    call's first check of this op."""
    bias_first = int(allowed is not None)
    return bias_first, bias_first + 3 * (bias_ids is not None)


def _launch_guard(flag, first, vocab, allowed, bias_ids, bias_values, stop, min_tokens, output_len) -> None:
    """The fused device check of `check_logit_bias` (an absent list passes the flag as a
    placeholder, never read)."""
    batch = next(ids for ids in (allowed, bias_ids, stop) if ids is not None).size(0)
    if batch == 0:
        return
    allowed_arg, A = _ids_arg(allowed, flag)
    bias_arg, K = _ids_arg(bias_ids, flag)
    stop_arg, S = _ids_arg(stop, flag)
    given = stop is not None
    kind = device_kind(flag)
    _logit_bias_guard_kernel[(batch,)](
        flag, first, *group_firsts(allowed, bias_ids), vocab, allowed_arg, A, bias_arg,
        bias_values.contiguous() if bias_values is not None else flag, K, stop_arg, S, min_tokens if given else flag,
        output_len if given else flag, HAS_ALLOWED=allowed is not None, HAS_BIAS=bias_ids is not None,
        HAS_STOP=given, BLOCK=GUARD_BLOCK[kind], TILE=REPEAT_TILE[kind])


@triton.jit
def _fill_row(row_ptr, V, BLOCK: tl.constexpr):
    """Store -inf into entries [0, V) of the row."""
    offs = tl.arange(0, BLOCK)
    neg_inf = tl.full([BLOCK], float("-inf"), tl.float32).to(row_ptr.dtype.element_ty)
    for start in range(0, V, BLOCK):
        idx = start + offs
        tl.store(row_ptr + idx, neg_inf, mask=idx < V)


@triton.jit
def _load_ids(ids_ptr, k, length, V):
    """Entries k of the row's id list as int64, -1 at k >= `length` and for ids outside
    [0, V) (which only an unchecked call can pass): such ids are never addressed."""
    ids = tl.load(ids_ptr + k, mask=k < length, other=-1).to(tl.int64)
    return tl.where((ids >= 0) & (ids < V), ids, -1)


# Every access is at an unspecialized offset (a row at row * row_stride, a list's row at row * its
# width, the ids themselves): the generated code vectorizes none, so no pointer's alignment and no
# integer's divisibility changes it (sm_90 PTX is identical with the logits 16-byte aligned or not).
@jit(do_not_specialize=["logits_ptr", "row_stride", "V", "allowed_ptr", "A", "bias_ids_ptr", "bias_values_ptr",
                       "K", "stop_ptr", "S", "min_tokens_ptr", "output_len_ptr", "guard_ptr", "B", "bias_first",
                       "stop_first"])
def _logit_bias_kernel(logits_ptr, row_stride, V,
                       allowed_ptr, A, bias_ids_ptr, bias_values_ptr, K,
                       stop_ptr, S, min_tokens_ptr, output_len_ptr,
                       HAS_ALLOWED: tl.constexpr, A_BLOCK: tl.constexpr, HAS_BIAS: tl.constexpr,
                       HAS_STOP: tl.constexpr, LIST_BLOCK: tl.constexpr, BLOCK: tl.constexpr,
                       guard_ptr, GUARDED: tl.constexpr, B, bias_first, stop_first, check,
                       CHECK_BLOCK: tl.constexpr, TILE: tl.constexpr):
    """HAS_*: the group is given (a list may be empty: width 0)."""
    row = tl.program_id(0).to(tl.int64)
    row_ptr = logits_ptr + row * row_stride
    clear = True
    if GUARDED:
        clear = tl.load(guard_ptr) == 0
        if check:
            failed = logit_bias_failures(B, V, allowed_ptr, A, bias_ids_ptr, bias_values_ptr, K, stop_ptr, S,
                                         min_tokens_ptr, output_len_ptr, bias_first, stop_first, HAS_ALLOWED,
                                         HAS_BIAS, HAS_STOP, CHECK_BLOCK, TILE)
            record_failed(guard_ptr, failed)
            clear = clear & (failed == 0)
    if HAS_ALLOWED & clear:
        # A <= A_BLOCK: the whole allowlist is held across the fill.
        allowed = _load_ids(allowed_ptr + row * A, tl.arange(0, A_BLOCK), A, V)
        keep = allowed >= 0
        saved = tl.load(row_ptr + allowed, mask=keep)
        tl.debug_barrier()
        if tl.max(keep.to(tl.int32), axis=0) > 0:
            _fill_row(row_ptr, V, BLOCK)
        tl.debug_barrier()
        tl.store(row_ptr + allowed, saved, mask=keep)
        tl.debug_barrier()
    if HAS_BIAS & clear:
        # Bias ids are unique within a row: no step reads an entry another step writes.
        for start in range(0, K, LIST_BLOCK):
            k = start + tl.arange(0, LIST_BLOCK)
            ids = _load_ids(bias_ids_ptr + row * K, k, K, V)
            given = ids >= 0
            b = tl.load(bias_values_ptr + row * K + k, mask=given, other=0.0)
            x = to_fp32(tl.load(row_ptr + ids, mask=given, other=0.0))
            tl.store(row_ptr + ids, to_output_dtype(x + b, logits_ptr.dtype.element_ty), mask=given)
        tl.debug_barrier()
    if HAS_STOP & clear:
        if tl.load(output_len_ptr + row) < tl.load(min_tokens_ptr + row):
            neg_inf = tl.full([LIST_BLOCK], float("-inf"), tl.float32).to(logits_ptr.dtype.element_ty)
            for start in range(0, S, LIST_BLOCK):
                stop = _load_ids(stop_ptr + row * S, start + tl.arange(0, LIST_BLOCK), S, V)
                tl.store(row_ptr + stop, neg_inf, mask=stop >= 0)


def _ids_arg(ids: torch.Tensor | None, like: torch.Tensor):
    """(tensor, width) for the kernel: a contiguous id list (an empty one too: its pointer
    keeps the list's dtype, so an empty list adds no specialization), or the placeholder
    `like` when absent (width 0)."""
    if ids is None:
        return like, 0
    return ids.contiguous(), ids.size(1)


def apply_logit_bias(logits: torch.Tensor, *, allowed_token_ids: torch.Tensor | None = None,
                     logit_bias_ids: torch.Tensor | None = None, logit_bias_values: torch.Tensor | None = None,
                     stop_token_ids: torch.Tensor | None = None, min_tokens: torch.Tensor | None = None,
                     output_len: torch.Tensor | None = None) -> torch.Tensor:
    """Apply the allowlist, the biases and the min_tokens stop mask in place (module docstring);
    returns `logits`."""
    guard = check_logit_bias(logits, allowed_token_ids, logit_bias_ids, logit_bias_values,
                             stop_token_ids, min_tokens, output_len)
    A, K, S = (0 if ids is None else ids.size(1) for ids in (allowed_token_ids, logit_bias_ids, stop_token_ids))
    launched = logits.numel() > 0 and A + K + S > 0
    kind = device_kind(logits)
    # The ids the in-kernel check reads per row (module docstring).
    read = A + S + K * (1 + cdiv(K, REPEAT_TILE[kind]))
    flag = guard.settle(in_kernel=launched and logits.size(0) * read <= INLINE_CHECK_IDS[kind])
    return launch_logit_bias(logits, allowed_token_ids, logit_bias_ids, logit_bias_values, stop_token_ids,
                             min_tokens, output_len, flag, guard.on_device)


def launch_logit_bias(logits: torch.Tensor, allowed_token_ids: torch.Tensor | None,
                      logit_bias_ids: torch.Tensor | None, logit_bias_values: torch.Tensor | None,
                      stop_token_ids: torch.Tensor | None, min_tokens: torch.Tensor | None,
                      output_len: torch.Tensor | None, flag: torch.Tensor | None, check: bool) -> torch.Tensor:
    """`apply_logit_bias`'s launch, for arguments that passed `check_logit_bias`: under the guard
    flag `flag` (None: unguarded); `check`: the kernel makes the call's value checks."""
    batch, vocab = logits.shape
    allowed, A = _ids_arg(allowed_token_ids, logits)
    bias_ids, K = _ids_arg(logit_bias_ids, logits)
    stop, S = _ids_arg(stop_token_ids, logits)
    kind = device_kind(logits)
    if logits.numel() == 0 or A + K + S == 0:
        return logits
    given = stop_token_ids is not None
    bias_first, stop_first = group_firsts(allowed_token_ids, logit_bias_ids)
    check_launchable(_logit_bias_kernel, logits)
    # The interpreter computes with numpy, which warns when l + b overflows (or its fp16
    # store does): that is the specified result, not an error.
    quiet = np.errstate(over="ignore") if is_interpreted(_logit_bias_kernel) else contextlib.nullcontext()
    with quiet:
        _logit_bias_kernel[(batch,)](
            logits, logits.stride(0), vocab,
            allowed, A, bias_ids, logit_bias_values.contiguous() if logit_bias_values is not None else logits, K,
            stop, S, min_tokens if given else logits, output_len if given else logits,
            HAS_ALLOWED=allowed_token_ids is not None, A_BLOCK=max(ALLOWED_FLOOR, next_power_of_2(A)),
            HAS_BIAS=logit_bias_ids is not None, HAS_STOP=given, LIST_BLOCK=LIST_BLOCK[kind], BLOCK=BLOCK[kind],
            guard_ptr=flag, GUARDED=flag is not None, B=batch, bias_first=bias_first, stop_first=stop_first,
            check=check, CHECK_BLOCK=GUARD_BLOCK[kind], TILE=REPEAT_TILE[kind])
    return logits
