"""Top-p sampling in one read-only kernel: the ids that top-p masking then Gumbel-max sampling
give, without writing the mask.

Contract:
- `logits` [B, V] fp32/bf16/fp16, V >= 1, any row stride, column stride 1; loads upcast to
  fp32. Only read (bitwise unchanged); the result is a new int64 tensor [B] of ids in [0, V).
- `p` [B] float32 in (0, 1] (1: top-p off for the row); `seeds` [B] int64 and `positions` [B]
  int64 >= 0, as `samplecheck.kernels.gumbel.gumbel_sample` takes them; all on the logits'
  device.
- The result is bitwise `gumbel_sample(apply_top_k_top_p(logits.clone(), None, p),
  seeds=seeds, positions=positions)`: the top-p cut of `samplecheck.kernels.top_k_top_p`, then
  the lowest id among the kept entries' maximal Gumbel scores (no temperature: the logits are
  sampled as they are). Edge values follow from that: NaN never wins; a row holding +inf
  gives its lowest +inf id; a row with no finite or +inf entry gives 0.
- Value checks (deferred or captured mode): p in (0, 1] (bit 1) and positions >= 0 (bit 2),
  made by program 0 alone; the kernel writes only its result, so nothing waits on them.
  Unchecked, a p outside (0, 1] gives some id in [0, V).

Algorithm, per row, by rejection with fixed noise: the kept set {key >= cut} is the nucleus,
and an entry with key c is kept iff mass(key > c) < p * total (the cut's own predicate, on
the same 2**-40 fixed-point masses: `samplecheck.kernels.cut_search.weight`), since the
predicate is monotone in c. The noise of each id is fixed, so the argmax of the scores over
any set that holds the nucleus is the nucleus's argmax as soon as it lies in the nucleus.
1. One pass: the row max and the Gumbel winner w over the whole row (the candidate).
2. Each round, one pass over the row: the total mass, the mass above the candidate's key,
   and the winner over the entries above the candidate's key. The candidate is the result
   if the mass above it passes the predicate; else it is dropped (key < cut), so the nucleus
   lies above its key, and the winner above it becomes the candidate.
A row with p == 1, or whose max is +inf (the +inf entries hold all the mass and are kept), or
-inf (nothing to draw) takes the first candidate. Each round raises the candidate's key, and
the row max is always kept, so the rounds end; at p = 0.9 the first candidate is kept with
probability >= 0.9, so a row takes about two passes where the mask then the sampler take five
or more. Each pass computes the noise of the entries it reads (two logs a token, as
`gumbel_sample` does once).

Grid: cdiv(B, BLOCK_B) programs of BLOCK_B rows each (`plan`), looping over the vocab in
[BLOCK_B, BLOCK_V] tiles; a tile's rows run their rounds together, those done already masked
off. No host synchronisation: the call captures in a CUDA graph. Extra memory: the 8 * B
bytes of the result.
"""

import torch
import triton
import triton.language as tl

from samplecheck.kernels.cut_search import load_row, order_key, weight
from samplecheck.kernels.guard import CHECK_BLOCK, INT64_MAX_JIT, ValueGuard, record_failed, rows_in_range
from samplecheck.kernels.gumbel import HASH_SEED, check_gumbel, gumbel_noise, packed_winners, row_noise_key
from samplecheck.kernels.launching import jit
from samplecheck.kernels.runtime import cdiv, check_launchable, device_kind, next_power_of_2
from samplecheck.kernels.validation import check_top_k_top_p

# BLOCK_V by device, and the most entries a [BLOCK_B, BLOCK_V] tile holds: one row a program
# on a GPU; the interpreter pays per program and per operation, so on the CPU a tile holds
# as many rows as fit.
BLOCK_V = {"cuda": 2048, "cpu": 4096}
TILE = {"cuda": 2048, "cpu": 2**16}
NUM_WARPS = {"cuda": 8, "cpu": 4}


@triton.jit
def _winners_above(row_ptr, in_batch, V, key, floor, row_max, WEIGH: tl.constexpr, BLOCK_B: tl.constexpr,
                   BLOCK_V: tl.constexpr):
    """One pass over the rows: per row, the Gumbel winner's id among the entries whose key is
    above `floor`, then with WEIGH the mass of those entries and of the whole row (`weight`
    from `row_max`), else the row's max (NaN read as -inf); what is not computed is -inf or 0."""
    lanes = tl.arange(0, BLOCK_V)[None, :]
    best_score = tl.full([BLOCK_B, BLOCK_V], float("-inf"), tl.float32)
    best_id = tl.zeros([BLOCK_B, BLOCK_V], tl.int32) + lanes
    lane_max = tl.full([BLOCK_B, BLOCK_V], float("-inf"), tl.float32)
    above = tl.zeros([BLOCK_B, BLOCK_V], tl.int64)
    total = tl.zeros([BLOCK_B, BLOCK_V], tl.int64)
    for start in range(0, V, BLOCK_V):
        cols = start + lanes
        x = load_row(row_ptr + cols, in_batch[:, None] & (cols < V))
        live = x > float("-inf")
        eligible = live & (order_key(x) > floor[:, None])
        if WEIGH:
            mass = tl.where(live, weight(x, row_max[:, None]), 0)
            total += mass
            above += tl.where(eligible, mass, 0)
        else:
            lane_max = tl.maximum(lane_max, x)
        score = tl.where(eligible, x + gumbel_noise(key, cols), float("-inf"))
        better = score > best_score  # strict: on a tie the lane's lower id stays
        best_score = tl.where(better, score, best_score)
        best_id = tl.where(better, cols, best_id)
    winner = tl.min(packed_winners(best_score, best_id), axis=1).to(tl.int32)  # the low half: the id
    return winner, tl.max(lane_max, axis=1), tl.sum(above, axis=1), tl.sum(total, axis=1)


@jit(do_not_specialize=["B", "guard_ptr"])
def _top_p_sample_kernel(logits_ptr, row_stride, p_ptr, seeds_ptr, positions_ptr, out_ptr, B, V, guard_ptr, check,
                         GUARDED: tl.constexpr, HASH_SEED: tl.constexpr, BLOCK_B: tl.constexpr,
                         BLOCK_V: tl.constexpr):
    """Program (block of rows); the module docstring states the algorithm."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_B + tl.arange(0, BLOCK_B)
    if GUARDED:
        if check & (tl.program_id(0) == 0):
            failed = tl.where(rows_in_range(p_ptr, B, 0.0, 1.0, True, False, CHECK_BLOCK), 0, 1)
            failed |= tl.where(rows_in_range(positions_ptr, B, 0, INT64_MAX_JIT, False, False, CHECK_BLOCK), 0, 2)
            record_failed(guard_ptr, failed)
    in_batch = rows < B
    p = tl.load(p_ptr + rows, mask=in_batch, other=1.0)
    key = row_noise_key(seeds_ptr, positions_ptr, rows, in_batch, HASH_SEED)[:, None]
    row_base = logits_ptr + rows * row_stride
    # Pass 1: the first candidate, the winner over the whole row (every key lies above the
    # floor), and the row max.
    below_all = tl.full([BLOCK_B], -2**31, tl.int32)
    candidate, row_max, _, _ = _winners_above(row_base[:, None], in_batch, V, key, below_all,
                                              tl.zeros([BLOCK_B], tl.float32), False, BLOCK_B, BLOCK_V)
    done = ~in_batch | (p >= 1.0) | (row_max == float("inf")) | (row_max == float("-inf"))
    while tl.sum((~done).to(tl.int32), axis=0) > 0:
        floor = order_key(load_row(row_base + candidate, ~done))
        # The done rows read nothing; their max (perhaps +-inf) is not subtracted from -inf. (Not
        # `_` for the unread max: a name assigned before the loop is loop-carried, of one type.)
        winner, _no_max, above, total = _winners_above(row_base[:, None], ~done, V, key, floor,
                                                          tl.where(done, 0.0, row_max), True, BLOCK_B, BLOCK_V)
        kept = above.to(tl.float32) < p * total.to(tl.float32)
        # Nothing above a dropped candidate: only an unchecked p gets here (the max is kept).
        done = done | kept | (above == 0)
        candidate = tl.where(done, candidate, winner)
    tl.store(out_ptr + rows, candidate.to(tl.int64), mask=in_batch)


def plan(batch: int, vocab: int, device_type: str) -> tuple[int, int]:
    """(BLOCK_B, BLOCK_V) of a launch; the result does not depend on them."""
    block_v = min(BLOCK_V[device_type], next_power_of_2(vocab))
    block_b = min(next_power_of_2(batch), max(1, TILE[device_type] // block_v))
    return block_b, block_v


def top_p_sample(logits: torch.Tensor, p: torch.Tensor, *, seeds: torch.Tensor,
                 positions: torch.Tensor) -> torch.Tensor:
    """Sample one token id per row from the top-p nucleus of `logits` (module docstring);
    returns int64 [B]."""
    if p is None:
        raise TypeError("p must be a float32 tensor [batch]; got None (gumbel_sample samples without top-p)")
    guard = check_top_k_top_p(logits, None, p, names=("k", "p"), guard=ValueGuard(logits.device, "top_p_sample"))
    check_gumbel(logits, seeds, positions, None, guard)
    flag = guard.settle(in_kernel=True)  # both checks are made in the kernel
    batch, vocab = logits.shape
    out = torch.empty(batch, dtype=torch.int64, device=logits.device)
    if batch == 0:
        return out
    check_launchable(_top_p_sample_kernel, logits)
    kind = device_kind(logits)
    block_b, block_v = plan(batch, vocab, kind)
    _top_p_sample_kernel[(cdiv(batch, block_b),)](
        logits, logits.stride(0), p, seeds, positions, out, batch, vocab, flag, guard.on_device,
        GUARDED=flag is not None, HASH_SEED=HASH_SEED, BLOCK_B=block_b, BLOCK_V=block_v, num_warps=NUM_WARPS[kind])
    return out
