"""Triton helpers that select a row's largest entries chunk by chunk, exactly: each program
codes its chunk's entries and lists its n largest, and one program merges the row's chunk
lists (the row's n largest entries are among them, since each is among its own chunk's n
largest). Two ways to list them:
- by their level: the chunk's n-th largest key (`kth_largest_key`, a digit at a time), then
  the entries above it and enough at it, lowest column first (`list_chunk`); the merge lists
  the same way and ranks the n listed codes (`rank_listed`). The top-k chunk path's (wide n);
- by n rounds of a max over the distinct codes, largest first (`store_largest`): logprobs'
  top ids (few: on an H100, 20 of 1024 x 151936 took 2.6x as long by their level).

Codes are distinct integers in the selection order: by value (`order_key`, -0.0 equal to
+0.0; NaN above +inf, or read as -inf), then by lower column. So codes in order put the entries
in value order, ties lowest column first, and the k-th largest key is the k-th largest value
counted with multiplicity (the top-k cut).
- A chunk code (`chunk_codes`): the value's key over its significant bits (bf16 and fp16
  upcast exactly, leaving 16 and 13 low bits zero), then COL_BITS bits of (CHUNK - 1 -
  column within the chunk); int32 for bf16 and fp16 logits (at most 31 bits for
  COL_BITS <= 12), int64 for fp32. Lanes outside the chunk get the dtype's smallest value.
- A row code (`row_codes`): the same key, then 32 bits of (2**31 - 1 - column in the row);
  int64. Empty slots get the smallest int64.
- A list key: a code's value part (`code >> COL_BITS` of a chunk code, `code >> 32` of a row
  code): a signed integer of LIST_KEY_BITS[dtype] bits (32 - `low_zero_bits`) in the order of
  the values, which `kth_largest_key` selects on digit by digit.
"""

import torch
import triton
import triton.language as tl

from samplecheck.kernels.cut_keys import INT32_MAX_JIT, INT32_MIN_JIT, order_key
from samplecheck.kernels.rounding import to_fp32

INT64_MIN_JIT = tl.constexpr(-2**63)
# The bits of a list key by logits dtype (module docstring), passed to kernels as a constexpr.
LIST_KEY_BITS = {torch.bfloat16: 16, torch.float16: 19, torch.float32: 32}


@triton.jit
def low_zero_bits(DTYPE: tl.constexpr):
    """The low bits of an fp32 key that upcast DTYPE values leave constant: 16 (bf16), 13
    (fp16), 0 (fp32)."""
    if DTYPE == tl.bfloat16:
        return 16
    elif DTYPE == tl.float16:
        return 13
    else:
        return 0


@triton.jit
def kth_largest_key(keys, live, k, KEY_BITS: tl.constexpr, DIGIT_BITS: tl.constexpr):
    """The k-th largest of the `live` entries of `keys` (a tile of list keys in
    [-2**(KEY_BITS - 1), 2**(KEY_BITS - 1))) counted with multiplicity: the largest t with
    #(live keys >= t) >= k, fixed DIGIT_BITS bits a step from the top. A step takes one histogram
    of the next digit over the keys that share t's fixed digits; the keys at or above each digit
    are those above t's bucket plus the histogram's suffix sum there. -2**KEY_BITS, below every
    key, when fewer than k entries are live."""
    # Constants as tensors of the keys' dtype: a Python int in [2**31, 2**32) would be uint32,
    # and a shift of an int32 would wrap.
    offset = tl.full([], 1 << (KEY_BITS - 1), keys.dtype)
    biased = tl.ravel(tl.where(live, keys + offset, -1))  # live keys in [0, 2**KEY_BITS); dead ones -1
    digit_values = tl.arange(0, 1 << DIGIT_BITS)
    t = tl.zeros([], dtype=keys.dtype)
    above = tl.zeros([], dtype=tl.int32)  # live keys above t's bucket (keys sharing t's fixed digits)
    for step in tl.static_range((KEY_BITS + DIGIT_BITS - 1) // DIGIT_BITS):
        shift = ((KEY_BITS + DIGIT_BITS - 1) // DIGIT_BITS - 1 - step) * DIGIT_BITS
        in_bucket = (biased >> (shift + DIGIT_BITS)) == (t >> (shift + DIGIT_BITS))
        digits = ((biased >> shift) & ((1 << DIGIT_BITS) - 1)).to(tl.int32)
        counts = tl.histogram(digits, 1 << DIGIT_BITS, mask=in_bucket)
        at_or_above = above + tl.sum(counts, axis=0) - tl.cumsum(counts, axis=0) + counts  # keys >= t + d << shift
        digit = tl.maximum(tl.sum((at_or_above >= k).to(tl.int32), axis=0) - 1, 0)  # the largest d holding k
        above += tl.sum(tl.where(digit_values > digit, counts, 0), axis=0)
        t += digit.to(keys.dtype) << shift
    enough = tl.sum(live.to(tl.int32)) >= k
    return tl.where(enough, t - offset, tl.full([], -(1 << KEY_BITS), keys.dtype))


@triton.jit
def chunk_codes(loaded, local, live, COL_BITS: tl.constexpr, NAN_FIRST: tl.constexpr):
    """The chunk codes (module docstring) of `loaded` entries at columns `local` of their
    chunk; NaN ranks above +inf (NAN_FIRST, as torch.topk) or reads as -inf."""
    x = to_fp32(loaded)
    if NAN_FIRST:
        key = tl.where(x != x, INT32_MAX_JIT, order_key(x))
    else:
        key = order_key(tl.where(x == x, x, float("-inf")))
    flipped = local * -1 + ((1 << COL_BITS) - 1)
    if loaded.dtype == tl.float32:
        return tl.where(live, (key.to(tl.int64) << COL_BITS) | flipped, INT64_MIN_JIT)
    else:
        return tl.where(live, ((key >> low_zero_bits(loaded.dtype)) << COL_BITS) | flipped, INT32_MIN_JIT)


@triton.jit
def store_largest(codes, out_ptr, n, AS_COLUMNS: tl.constexpr):
    """Store the n largest of the distinct `codes` at out_ptr[0:n], largest first: the codes
    themselves, or (AS_COLUMNS) the column each row code names."""
    floor = tl.min(codes, axis=0)
    for j in range(0, n):
        top = tl.max(codes, axis=0)
        if AS_COLUMNS:
            tl.store(out_ptr + j, (top & INT32_MAX_JIT) * -1 + INT32_MAX_JIT)
        else:
            tl.store(out_ptr + j, top)
        codes = tl.where(codes == top, floor, codes)


@triton.jit
def list_chunk(codes, keys, live, level, list_ptr, K_MAX: tl.constexpr):
    """Store the `live` codes with key > `level` (fewer than K_MAX), then those with key ==
    `level`, each kind in tile order ([G, 8] tiles of `group_columns`: the lowest column first),
    at list_ptr[:K_MAX] (int64), as many as fit, and the smallest int64 in the slots left;
    returns whether an entry at `level` was left out."""
    above = live & (keys > level)
    tie = live & (keys == level)
    # One scan counts both kinds: those above in the high 16 bits, the ties in the low 16.
    both = above.to(tl.int32) * 65536 + tie.to(tl.int32)
    group = tl.sum(both, axis=1)
    through = (tl.cumsum(group, axis=0) - group)[:, None] + tl.cumsum(both, axis=1)
    total = tl.sum(group, axis=0)
    n_above = total >> 16
    slot = tl.where(above, (through >> 16) - 1, n_above + (through & 65535) - 1)
    tl.store(list_ptr + slot, codes.to(tl.int64), mask=(above | tie) & (slot < K_MAX))
    listed = tl.arange(0, K_MAX)
    tl.store(list_ptr + listed, INT64_MIN_JIT, mask=listed >= n_above + (total & 65535))
    return n_above + (total & 65535) > K_MAX


@triton.jit
def rank_listed(codes, keys, live, level, list_ptr, K_MAX: tl.constexpr):
    """List the codes as `list_chunk` does at list_ptr[:K_MAX], then return the listed codes
    and each one's rank: how many of them are larger, so the listed codes, distinct, take
    ranks 0, 1, ... largest first. The slots may be stored over on return."""
    list_chunk(codes, keys, live, level, list_ptr, K_MAX)
    tl.debug_barrier()
    lane = tl.arange(0, K_MAX)
    listed = tl.load(list_ptr + lane, cache_modifier=".cg")
    rank = tl.sum((listed[None, :] > listed[:, None]).to(tl.int32), axis=1)
    tl.debug_barrier()
    return listed, rank


@triton.jit
def code_column(code, chunk, COL_BITS: tl.constexpr):
    """The row column that chunk code `code` of chunk `chunk` names (in `code`'s dtype)."""
    return chunk * (1 << COL_BITS) - (code & ((1 << COL_BITS) - 1)) + ((1 << COL_BITS) - 1)


@triton.jit
def row_codes(lists_ptr, splits, n, stride, COL_BITS: tl.constexpr, MERGE: tl.constexpr):
    """The row codes of a row's chunk lists (chunk c's n codes at lists_ptr[c * stride:][:n],
    int64 storage of chunk codes), in MERGE lanes (>= splits * n)."""
    slot = tl.arange(0, MERGE)
    live = slot < splits * n
    chunk = slot // n
    code = tl.load(lists_ptr + chunk * stride + slot % n, mask=live, other=INT64_MIN_JIT, cache_modifier=".cg")
    column = code_column(code, chunk, COL_BITS)
    # An empty slot of int32 chunk codes (-2**31) maps below every real code; of int64 ones, is kept.
    real = live & (code != INT64_MIN_JIT)
    return tl.where(real, ((code >> COL_BITS) << 32) | (column * -1 + INT32_MAX_JIT), INT64_MIN_JIT)
