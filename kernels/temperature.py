"""Temperature scaling `l' = l / T`, in place: the Triton kernel and its PyTorch fallback.

Contract (the oracle `samplecheck.oracles.temperature` states the semantics in full):
- `logits` [B, V] fp32/bf16/fp16, any row stride, column stride 1.
- `temperature` [B] float32 on the logits' device, finite and >= 0 (None: no-op).
- Rows with 0 < T != 1: every entry becomes l / T, divided in fp32 with IEEE
  round-to-nearest (`tl.math.div_rn`; Triton's plain `/` is an approximate division on
  NVIDIA GPUs) and stored in the logits' dtype with round-to-nearest-even
  (`samplecheck.kernels.rounding.to_output_dtype`).
- T == 0 marks a greedy row: it is left untouched (never divided, never written).
  T == 1 rows are skipped, so they are bitwise the input.
- No clamp: like vLLM's kernels, a tiny T may overflow l / T to +-inf (fp16 overflows
  above 65504, e.g. any |l| > 0.066 at T = 1e-6). -inf stays -inf, 0 stays 0 (sign kept),
  and a finite logit never becomes NaN for a valid T. Callers that sample from the
  result clamp T upstream (vLLM clamps 0 < T < 0.01 to 0.01).
- Only the [B, V] view is written: row-stride gaps are never touched.

The kernel is elementwise: grid (B, chunks), each program a contiguous chunk of one row
(a multiple of BLOCK columns; enough chunks per row that about TARGET_PROGRAMS programs fill
the device), one load and one store per entry; no fp32 copy of the logits. Value check
(deferred or captured mode, `samplecheck.kernels.validation`): every program checks the
whole temperature vector itself (B floats, from cache), so no separate check launch is
needed, and a bad value anywhere makes every program write nothing; program (0, 0) records
it in the call's guard flag.
"""

import contextlib

import numpy as np
import torch
import triton.language as tl

from samplecheck.kernels.rounding import to_fp32, to_output_dtype
from samplecheck.kernels.launching import jit
from samplecheck.kernels.runtime import cdiv, check_launchable, device_kind, is_interpreted
from samplecheck.kernels.guard import (CHECK_BLOCK, FLOAT32_MAX, FLOAT32_MAX_JIT, ValueGuard, record_failed,
                                      rows_in_range)
from samplecheck.kernels.validation import check_logits, check_row_param, guard_range

# Entries per loop step, and the programs a launch aims for (chunks per row =
# cdiv(TARGET_PROGRAMS, B), at most one per block); the result depends on neither. The
# suite's vocab sizes 8191-8193 and the full-size regression example (50272) span several
# blocks and chunks, so the chunk addressing is exercised on CPU too.
BLOCK = 4096
TARGET_PROGRAMS = {"cuda": 2048, "cpu": 4}


def check_temperature(logits: torch.Tensor, temperature: torch.Tensor | None,
                      guard: ValueGuard | None = None) -> ValueGuard:
    """temperature: per-row float32 [batch] on the logits' device, finite and >= 0, or None.
    The range is a value check, added to `guard` (a new one for this call if None) and
    returned (`samplecheck.kernels.validation`); unchecked, a negative or NaN T divides the
    row by it (NaN: the row becomes NaN), in bounds."""
    check_logits(logits)
    guard = ValueGuard(logits.device, "apply_temperature") if guard is None else guard
    if temperature is not None:
        check_row_param("temperature", temperature, logits, (torch.float32,))
        guard_range(guard, "temperature", temperature, "finite and >= 0 (0: greedy row, left unchanged; 1: no-op)",
                    0.0, FLOAT32_MAX)
    return guard


@jit(do_not_specialize=["temperature_ptr", "B", "guard_ptr"])
def _temperature_kernel(logits_ptr, row_stride, temperature_ptr, B, V, chunk, guard_ptr, check,
                        GUARDED: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    t = tl.load(temperature_ptr + row).to(tl.float32)
    clear = True
    if GUARDED:
        clear = tl.load(guard_ptr) == 0
        if check:
            valid = rows_in_range(temperature_ptr, B, 0.0, FLOAT32_MAX_JIT, False, False, CHECK_BLOCK)
            record_failed(guard_ptr, tl.where(valid, 0, 1))
            clear = clear & valid
    if (t != 0.0) & (t != 1.0) & clear:
        row_ptr = logits_ptr + row * row_stride
        lo = tl.program_id(1) * chunk
        hi = tl.minimum(lo + chunk, V)
        for start in range(lo, hi, BLOCK):
            cols = start + tl.arange(0, BLOCK)
            in_row = cols < hi
            x = to_fp32(tl.load(row_ptr + cols, mask=in_row, other=0.0))
            # IEEE round-to-nearest division (div.rn.f32): Triton's `/` is an approximate
            # division on NVIDIA GPUs, and `tl.math.fdiv(..., ieee_rounding=True)` ignores the
            # flag in triton 3.6: on an H200 both differ from the correctly rounded quotient for
            # ~28% of typical logits / T, div_rn for none (subnormal results included).
            scaled = tl.math.div_rn(x, tl.broadcast_to(t, [BLOCK]))
            tl.store(row_ptr + cols, to_output_dtype(scaled, logits_ptr.dtype.element_ty), mask=in_row)


def apply_temperature(logits: torch.Tensor, temperature: torch.Tensor | None = None) -> torch.Tensor:
    """Divide each row of `logits` by its temperature in place (module docstring) and return it."""
    guard = check_temperature(logits, temperature)
    launched = logits.numel() > 0 and temperature is not None
    flag = guard.settle(in_kernel=launched)  # else the checks are launched on their own
    return launch_temperature(logits, temperature, flag, guard.on_device)


def launch_temperature(logits: torch.Tensor, temperature: torch.Tensor | None, flag: torch.Tensor | None,
                       check: bool) -> torch.Tensor:
    """`apply_temperature`'s launch, for arguments that passed `check_temperature`: under the
    guard flag `flag` (None: unguarded); `check`: the kernel makes the call's value checks."""
    batch, vocab = logits.shape
    if logits.numel() == 0 or temperature is None:
        return logits
    check_launchable(_temperature_kernel, logits)
    blocks = cdiv(vocab, BLOCK)
    chunk = cdiv(blocks, min(blocks, cdiv(TARGET_PROGRAMS[device_kind(logits)], batch))) * BLOCK
    # The interpreter computes with numpy, which warns when l / T overflows to inf (or the
    # fp16 store does): that is the specified result, not an error.
    quiet = np.errstate(over="ignore") if is_interpreted(_temperature_kernel) else contextlib.nullcontext()
    with quiet:
        _temperature_kernel[(batch, cdiv(vocab, chunk))](
            logits, logits.stride(0), temperature, batch, vocab, chunk, flag, check,
            GUARDED=flag is not None, BLOCK=BLOCK)
    return logits


def apply_temperature_torch(logits: torch.Tensor, temperature: torch.Tensor | None = None) -> torch.Tensor:
    """PyTorch fallback with the same contract: fp32 division (IEEE on CPU and CUDA), then
    `Tensor.to(dtype)` (round-to-nearest-even) into the rows with 0 < T != 1."""
    check_temperature(logits, temperature).check_now()
    if logits.numel() == 0 or temperature is None:
        return logits
    active = (temperature != 0) & (temperature != 1)
    rows = active.nonzero().flatten()
    if rows.numel():
        scaled = logits.index_select(0, rows).to(torch.float32) / temperature.index_select(0, rows)[:, None]
        logits.index_copy_(0, rows, scaled.to(logits.dtype))
    return logits
