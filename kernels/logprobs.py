"""Logprobs of the sampled token and of the top-k tokens (vLLM `num_logprobs`), NOT in place.

Contract (the oracle `samplecheck.oracles.logprobs` states the semantics in full):
- `logits` [B, V] fp32/bf16/fp16, any row stride, column stride 1. Never written: the input
  is left bitwise unchanged (row-stride gaps are never read or written either).
- `sampled` [B] int64 on the logits' device, in [0, V): the token sampled in each row.
- `num_logprobs` (a Python int or None) picks the columns:
  None -> returns None; 0 -> one column, the sampled token; k in 1..V -> k + 1 columns, the
  sampled token then the ids of the k largest values, in non-increasing value order, NaN
  above +inf (as `torch.topk(logits, k)`; which of the ids tied with the k-th value are
  chosen, and their order, is unspecified: the kernels take the lowest ids first); -1 ->
  V + 1 columns, the sampled token then ids 0..V-1 in vocab order. The sampled token may
  appear twice (column 0 and among the top-k), as in vLLM.
- Returns `Logprobs(token_ids, logprobs, ranks)`, new tensors on the logits' device:
  token_ids int64 [B, n + 1], logprobs float32 [B, n + 1], ranks int64 [B].
- logprobs[b, j] = log_softmax(l_b)[token_ids[b, j]], computed in fp32 from exactly upcast
  values: m = max(l_b), s = sum(exp(l_b - m)), lse = m + log(s), logprob = l - lse. -inf
  logits give -inf. An all -inf row gives NaN in every column (lse = -inf and
  -inf - -inf = NaN, as torch.log_softmax) and rank V. A row holding NaN or +inf gives
  NaN in every column (lse is NaN: exp(NaN) or exp(inf - inf), as torch.log_softmax).
- `sampled` in [0, V) is a value check (`values_checked`); unchecked, an id outside it is
  never read: its column's logprob is NaN and its rank 0. `num_logprobs` is a Python int
  and always checked. Deferred or captured, `_gather_kernel`'s program (0, 0) makes the
  check and records it in the call's guard flag: the outputs are new tensors and an id
  outside [0, V) is never read, so no kernel waits on it, and the call is its three
  launches (the check is launched alone only when no kernel runs: num_logprobs None).
- ranks[b] = #{i : l_b[i] >= l_b[sampled_b]}: 1-based, ties counted against the sampled
  token, exact (fp32 comparisons of exactly upcast values; IEEE, so NaN entries never
  count and a NaN sampled entry has rank 0).

Kernels: each row is cut into chunks of CHUNK columns (CHUNK depends on the device only,
never on the batch, so a row's result does not depend on its batch mates). Three launches,
each with a program per (row, chunk) or per (row, column block):
1. `_chunk_max_kernel`: each chunk's max, BLOCK (1024) lanes per step; for top-k ids chosen
   here, also the chunk's k largest entries as codes (value key, then column: distinct, so
   k rounds of a max over the chunk find them exactly);
2. `_chunk_sum_kernel`: the row max m (the max of the chunk maxima: exact), then per chunk
   the sum of exp(l - m) per lane and a tree over the lanes, and the chunk's count of
   entries >= the sampled token's value; for top-k ids chosen here, the program of the row's
   first chunk writes the ids: the sampled token, then the k largest of the row's chunk
   codes (the row's k largest entries are among them), largest first;
3. `_gather_kernel`: lse = m + log(s), with s the chunk sums folded per lane over
   SPLIT_BLOCK lanes and then a tree (a fixed order: every program of the row gets the
   same bits), the rank (exact integer sum), and x - lse at `gather_block` (<= 1024) of the
   row's n + 1 requested columns, so the tile never grows with n (vllm#46746: a
   next_pow2(n + 1) tile is 262144 lanes at V ~ 152k).
The gathered values do not depend on `gather_block` (bitwise); the sum order depends on
BLOCK and CHUNK, which are fixed, and the loads are never vectorised (the row
stride is not specialised), so the order, and with it every bit, is the same for every
layout. The sum is within the oracle's error model: at most CHUNK / BLOCK sequential
additions per lane, a 10-level tree, then at most V / CHUNK additions per lane of the
chunk sums and a 6-level tree: no deeper than ceil(V / 1024) + 10 additions. No host
synchronisation: the call is CUDA-graph capturable.
The kernels choose the top-k ids for 1 <= k <= TOP_IDS_MAX when the row's k codes per chunk
fit the largest of MERGE_TILES (V / CHUNK * k <= 4096: k <= 64 up to V = 262144); other k
take `torch.topk`, then `torch.cat` with the sampled token: on CUDA that order can leave a
row's NaN out of its top k (docs/findings.md, F17), an exception to the NaN-first order above.

Memory: the outputs ([B, n + 1] fp32 and int64, [B] int64), the per-chunk scratch
(`scratch_bytes`: fp32 maxima and sums and int32 counts, 12 bytes per row and chunk, and for
top-k ids chosen here k int64 codes per row and chunk), no [B, V]-sized scratch and no fp32
copy of the logits. Where `torch.topk` chooses the ids (its workspace torch does not bound:
up to a sort's [B, V] values and ids), it returns [B, k] values in the logits' dtype and
[B, k] int64 ids, freed once the ids are copied into `token_ids`. For n = -1 the outputs are
[B, V + 1] fp32 plus [B, V + 1] int64, plus an O(V) arange and O(B) scratch.
"""

import contextlib
from typing import NamedTuple

import numpy as np
import torch
import triton
import triton.language as tl

from samplecheck.kernels.chunk_codes import chunk_codes, row_codes, store_largest
from samplecheck.kernels.rounding import to_fp32
from samplecheck.kernels.row_splits import max_of_chunk_maxima
from samplecheck.kernels.launching import jit
from samplecheck.kernels.runtime import cdiv, check_launchable, first_fitting, is_interpreted
from samplecheck.kernels.guard import CHECK_BLOCK, RangeCheck, ValueGuard, record_failed, rows_in_range
from samplecheck.kernels.validation import check_logits, check_row_param

BLOCK = 1024  # lanes per step of the max and sum passes
# Columns per program of the max and sum passes (a multiple of BLOCK), the same on every
# device and for every batch (module docstring); the suite's vocab sizes 8191-8193 take three.
CHUNK = 4096
SPLIT_BLOCK = 64  # lanes folding the per-chunk results of a row
GATHER_BLOCK = 1024  # default columns per step of the gather (the `gather_block` keyword)
# The top-k ids are chosen by the kernels for 1 <= k <= TOP_IDS_MAX when the row's candidates
# (k per chunk) fit the largest merge tile; else by torch.topk (module docstring).
TOP_IDS_MAX = 64
MERGE_TILES = (256, 1024, 4096)  # candidates the merge holds at once: the first that fits
COL_BITS = CHUNK.bit_length() - 1  # bits of a column within its chunk (CHUNK is a power of two)
GATHER_BLOCKS = frozenset(2**i for i in range(4, 11))  # the `gather_block` values allowed


class Logprobs(NamedTuple):
    token_ids: torch.Tensor  # int64 [B, n + 1]: the sampled token, then the requested ids
    logprobs: torch.Tensor  # float32 [B, n + 1]: log_softmax of the logits at token_ids
    ranks: torch.Tensor  # int64 [B]: count of logits >= the sampled token's


def check_num_logprobs(num_logprobs, vocab: int) -> None:
    """None, or a Python int in [-1, vocab] (a host value: always checked)."""
    if num_logprobs is None:
        return
    if not isinstance(num_logprobs, int) or isinstance(num_logprobs, bool):
        raise TypeError(f"num_logprobs must be None or an int in [-1, vocab]; got {type(num_logprobs).__name__}")
    if not -1 <= num_logprobs <= vocab:
        raise ValueError(f"num_logprobs must be None, -1 (whole vocab), 0 (sampled token only) "
                         f"or in [1, vocab = {vocab}]; got {num_logprobs}")


def check_logprobs_args(logits: torch.Tensor, sampled: torch.Tensor, num_logprobs, gather_block: int) -> ValueGuard:
    """sampled: int64 [batch] in [0, V) (a value check: returned in the call's guard);
    num_logprobs: None or an int in [-1, V]; gather_block: a power of two in [16, 1024]."""
    check_logits(logits)
    vocab = logits.size(1)
    check_row_param("sampled", sampled, logits, (torch.int64,))
    guard = ValueGuard(logits.device, "compute_logprobs")

    def describe() -> None:
        bad = (sampled < 0) | (sampled >= vocab)
        if sampled.numel() and bool(bad.any()):
            raise ValueError(f"sampled must hold token ids in [0, {vocab}); got {int(sampled[bad][0])}")
    guard.check("sampled", describe, RangeCheck(sampled, 0, vocab - 1))
    check_num_logprobs(num_logprobs, vocab)
    if not isinstance(gather_block, int) or gather_block not in GATHER_BLOCKS:
        raise ValueError(f"gather_block must be a power of two in [16, 1024]; got {gather_block!r}")
    return guard


@triton.jit
def _chunk_top_codes(row_ptr, lo, hi, out_ptr, n, COL_BITS: tl.constexpr):
    """The n largest chunk codes (`samplecheck.kernels.chunk_codes`, NaN first as torch.topk)
    of entries [lo, hi) of the row, largest first, at out_ptr[0:n] (the smallest code in the
    slots a chunk of fewer than n entries leaves)."""
    local = tl.arange(0, 1 << COL_BITS)
    live = lo + local < hi
    codes = chunk_codes(tl.load(row_ptr + lo + local, mask=live), local, live, COL_BITS, True)
    store_largest(codes, out_ptr, n, False)


# Row strides and sizes are not specialised: a known alignment would vectorise the loads,
# which changes the lanes' layout and so the order of the sums (module docstring).
@jit(do_not_specialize=["row_stride", "V", "splits", "n_top"])
def _chunk_max_kernel(logits_ptr, row_stride, V, maxima_ptr, splits, codes_ptr, n_top, CHUNK: tl.constexpr,
                      BLOCK: tl.constexpr, TOP: tl.constexpr, COL_BITS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1)
    row_ptr = logits_ptr + row * row_stride
    lo = split * CHUNK
    hi = tl.minimum(lo + CHUNK, V)
    offs = tl.arange(0, BLOCK)
    lane_max = tl.full([BLOCK], float("-inf"), tl.float32)
    for start in range(lo, hi, BLOCK):
        cols = start + offs
        x = to_fp32(tl.load(row_ptr + cols, mask=cols < hi, other=float("-inf")))
        lane_max = tl.maximum(lane_max, x)
    tl.store(maxima_ptr + row * splits + split, tl.max(lane_max, axis=0))
    if TOP:
        _chunk_top_codes(row_ptr, lo, hi, codes_ptr + (row * splits + split) * n_top, n_top, COL_BITS)


@jit(do_not_specialize=["row_stride", "V", "n_cols", "splits"])
def _chunk_sum_kernel(logits_ptr, row_stride, V, sampled_ptr, ids_ptr, n_cols, maxima_ptr, sums_ptr, counts_ptr,
                      splits, codes_ptr, CHUNK: tl.constexpr, BLOCK: tl.constexpr, SPLIT_BLOCK: tl.constexpr,
                      MERGE: tl.constexpr, COL_BITS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1)
    row_ptr = logits_ptr + row * row_stride
    row_max = max_of_chunk_maxima(maxima_ptr, row, splits, SPLIT_BLOCK)
    sampled_id = tl.load(sampled_ptr + row)
    if MERGE > 0:
        # The top-k ids (MERGE lanes hold the row's chunk codes): the sampled token, then the
        # n_cols - 1 largest, into the row of the contiguous [B, n_cols] ids, by one program.
        if split == 0:
            tl.store(ids_ptr + row * n_cols, sampled_id)
            n = n_cols - 1
            codes = row_codes(codes_ptr + row * splits * n, splits, n, n, COL_BITS, MERGE)
            store_largest(codes, ids_ptr + row * n_cols + 1, n, True)
    sampled_value = to_fp32(tl.load(row_ptr + sampled_id, mask=(sampled_id >= 0) & (sampled_id < V),
                                    other=float("nan")))
    lo = split * CHUNK
    hi = tl.minimum(lo + CHUNK, V)
    offs = tl.arange(0, BLOCK)
    # Sum of exp(x - max) per lane, and the rank: entries >= the sampled token's value.
    lane_sum = tl.zeros([BLOCK], tl.float32)
    lane_rank = tl.zeros([BLOCK], tl.int32)
    for start in range(lo, hi, BLOCK):
        cols = start + offs
        in_row = cols < hi
        x = to_fp32(tl.load(row_ptr + cols, mask=in_row, other=float("-inf")))
        lane_sum += tl.exp(x - row_max)
        lane_rank += (in_row & (x >= sampled_value)).to(tl.int32)
    tl.store(sums_ptr + row * splits + split, tl.sum(lane_sum, axis=0))
    tl.store(counts_ptr + row * splits + split, tl.sum(lane_rank, axis=0))


@jit(do_not_specialize=["row_stride", "V", "n_cols", "splits", "sampled_ptr", "B", "guard_ptr"])
def _gather_kernel(logits_ptr, row_stride, V, ids_ptr, out_ptr, ranks_ptr, n_cols, maxima_ptr, sums_ptr,
                   counts_ptr, splits, sampled_ptr, B, guard_ptr, check, GUARDED: tl.constexpr,
                   SPLIT_BLOCK: tl.constexpr, GATHER_BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    if GUARDED:
        # The call's value check (sampled in [0, V)), by program (0, 0) alone (module docstring).
        if check & (row == 0) & (tl.program_id(1) == 0):
            valid = rows_in_range(sampled_ptr, B, 0, V - 1, False, False, CHECK_BLOCK)
            record_failed(guard_ptr, tl.where(valid, 0, 1))
    row_ptr = logits_ptr + row * row_stride
    offs = tl.arange(0, SPLIT_BLOCK)
    lane_sum = tl.zeros([SPLIT_BLOCK], tl.float32)
    lane_rank = tl.zeros([SPLIT_BLOCK], tl.int64)
    for start in range(0, splits, SPLIT_BLOCK):
        s = start + offs
        lane_sum += tl.load(sums_ptr + row * splits + s, mask=s < splits, other=0.0)
        lane_rank += tl.load(counts_ptr + row * splits + s, mask=s < splits, other=0)
    lse = max_of_chunk_maxima(maxima_ptr, row, splits, SPLIT_BLOCK) + tl.log(tl.sum(lane_sum, axis=0))
    if tl.program_id(1) == 0:
        tl.store(ranks_ptr + row, tl.sum(lane_rank, axis=0))
    # x - lse at the row's requested ids: GATHER_BLOCK columns per program.
    out_row = row * n_cols  # ids and logprobs are contiguous [B, n_cols]
    cols = tl.program_id(1) * GATHER_BLOCK + tl.arange(0, GATHER_BLOCK)
    in_cols = cols < n_cols
    ids = tl.load(ids_ptr + out_row + cols, mask=in_cols, other=0)
    x = to_fp32(tl.load(row_ptr + ids, mask=in_cols & (ids >= 0) & (ids < V), other=float("nan")))
    tl.store(out_ptr + out_row + cols, x - lse, mask=in_cols)


def scratch_bytes(batch: int, vocab: int, num_logprobs: int) -> int:
    """The per-chunk scratch of a call (module docstring): 12 bytes per row and chunk, plus
    8 * num_logprobs where the kernels choose the top-k ids."""
    per_chunk = 12 + (8 * num_logprobs if merge_tile(vocab, num_logprobs) else 0)
    return per_chunk * batch * cdiv(vocab, CHUNK)


def merge_tile(vocab: int, num_logprobs: int) -> int:
    """The merge's tile when the kernels choose the top-k ids (module docstring), else 0."""
    candidates = cdiv(vocab, CHUNK) * num_logprobs
    if not 1 <= num_logprobs <= TOP_IDS_MAX or candidates > MERGE_TILES[-1]:
        return 0
    return first_fitting(MERGE_TILES, candidates)


def _token_ids(logits: torch.Tensor, sampled: torch.Tensor, num_logprobs: int, merge: int) -> torch.Tensor:
    """int64 [B, n + 1]: the sampled token, then the top-k ids (k >= 1) or 0..V-1 (-1); left
    to the kernels to fill when `merge` is set."""
    batch, vocab = logits.shape
    if merge:
        return torch.empty((batch, num_logprobs + 1), dtype=torch.int64, device=logits.device)
    if num_logprobs >= 1:
        top = torch.topk(logits, num_logprobs, dim=-1).indices
        return torch.cat([sampled[:, None], top], dim=1)
    ids = torch.empty((batch, 1 + (vocab if num_logprobs == -1 else 0)), dtype=torch.int64, device=logits.device)
    ids[:, 0] = sampled
    if num_logprobs == -1:
        ids[:, 1:] = torch.arange(vocab, dtype=torch.int64, device=logits.device)
    return ids


def compute_logprobs(logits: torch.Tensor, *, sampled: torch.Tensor, num_logprobs: int | None,
                     gather_block: int = GATHER_BLOCK) -> Logprobs | None:
    """Logprobs of the sampled token and of the requested columns (module docstring); the
    logits are not modified. `gather_block` only sets the gather's step width."""
    guard = check_logprobs_args(logits, sampled, num_logprobs, gather_block)
    launched = logits.size(0) > 0 and num_logprobs is not None
    flag = guard.settle(in_kernel=launched)  # else the checks are launched on their own
    return launch_logprobs(logits, sampled, num_logprobs, flag, guard.on_device, gather_block)


def launch_logprobs(logits: torch.Tensor, sampled: torch.Tensor, num_logprobs: int | None,
                    flag: torch.Tensor | None, check: bool, gather_block: int = GATHER_BLOCK) -> Logprobs | None:
    """`compute_logprobs`' launches, for arguments that passed `check_logprobs_args`: under the
    guard flag `flag` (None: unguarded); `check`: the kernels make the call's value check."""
    batch, vocab = logits.shape
    if num_logprobs is None:
        return None
    merge = merge_tile(vocab, num_logprobs)
    token_ids = _token_ids(logits, sampled, num_logprobs, merge)
    n_cols = token_ids.size(1)
    values = torch.empty((batch, n_cols), dtype=torch.float32, device=logits.device)
    ranks = torch.empty((batch,), dtype=torch.int64, device=logits.device)
    if batch == 0:
        return Logprobs(token_ids, values, ranks)
    check_launchable(_gather_kernel, logits)
    splits = cdiv(vocab, CHUNK)
    partials = torch.empty((2, batch, splits), dtype=torch.float32, device=logits.device)  # maxima, sums
    counts = torch.empty((batch, splits), dtype=torch.int32, device=logits.device)
    # Each chunk's n largest codes, for the merge; the counts stand in when there is none.
    codes = torch.empty((batch, splits, num_logprobs), dtype=torch.int64, device=logits.device) if merge else counts
    maxima, sums = partials.unbind()
    stride = logits.stride(0)
    # The interpreter computes with numpy, which warns on -inf - -inf (an all -inf row's NaN
    # result, as specified).
    quiet = np.errstate(invalid="ignore") if is_interpreted(_gather_kernel) else contextlib.nullcontext()
    with quiet:
        _chunk_max_kernel[(batch, splits)](logits, stride, vocab, maxima, splits, codes, n_cols - 1, CHUNK=CHUNK,
                                           BLOCK=BLOCK, TOP=merge > 0, COL_BITS=COL_BITS)
        _chunk_sum_kernel[(batch, splits)](logits, stride, vocab, sampled, token_ids, n_cols, maxima, sums, counts,
                                           splits, codes, CHUNK=CHUNK, BLOCK=BLOCK, SPLIT_BLOCK=SPLIT_BLOCK,
                                           MERGE=merge, COL_BITS=COL_BITS)
        _gather_kernel[(batch, cdiv(n_cols, gather_block))](
            logits, stride, vocab, token_ids, values, ranks, n_cols, maxima, sums, counts, splits, sampled, batch, flag,
            check, GUARDED=flag is not None, SPLIT_BLOCK=SPLIT_BLOCK, GATHER_BLOCK=gather_block)
    return Logprobs(token_ids, values, ranks)
