"""min-p masking in log space, in place: the Triton kernel and its PyTorch fallback.

Contract (the oracle `samplecheck.oracles.min_p` states the semantics in full):
- `logits` [B, V] fp32/bf16/fp16, any row stride, column stride 1; loads upcast to fp32.
- `min_p` [B] float32 on the logits' device, in [0, 1] (None: no-op).
- Per row, in fp32: m = max(l), threshold = m + min(log(min_p), 0); entries with
  l < threshold become -inf, every other entry is bitwise unchanged (only -inf is ever
  stored, so no rounding is involved). A token exactly at the threshold is kept.
- min_p == 0 rows are skipped (no-op). min_p == 1 uses log = 0 exactly, so it keeps
  the maximum and its ties whatever `tl.log` returns at 1; the clamp at 0 keeps the
  maximum in every row even if an approximate log of a value just below 1 came out
  positive.
- -inf entries stay -inf; an all -inf row is unchanged (-inf + finite = -inf, and
  -inf < -inf is false).
- Non-finite entries (docs/backends.md, "Edge values"): in a row where min-p is on, NaN
  reads as -inf (it never sets the max) and is always dropped (set to -inf), so an all-NaN
  row becomes all -inf; +inf entries set the max, so only the +inf entries are kept.
  Rows with min_p == 0 are untouched, NaN included.

Two passes per row (one program per row): the row max, then the masking pass, which
stores -inf only where an entry is dropped. Row-stride gaps are never read or written.
"""

import torch
import triton
import triton.language as tl

from samplecheck.kernels.rounding import to_fp32
from samplecheck.kernels.runtime import check_launchable
from samplecheck.kernels.guard import ValueGuard
from samplecheck.kernels.validation import check_logits, check_row_param, guard_range

# Entries per loop step. The interpreter pays per operation, so the CPU block is wide;
# the suite's vocab sizes 8191-8193 and the full-size regression example (50272) still
# make both passes loop over several blocks.
BLOCK = {"cuda": 1024, "cpu": 4096}


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


@triton.jit
def _min_p_kernel(logits_ptr, row_stride, min_p_ptr, V, guard_ptr, GUARDED: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    min_p = tl.load(min_p_ptr + row).to(tl.float32)
    clear = True
    if GUARDED:
        clear = tl.load(guard_ptr) == 0
    if (min_p > 0.0) & clear:
        row_ptr = logits_ptr + row * row_stride
        offs = tl.arange(0, BLOCK)
        # Pass 1: the row max (elementwise over blocks, then one reduction).
        block_max = tl.full([BLOCK], float("-inf"), tl.float32)
        for start in range(0, V, BLOCK):
            idx = start + offs
            x = to_fp32(tl.load(row_ptr + idx, mask=idx < V, other=float("-inf")))
            block_max = tl.maximum(block_max, tl.where(x == x, x, float("-inf")))  # NaN reads as -inf
        row_max = tl.max(block_max, axis=0)
        log_min_p = tl.where(min_p >= 1.0, 0.0, tl.minimum(tl.log(min_p), 0.0))
        threshold = row_max + log_min_p
        # Pass 2: -inf below the threshold, nothing else.
        neg_inf = tl.full([BLOCK], float("-inf"), tl.float32).to(logits_ptr.dtype.element_ty)
        for start in range(0, V, BLOCK):
            idx = start + offs
            in_row = idx < V
            x = to_fp32(tl.load(row_ptr + idx, mask=in_row, other=float("-inf")))
            tl.store(row_ptr + idx, neg_inf, mask=in_row & (x < threshold))
            tl.store(row_ptr + idx, neg_inf, mask=in_row & (x != x))


def apply_min_p(logits: torch.Tensor, min_p: torch.Tensor | None = None) -> torch.Tensor:
    """Mask `logits` in place (module docstring) and return it."""
    flag = check_min_p(logits, min_p).settle()
    batch, vocab = logits.shape
    if batch == 0 or vocab == 0 or min_p is None:
        return logits
    check_launchable(_min_p_kernel, logits)
    _min_p_kernel[(batch,)](logits, logits.stride(0), min_p, vocab, flag, GUARDED=flag is not None,
                            BLOCK=BLOCK[logits.device.type])
    return logits


def apply_min_p_torch(logits: torch.Tensor, min_p: torch.Tensor | None = None) -> torch.Tensor:
    """PyTorch fallback with the same contract: the threshold in fp32 from the row max (NaN
    read as -inf) and torch.log(min_p), then `masked_fill_` in place, NaN included where
    min-p is on. min_p == 0 rows get threshold -inf, which masks nothing."""
    check_min_p(logits, min_p).check_now()
    if logits.numel() == 0 or min_p is None:
        return logits
    nan = logits.isnan()
    row_max = logits.masked_fill(nan, float("-inf")).amax(dim=-1).to(torch.float32)
    log_min_p = torch.where(min_p >= 1, 0.0, torch.log(min_p).clamp(max=0.0))
    threshold = torch.where(min_p > 0, row_max + log_min_p, float("-inf"))
    logits.masked_fill_(logits.to(torch.float32) < threshold[:, None], float("-inf"))
    logits.masked_fill_(nan & (min_p > 0)[:, None], float("-inf"))
    return logits
