"""Top-p sampling that only reads the logits: the ids that top-p masking then Gumbel-max
sampling give, without writing the mask.

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
  made by the first launch's program (0, 0) alone; the launches write only their buffer and
  the result, so nothing waits on them.
  Unchecked, a p outside (0, 1] gives some id in [0, V).

Algorithm, per row, by rejection with fixed noise: the kept set {key >= cut} is the nucleus,
and an entry with key c is kept iff mass(key > c) < p * total (the cut's own predicate, on
the same 2**-40 fixed-point masses: `samplecheck.kernels.cut_keys.weight`), since the
predicate is monotone in c. The noise of each id is fixed, so the argmax of the scores over
any set that holds the nucleus is the nucleus's argmax as soon as it lies in the nucleus.
So the result is the first kept entry of the chain c1, c2, ...: c1 the Gumbel winner of the
row, c(j+1) the winner among the entries whose key is above c(j)'s (each key higher, so the
chain ends at the row max, which is kept). The chain depends on the noise alone, the masses
decide where it stops. Four launches, the first and third over a [B, S] grid of chunks of
CHUNK columns:
1. `_chunk_lists_kernel`: each chunk's max, and its LISTED best entries by score (scores are
   `packed_winners` codes, distinct: score, then lowest id), with their keys. The noise is
   computed here only, once per entry.
2. `_chain_kernel`, one program per BLOCK_B rows: the row's chain from the lists, CHAIN
   links at most: c1 is the least listed code; c(j+1) the least listed code with key above
   c(j)'s, valid while it is below the last listed code of every chunk whose list may miss
   an entry above that key (a chunk with more than LISTED entries, none of them listed
   above the key, and its max above it; a chunk whose max is not above it has no such
   entry); and the row max, from the chunk maxes. Once a row, not in every chunk program:
   that repeated derivation took half the call's time on an H100 at 1024 x 151936
   (docs/benchmarks-2026-12-05.md, session 36).
3. `_masses_kernel`: over its chunk, the total mass and the mass above each link's key.
4. `_pick_kernel`, one program per BLOCK_B rows: sums the chunks' masses and takes the
   first link that passes the predicate (or has no mass above it). A row with p >= 1, or
   whose max is +inf (the +inf entries hold all the mass and are kept) or -inf (nothing to
   draw), takes c1. A row whose valid links all fail goes on from its last link by rounds
   over the whole row, each one pass: the mass above the candidate and the winner above
   its key, as in the chain (rare at p = 0.9: a link fails with probability <= 1 - p).
So a row is read twice (the noise once, the masses once), where the mask then the sampler
read it five times or more. No host synchronisation: the call captures in a CUDA graph.
Extra memory: one int64 buffer [B, 2 S LISTED + S + S (CHAIN + 1) + 2 CHAIN
+ 2] (lists, their keys, chunk maxes, masses, chain) and the 8 * B bytes of the result.
"""

import torch
import triton
import triton.language as tl

from samplecheck.kernels.cut_keys import INT32_MIN_JIT, key_value, load_row, order_key, weight
from samplecheck.kernels.guard import CHECK_BLOCK, INT64_MAX_JIT, ValueGuard, record_failed, rows_in_range
from samplecheck.kernels.gumbel import (HASH_SEED, check_gumbel, gumbel_noise, packed_id, packed_winners,
                                        row_noise_key)
from samplecheck.kernels.launching import jit
from samplecheck.kernels.runtime import cdiv, check_launchable, device_kind, next_power_of_2
from samplecheck.kernels.validation import check_top_k_top_p

# By device: CHUNK, the columns of a chunk program (one tile; doubled for a vocab whose lists
# would pass MAX_LISTS codes); LISTED, the codes a chunk lists; CHAIN, the links derived from
# the lists; BLOCK_V, the tile of the rounds past the chain; ROWS, the most rows a program
# takes (ROWS * CHUNK entries a tile at most). The interpreter pays per program and per
# operation: on the CPU a program takes many rows, and small chunks, lists and chains make
# the tests' small vocabs reach every branch (several chunks, invalid links, rounds). The
# result depends on none of these.
CHUNK = {"cuda": 4096, "cpu": 32}
LISTED = {"cuda": 4, "cpu": 2}
CHAIN = {"cuda": 4, "cpu": 2}
MAX_LISTS = {"cuda": 1024, "cpu": 4096}
BLOCK_V = {"cuda": 2048, "cpu": 4096}
ROWS = {"cuda": 1, "cpu": 64}
NUM_WARPS = {"cuda": 8, "cpu": 4}


@triton.jit
def _buffer_rows(buffer_ptr, rows, words, S, LISTED: tl.constexpr, CHAIN: tl.constexpr):
    """Pointers to each of `rows`' parts of the buffer (module docstring; `words` a row,
    `_row_words`): codes, keys, chunk max keys, masses [S, CHAIN + 1], chain [2 CHAIN + 2] (the
    links' codes, their count, the links' keys, the row max key)."""
    codes = buffer_ptr + rows * words
    keys = codes + S * LISTED
    maxima = keys + S * LISTED
    masses = maxima + S
    return codes, keys, maxima, masses, masses + S * (CHAIN + 1)


@jit(do_not_specialize=["words", "B", "S", "guard_ptr"])
def _chunk_lists_kernel(logits_ptr, row_stride, p_ptr, seeds_ptr, positions_ptr, buffer_ptr, words, B, V, S,
                        guard_ptr, check, GUARDED: tl.constexpr, HASH_SEED: tl.constexpr, BLOCK_B: tl.constexpr,
                        CHUNK: tl.constexpr, LISTED: tl.constexpr, CHAIN: tl.constexpr):
    """Program (block of rows, chunk): the chunk's max key and its LISTED least codes, least
    first (the largest int64 past its entries), with their keys."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_B + tl.arange(0, BLOCK_B)
    chunk = tl.program_id(1)
    if GUARDED:
        if check & (tl.program_id(0) == 0) & (chunk == 0):
            failed = tl.where(rows_in_range(p_ptr, B, 0.0, 1.0, True, False, CHECK_BLOCK), 0, 1)
            failed |= tl.where(rows_in_range(positions_ptr, B, 0, INT64_MAX_JIT, False, False, CHECK_BLOCK), 0, 2)
            record_failed(guard_ptr, failed)
    in_batch = rows < B
    key = row_noise_key(seeds_ptr, positions_ptr, rows, in_batch, HASH_SEED)[:, None]
    cols = chunk * CHUNK + tl.arange(0, CHUNK)[None, :]
    real = in_batch[:, None] & (cols < V)
    x = load_row(logits_ptr + rows[:, None] * row_stride + cols, real)
    score = tl.where(x > float("-inf"), x + gumbel_noise(key, cols), float("-inf"))
    codes = tl.where(real, packed_winners(score, cols), INT64_MAX_JIT)
    codes_ptr, keys_ptr, maxima_ptr, _, _ = _buffer_rows(buffer_ptr, rows, words, S, LISTED, CHAIN)
    tl.store(maxima_ptr + chunk, order_key(tl.max(x, axis=1)).to(tl.int64), mask=in_batch)
    for slot in tl.static_range(LISTED):
        least = tl.min(codes, axis=1)
        listed = least != INT64_MAX_JIT
        column = packed_id(least)
        value = load_row(logits_ptr + rows * row_stride + column, in_batch & listed)
        tl.store(codes_ptr + chunk * LISTED + slot, least, mask=in_batch)
        tl.store(keys_ptr + chunk * LISTED + slot, tl.where(listed, order_key(value), INT32_MIN_JIT).to(tl.int64),
                 mask=in_batch)
        codes = tl.where(codes == least[:, None], INT64_MAX_JIT, codes)


@triton.jit
def _row_chain(codes_ptr, keys_ptr, maxima_ptr, in_batch, V, S, BLOCK_B: tl.constexpr, CHUNK: tl.constexpr,
               LISTED: tl.constexpr, CHAIN: tl.constexpr, LISTS: tl.constexpr):
    """Per row: the codes of its chain's links [BLOCK_B, CHAIN] (the largest int64 past the
    valid ones), their keys, the count of valid links, and the row max key (module docstring)."""
    chunks = tl.arange(0, LISTS // LISTED)[None, :]
    slots = chunks[:, :, None] * LISTED + tl.arange(0, LISTED)[None, None, :]
    on = in_batch[:, None, None] & (slots < S * LISTED)
    codes = tl.load(codes_ptr[:, None, None] + slots, mask=on, other=INT64_MAX_JIT)
    keys = tl.load(keys_ptr[:, None, None] + slots, mask=on, other=INT32_MIN_JIT).to(tl.int32)
    maxima = tl.load(maxima_ptr[:, None] + chunks, mask=in_batch[:, None] & (chunks < S),
                     other=INT32_MIN_JIT).to(tl.int32)
    last_code = tl.max(codes, axis=2)  # a list's largest code: every unlisted entry's is larger
    partial = V - chunks * CHUNK > LISTED  # chunks whose lists may leave entries out
    links = tl.arange(0, CHAIN)[None, :]
    chain = tl.full([BLOCK_B, CHAIN], INT64_MAX_JIT, tl.int64)
    chain_keys = tl.full([BLOCK_B, CHAIN], INT32_MIN_JIT, tl.int32)
    floor = tl.full([BLOCK_B], INT32_MIN_JIT, tl.int32)
    valid = in_batch
    for link in tl.static_range(CHAIN):
        above = keys > floor[:, None, None]
        least = tl.min(tl.min(tl.where(above, codes, INT64_MAX_JIT), axis=2), axis=1)
        missed = partial & (maxima > floor[:, None]) & (tl.max(above.to(tl.int32), axis=2) == 0)
        bound = tl.min(tl.where(missed, last_code, INT64_MAX_JIT), axis=1)
        valid = valid & (least < bound)
        floor = tl.max(tl.max(tl.where(codes == least[:, None, None], keys, INT32_MIN_JIT), axis=2), axis=1)
        chain = tl.where((links == link) & valid[:, None], least[:, None], chain)
        chain_keys = tl.where((links == link) & valid[:, None], floor[:, None], chain_keys)
    count = tl.sum((chain != INT64_MAX_JIT).to(tl.int32), axis=1)
    return chain, chain_keys, count, tl.max(maxima, axis=1)


@jit(do_not_specialize=["words", "B", "S"])
def _chain_kernel(buffer_ptr, words, B, V, S, BLOCK_B: tl.constexpr, CHUNK: tl.constexpr, LISTED: tl.constexpr,
                  CHAIN: tl.constexpr, LISTS: tl.constexpr):
    """Program (block of rows): each row's chain, its links' keys and its max key."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_B + tl.arange(0, BLOCK_B)
    in_batch = rows < B
    codes_ptr, keys_ptr, maxima_ptr, _, chain_ptr = _buffer_rows(buffer_ptr, rows, words, S, LISTED, CHAIN)
    chain, chain_keys, count, max_key = _row_chain(codes_ptr, keys_ptr, maxima_ptr, in_batch, V, S, BLOCK_B, CHUNK,
                                                   LISTED, CHAIN, LISTS)
    links = tl.arange(0, CHAIN)[None, :]
    tl.store(chain_ptr[:, None] + links, chain, mask=in_batch[:, None])
    tl.store(chain_ptr + CHAIN, count.to(tl.int64), mask=in_batch)
    tl.store(chain_ptr[:, None] + CHAIN + 1 + links, chain_keys.to(tl.int64), mask=in_batch[:, None])
    tl.store(chain_ptr + 2 * CHAIN + 1, max_key.to(tl.int64), mask=in_batch)


@jit(do_not_specialize=["words", "B", "S"])
def _masses_kernel(logits_ptr, row_stride, buffer_ptr, words, B, V, S, BLOCK_B: tl.constexpr, CHUNK: tl.constexpr,
                   LISTED: tl.constexpr, CHAIN: tl.constexpr):
    """Program (block of rows, chunk): the chunk's total mass and its mass above each link's
    key."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_B + tl.arange(0, BLOCK_B)
    chunk = tl.program_id(1)
    in_batch = rows < B
    _, _, _, masses_ptr, chain_ptr = _buffer_rows(buffer_ptr, rows, words, S, LISTED, CHAIN)
    row_max = key_value(tl.load(chain_ptr + 2 * CHAIN + 1, mask=in_batch, other=0).to(tl.int32))
    finite = in_batch & (row_max > float("-inf")) & (row_max < float("inf"))
    cols = chunk * CHUNK + tl.arange(0, CHUNK)[None, :]
    x = load_row(logits_ptr + rows[:, None] * row_stride + cols, finite[:, None] & (cols < V))
    mass = tl.where(x > float("-inf"), weight(x, tl.where(finite, row_max, 0.0)[:, None]), 0)
    masses_ptr += chunk * (CHAIN + 1)
    tl.store(masses_ptr + CHAIN, tl.sum(mass, axis=1), mask=in_batch)
    key = order_key(x)
    for link in tl.static_range(CHAIN):
        link_key = tl.load(chain_ptr + CHAIN + 1 + link, mask=in_batch, other=0).to(tl.int32)
        tl.store(masses_ptr + link, tl.sum(tl.where(key > link_key[:, None], mass, 0), axis=1), mask=in_batch)


@triton.jit
def _winners_above(row_ptr, in_batch, V, key, floor, row_max, BLOCK_B: tl.constexpr, BLOCK_V: tl.constexpr):
    """One pass over the rows: per row, the Gumbel winner's id among the entries whose key is
    above `floor`, the mass of those entries and of the whole row (`weight` from `row_max`)."""
    lanes = tl.arange(0, BLOCK_V)[None, :]
    best_score = tl.full([BLOCK_B, BLOCK_V], float("-inf"), tl.float32)
    best_id = tl.zeros([BLOCK_B, BLOCK_V], tl.int32) + lanes
    above = tl.zeros([BLOCK_B, BLOCK_V], tl.int64)
    total = tl.zeros([BLOCK_B, BLOCK_V], tl.int64)
    for start in range(0, V, BLOCK_V):
        cols = start + lanes
        x = load_row(row_ptr + cols, in_batch[:, None] & (cols < V))
        live = x > float("-inf")
        eligible = live & (order_key(x) > floor[:, None])
        mass = tl.where(live, weight(x, row_max[:, None]), 0)
        total += mass
        above += tl.where(eligible, mass, 0)
        score = tl.where(eligible, x + gumbel_noise(key, cols), float("-inf"))
        better = score > best_score  # strict: on a tie the lane's lower id stays
        best_score = tl.where(better, score, best_score)
        best_id = tl.where(better, cols, best_id)
    winner = packed_id(tl.min(packed_winners(best_score, best_id), axis=1))
    return winner, tl.sum(above, axis=1), tl.sum(total, axis=1)


@triton.jit
def _kept(above, total, p):
    """Whether a candidate with mass `above` above its key is kept, of a row of mass `total`:
    the cut's predicate, or nothing above it (the row max; with an unchecked p <= 0 or NaN,
    where nothing passes the predicate, the candidates end there)."""
    return (above.to(tl.float32) < p * total.to(tl.float32)) | (above == 0)


@jit(do_not_specialize=["words", "B", "S"])
def _pick_kernel(logits_ptr, row_stride, p_ptr, seeds_ptr, positions_ptr, buffer_ptr, words, out_ptr, B, V, S,
                 HASH_SEED: tl.constexpr, BLOCK_B: tl.constexpr, LISTED: tl.constexpr, CHAIN: tl.constexpr,
                 CHUNKS: tl.constexpr, BLOCK_V: tl.constexpr):
    """Program (block of rows): the first kept link, else rounds from the last one."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_B + tl.arange(0, BLOCK_B)
    in_batch = rows < B
    _, _, _, masses_ptr, chain_ptr = _buffer_rows(buffer_ptr, rows, words, S, LISTED, CHAIN)
    chunks = tl.arange(0, CHUNKS)[None, :]
    on = in_batch[:, None] & (chunks < S)
    row_max = key_value(tl.load(chain_ptr + 2 * CHAIN + 1, mask=in_batch, other=0).to(tl.int32))
    total = tl.sum(tl.load(masses_ptr[:, None] + chunks * (CHAIN + 1) + CHAIN, mask=on, other=0), axis=1)
    p = tl.load(p_ptr + rows, mask=in_batch, other=1.0)
    count = tl.load(chain_ptr + CHAIN, mask=in_batch, other=1)
    candidate = packed_id(tl.load(chain_ptr, mask=in_batch, other=0))
    done = ~in_batch | (p >= 1.0) | (row_max == float("inf")) | (row_max == float("-inf"))
    for link in tl.static_range(CHAIN):
        pending = ~done & (link < count)
        candidate = tl.where(pending, packed_id(tl.load(chain_ptr + link, mask=pending, other=0)), candidate)
        above = tl.sum(tl.load(masses_ptr[:, None] + chunks * (CHAIN + 1) + link, mask=on, other=0), axis=1)
        done = done | (pending & _kept(above, total, p))
    # Rows whose valid links all failed: rounds over the whole row from the last link. Each
    # round raises a row's candidate key, so V rounds bound them; the bound only turns a
    # defect that never ends them into a wrong id instead of a hang.
    row_base = logits_ptr + rows * row_stride
    key = row_noise_key(seeds_ptr, positions_ptr, rows, in_batch, HASH_SEED)[:, None]
    rounds = 0
    while (tl.sum((~done).to(tl.int32), axis=0) > 0) & (rounds < V):
        rounds += 1
        floor = order_key(load_row(row_base + candidate, ~done))
        winner, above, total = _winners_above(row_base[:, None], ~done, V, key, floor, tl.where(done, 0.0, row_max),
                                              BLOCK_B, BLOCK_V)
        done = done | _kept(above, total, p)
        candidate = tl.where(done, candidate, winner)
    tl.store(out_ptr + rows, candidate.to(tl.int64), mask=in_batch)


def plan(batch: int, vocab: int, device_type: str) -> tuple[int, int, int]:
    """(rows a program, CHUNK, chunks a row) of a call; the result does not depend on them."""
    chunk = min(CHUNK[device_type], next_power_of_2(vocab))
    while cdiv(vocab, chunk) * LISTED[device_type] > MAX_LISTS[device_type]:
        chunk *= 2
    return min(ROWS[device_type], next_power_of_2(batch)), chunk, cdiv(vocab, chunk)


def _row_words(splits: int, device_type: str) -> int:
    """The int64 words of a row's part of the buffer (`_buffer_rows`)."""
    return 2 * splits * LISTED[device_type] + splits * (CHAIN[device_type] + 2) + 2 * CHAIN[device_type] + 2


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
    check_launchable(_chunk_lists_kernel, logits)
    kind = device_kind(logits)
    rows, chunk, splits = plan(batch, vocab, kind)
    words = _row_words(splits, kind)
    buffer = torch.empty((batch, words), dtype=torch.int64, device=logits.device)
    shape = dict(BLOCK_B=rows, LISTED=LISTED[kind], CHAIN=CHAIN[kind], num_warps=NUM_WARPS[kind])
    grid = (cdiv(batch, rows), splits)
    _chunk_lists_kernel[grid](logits, logits.stride(0), p, seeds, positions, buffer, words, batch, vocab, splits,
                              flag, guard.on_device, GUARDED=flag is not None, HASH_SEED=HASH_SEED, CHUNK=chunk,
                              **shape)
    _chain_kernel[(grid[0],)](buffer, words, batch, vocab, splits, CHUNK=chunk,
                              LISTS=next_power_of_2(splits * LISTED[kind]), **shape)
    _masses_kernel[grid](logits, logits.stride(0), buffer, words, batch, vocab, splits, CHUNK=chunk, **shape)
    _pick_kernel[(grid[0],)](logits, logits.stride(0), p, seeds, positions, buffer, words, out, batch, vocab, splits,
                             HASH_SEED=HASH_SEED, CHUNKS=next_power_of_2(splits),
                             BLOCK_V=min(BLOCK_V[kind], next_power_of_2(vocab)), **shape)
    return out
