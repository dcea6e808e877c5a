"""min-p masking in log space, in place: the Triton kernel and its PyTorch fallback.

Contract (the oracle `samplecheck.oracles.min_p` states the semantics in full):
- `logits` [B, V] fp32/bf16/fp16, any row stride, column stride 1; loads upcast to fp32.
- `min_p` [B] float32 on the logits' device, in [0, 1] (None: no-op).
- Per row, in fp32: m = max(l), threshold = m + min(log(min_p), 0); entries with
  l < threshold become -inf, every other entry is bitwise unchanged (stored back with the bits
  it was loaded with: no rounding is involved). A token exactly at the threshold is kept.
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

Launch (`plan`): a row is cut into `splits` chunks of `chunk` columns (a multiple of BLOCK).
Small batches (below ROW_LOOP_MIN rows) take two launches over a [B, splits] grid, with enough
chunks per row for about TARGET_PROGRAMS programs: `_chunk_max_kernel` writes each chunk's max
to an fp32 [B, splits] scratch (4 * B * splits bytes, within the suite's memory slack: B *
splits stays near TARGET_PROGRAMS), then `_min_p_kernel`'s programs each take the row max from
the row's chunk maxima (a max, so exact whatever the order) and mask their own chunk, walking
the chunks in the reverse order of the first launch, so the chunks read last (still in L2) are
masked first. Larger batches take one launch of at most ROW_PROGRAMS programs, each looping
over rows (row r, r + programs, ...): the row max, then the masking pass, one row at a time,
its blocks in the reverse order of the max's pass (the blocks read last are the likeliest to
be in L2 still).
The masking pass writes each block of entries back whole: -inf where an entry is dropped, the
entry's own loaded bits elsewhere (so kept entries end bitwise unchanged). One unmasked vector
store per block: a store masked per entry is split into 2-byte stores of partial sectors,
2-3x slower on the H200 (docs/gpu-runs-2026-12-04.md, session 28). Row-stride gaps are never read or
written. No host synchronisation: the call is CUDA-graph capturable.
Value check (deferred or captured mode, `samplecheck.kernels.validation`): every program of
`_min_p_kernel` checks the whole min_p vector itself (B floats, from cache), so no separate
check launch is needed, and a bad value anywhere makes every program write nothing (the
chunk maxima are scratch); program (0, 0) records it in the call's guard flag.
"""

import torch
import triton
import triton.language as tl

from samplecheck.kernels.guard import CHECK_BLOCK, record_failed, rows_in_range
from samplecheck.kernels.rounding import to_fp32
from samplecheck.kernels.row_splits import max_of_chunk_maxima
from samplecheck.kernels.launching import jit
from samplecheck.kernels.runtime import cdiv, check_launchable, device_kind
from samplecheck.kernels.validation import check_min_p

# Entries per loop step. The interpreter pays per operation, so the CPU block is wide;
# the suite's vocab sizes 8191-8193 then split into three chunks at batch 1 and the
# full-size regression example (50272) loops over several blocks in one chunk.
BLOCK = {"cuda": 4096, "cpu": 4096}
# Programs the split launches aim at (chunks per row = cdiv(TARGET_PROGRAMS, B)), for batches
# below ROW_LOOP_MIN; from ROW_LOOP_MIN rows up, one launch of at most ROW_PROGRAMS programs
# that loop over rows (module docstring). On the H200 (bf16, V = 151936; docs/gpu-runs.md,
# session 28) the split was the faster up to 64 rows (24 us against 32), the row loop at 256 x
# 32000 (17 against 22), the two within 5% at 256 and 1024 rows; 16 warps against 8: 1.1-2x.
# On the CPU every path is taken by the suite's batches (1-9 rows).
TARGET_PROGRAMS = {"cuda": 528, "cpu": 4}
ROW_LOOP_MIN = {"cuda": 128, "cpu": 5}
ROW_PROGRAMS = {"cuda": 1056, "cpu": 2}
NUM_WARPS = {"cuda": 16, "cpu": 4}
# Chunk maxima folded per step of the masking pass.
SPLIT_BLOCK = 64


@triton.jit
def _chunk_max(row_ptr, lo, hi, BLOCK: tl.constexpr):
    """max(l[lo:hi]) in fp32, NaN read as -inf (-inf for an empty or all -inf chunk)."""
    offs = tl.arange(0, BLOCK)
    block_max = tl.full([BLOCK], float("-inf"), tl.float32)
    for start in range(lo, hi, BLOCK):
        idx = start + offs
        x = to_fp32(tl.load(row_ptr + idx, mask=idx < hi, other=float("-inf")))
        block_max = tl.maximum(block_max, tl.where(x == x, x, float("-inf")))  # NaN reads as -inf
    return tl.max(block_max, axis=0)


@jit(do_not_specialize=["splits"])
def _chunk_max_kernel(logits_ptr, row_stride, min_p_ptr, V, maxima_ptr, chunk, splits, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1)
    if tl.load(min_p_ptr + row) > 0.0:
        lo = split * chunk
        chunk_max = _chunk_max(logits_ptr + row * row_stride, lo, tl.minimum(lo + chunk, V), BLOCK)
        tl.store(maxima_ptr + row * splits + split, chunk_max)


@jit(do_not_specialize=["min_p_ptr", "B", "splits", "guard_ptr"])
def _min_p_kernel(logits_ptr, row_stride, min_p_ptr, B, V, maxima_ptr, chunk, splits, guard_ptr, check,
                  GUARDED: tl.constexpr, SPLIT: tl.constexpr, BLOCK: tl.constexpr,
                  SPLIT_BLOCK: tl.constexpr):
    # Rows first, first + programs, ...; chunks in the reverse order of _chunk_max_kernel's
    # programs (module docstring).
    first = tl.num_programs(0) - 1 - tl.program_id(0)
    split = tl.num_programs(1) - 1 - tl.program_id(1)
    clear = True
    if GUARDED:
        clear = tl.load(guard_ptr) == 0
        if check:
            valid = rows_in_range(min_p_ptr, B, 0.0, 1.0, False, False, CHECK_BLOCK)
            record_failed(guard_ptr, tl.where(valid, 0, 1))
            clear = clear & valid
    for r in range(first, B, tl.num_programs(0)):
        row = tl.cast(r, tl.int64)
        min_p = tl.load(min_p_ptr + row).to(tl.float32)
        if (min_p > 0.0) & clear:
            row_ptr = logits_ptr + row * row_stride
            lo = split * chunk
            hi = tl.minimum(lo + chunk, V)
            if SPLIT:
                row_max = max_of_chunk_maxima(maxima_ptr, row, splits, SPLIT_BLOCK)
            else:
                row_max = _chunk_max(row_ptr, lo, hi, BLOCK)  # the chunk is the whole row
            log_min_p = tl.where(min_p >= 1.0, 0.0, tl.minimum(tl.log(min_p), 0.0))
            threshold = row_max + log_min_p
            # -inf below the threshold and at NaN; every other entry stored back as loaded. The
            # blocks in the reverse order of the max's pass: those read last are still in L2.
            blocks = tl.cdiv(hi - lo, BLOCK)
            for back in range(0, blocks):
                idx = lo + (blocks - 1 - back) * BLOCK + tl.arange(0, BLOCK)
                in_row = idx < hi
                loaded = tl.load(row_ptr + idx, mask=in_row, other=float("-inf"))
                x = to_fp32(loaded)
                dropped = (x < threshold) | (x != x)
                tl.store(row_ptr + idx, tl.where(dropped, float("-inf"), loaded).to(loaded.dtype), mask=in_row)


def plan(batch: int, vocab: int, device_type: str) -> tuple[int, int, int]:
    """(programs, splits, chunk): `chunk` columns per program, a multiple of BLOCK, `splits`
    per row, `programs` along the rows (module docstring)."""
    block = BLOCK[device_type]
    if batch >= ROW_LOOP_MIN[device_type]:
        return min(batch, ROW_PROGRAMS[device_type]), 1, cdiv(vocab, block) * block
    want = max(1, min(cdiv(TARGET_PROGRAMS[device_type], batch), cdiv(vocab, block)))
    chunk = cdiv(cdiv(vocab, want), block) * block
    return batch, cdiv(vocab, chunk), chunk


def apply_min_p(logits: torch.Tensor, min_p: torch.Tensor | None = None) -> torch.Tensor:
    """Mask `logits` in place (module docstring) and return it."""
    guard = check_min_p(logits, min_p)
    launched = logits.numel() > 0 and min_p is not None
    flag = guard.settle(in_kernel=launched)  # else the checks are launched on their own
    return launch_min_p(logits, min_p, flag, guard.on_device)


def launch_min_p(logits: torch.Tensor, min_p: torch.Tensor | None, flag: torch.Tensor | None,
                 check: bool) -> torch.Tensor:
    """`apply_min_p`'s launches, for arguments that passed `check_min_p`: under the guard flag
    `flag` (None: unguarded); `check`: the kernel makes the call's value checks."""
    batch, vocab = logits.shape
    if logits.numel() == 0 or min_p is None:
        return logits
    check_launchable(_min_p_kernel, logits)
    kind = device_kind(logits)
    block = BLOCK[kind]
    programs, splits, chunk = plan(batch, vocab, kind)
    warps = NUM_WARPS[kind]
    maxima = None
    if splits > 1:
        maxima = torch.empty((batch, splits), dtype=torch.float32, device=logits.device)
        _chunk_max_kernel[(batch, splits)](logits, logits.stride(0), min_p, vocab, maxima, chunk, splits, BLOCK=block,
                                           num_warps=warps)
    _min_p_kernel[(programs, splits)](logits, logits.stride(0), min_p, batch, vocab, maxima, chunk, splits, flag,
                                      check, GUARDED=flag is not None, SPLIT=splits > 1, BLOCK=block,
                                      SPLIT_BLOCK=SPLIT_BLOCK, num_warps=warps)
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
