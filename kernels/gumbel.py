"""Gumbel-max sampling keyed by (request seed, position, token id): the Triton kernel.

Contract (the oracle `samplecheck.oracles.gumbel` states the semantics in full):
- `logits` [B, V] fp32/bf16/fp16, V >= 1, any row stride, column stride 1; loads upcast to
  fp32. NOT in place: the logits are only read (bitwise unchanged); the result is a new
  int64 tensor [B] of token ids, always in [0, V).
- `seeds` [B] int64 (any value: the request's seed), `positions` [B] int64 >= 0 (the
  position of the token being sampled), `temperature` [B] float32, finite and >= 0
  (None: all ones), all on the logits' device.
- T == 0 (greedy): the lowest id among the row's maxima; no noise.
- T > 0: s = l / T in fp32 (`tl.math.div_rn`, IEEE round-to-nearest; T == 1 divides by 1,
  which is exact), score = s + g with Gumbel noise g = -log(-log(u)) in fp32, and the
  result is the lowest id among the maximal scores.
- Noise: a row key = murmur3_32 (seed `HASH_SEED`) of the 32-bit words (seed lo, seed hi,
  position lo, position hi); per token h = fmix32(key ^ (id * 0x9E3779B9)) (wrapping uint32
  arithmetic) and u = (2 * (h >> 9) + 1) / 2**24: a 2**23-point grid symmetric in (0, 1),
  exact in fp32. So g lies in [-2.81, 16.64]: a token whose s is more than 19.45 nats below
  the row's maximum is never drawn, and for huge |s| (tiny T) the fp32 sum coarsens or
  absorbs the noise (see the oracle for both). u depends only on (seed, position, token
  id): the result does not depend on the row's index, the batch, BLOCK_V, BLOCK_B or the
  split count.
- Non-finite entries: -inf and NaN entries (and s that overflow to -inf) never win; +inf
  entries (or s that overflow to +inf) win, the lowest such id first. A row with no
  finite or +inf entry (all -inf, all NaN) returns 0: the sampler's `valid` mask marks
  such rows. Values (`values_checked`): positions >= 0 and the temperature's range are
  checked; unchecked, a negative position is hashed as its int64 bits, and a negative or
  NaN T gives an id in [0, V) with no law claimed.

Grid (cdiv(B, BLOCK_B), splits): a program takes BLOCK_B rows and one contiguous chunk
of the vocab (a multiple of BLOCK_V), loops over it in [BLOCK_B, BLOCK_V] tiles keeping a
per-lane best (score, id), then reduces the lanes to one packed int64 per row and merges it
into the row's slot with `tl.atomic_min`. The packing makes the minimum the winner exactly:
high 32 bits the bitwise complement of an order-preserving int32 key of the fp32 score
(-0.0 keyed as +0.0, so equal scores tie), low 32 bits the id; so the smallest packed value
holds the largest score and, among equal scores, the lowest id, whatever order the
programs arrive in (deterministic). The slots start at INT64_MAX (`torch.full`) and one
in-place `bitwise_and_` after the launch keeps the id: a call is one allocation and fill,
one launch and one op, with no host synchronisation. (BLOCK_B, BLOCK_V) come from a menu of
four per device (`plan`) and the split count is a runtime argument, so default launches
compile at most four variants per dtype and temperature flag, whatever B and V. Extra
memory (`extra_bytes`): 8 * B bytes, the slots, which become the result; no [B, V]-sized
buffer. Row-stride gaps are never read.
"""

import contextlib

import numpy as np
import torch
import triton
import triton.language as tl

from samplecheck.kernels.cut_keys import order_key
from samplecheck.kernels.rounding import to_fp32
from samplecheck.kernels.launching import jit
from samplecheck.kernels.runtime import cdiv, check_launchable, device_kind, first_fitting, is_interpreted
from samplecheck.kernels.guard import (CHECK_BLOCK, FLOAT32_MAX, FLOAT32_MAX_JIT, INT64_MAX_JIT, ValueGuard,
                                      record_failed, rows_in_range)
from samplecheck.kernels.validation import INDEX_MAX, check_logits, check_row_param, check_sampled_vocab, guard_range

HASH_SEED = 0x5EED5A3D
# Launch menu (`plan`): BLOCK_V is the first of BLOCK_V_MENU that holds the vocab, else the
# last; BLOCK_B is TILE // BLOCK_V rows, at most FEW_ROWS for a batch of at most FEW_ROWS
# rows: four (BLOCK_B, BLOCK_V) pairs per device. On a GPU a tile is one or two rows'
# 1024-wide block, or up to eight rows of a small vocab. The interpreter pays per program
# and per operation, so the CPU tile is large, its small block fits the sampling tests'
# vocabs (<= 32; they call the kernel on ~18k copies of a row), and its few-rows tile fits
# the other tests' batches.
TILE = {"cuda": 2048, "cpu": 2**18}
BLOCK_V_MENU = {"cuda": (256, 1024), "cpu": (32, 8192)}
FEW_ROWS = {"cuda": 1, "cpu": 16}
# Splits: enough programs to fill the device, each chunk at least SPLIT_COLUMNS wide.
TARGET_PROGRAMS = {"cuda": 1056, "cpu": 4}
# The widest tile a caller may ask for: a GPU takes minutes to compile a wider one.
MAX_BLOCK_V = 8192
SPLIT_COLUMNS = 8192
# Row slots (module docstring): packed (~score key << 32 | id), merged by atomic minimum.
EMPTY_SLOT = 2**63 - 1
ID_MASK = 2**32 - 1


def check_gumbel(logits, seeds, positions, temperature, guard: ValueGuard | None = None) -> ValueGuard:
    """seeds: int64 [B]; positions: int64 [B], >= 0; temperature: float32 [B], finite and
    >= 0, or None; all on the logits' device. V >= 1. The value checks are added to `guard`
    (a new one if None), which is returned."""
    check_logits(logits)
    check_sampled_vocab(logits)
    guard = ValueGuard(logits.device, "gumbel_sample") if guard is None else guard
    check_row_param("seeds", seeds, logits, (torch.int64,))
    check_row_param("positions", positions, logits, (torch.int64,))
    guard_range(guard, "positions", positions, ">= 0 (the token position being sampled)", 0,
                INDEX_MAX[torch.int64])
    if temperature is not None:
        check_row_param("temperature", temperature, logits, (torch.float32,))
        guard_range(guard, "temperature", temperature, "finite and >= 0 (0: greedy row)", 0.0, FLOAT32_MAX)
    return guard


@triton.jit
def _fmix32(h):
    """murmur3's 32-bit finaliser: a bijection of uint32 with full avalanche."""
    h = (h ^ (h >> 16)) * 0x85EBCA6B
    h = (h ^ (h >> 13)) * 0xC2B2AE35
    return h ^ (h >> 16)


@triton.jit
def _row_key(seed, position, HASH_SEED: tl.constexpr):
    """murmur3_32 (seed HASH_SEED) of the four little-endian words seed lo, seed hi,
    position lo, position hi (int64 -> uint32 halves), per row."""
    h = tl.full(seed.shape, HASH_SEED, tl.uint32)
    for i in tl.static_range(4):
        value = seed if i < 2 else position
        k = ((value >> (32 * (i % 2))) & 0xFFFFFFFF).to(tl.uint32) * 0xCC9E2D51
        k = ((k << 15) | (k >> 17)) * 0x1B873593
        h = h ^ k
        h = ((h << 13) | (h >> 19)) * 5 + 0xE6546B64
    return _fmix32(h ^ 16)


@triton.jit
def row_noise_key(seeds_ptr, positions_ptr, rows, in_batch, HASH_SEED: tl.constexpr):
    """The noise key of each of `rows` (module docstring), from its seed and position."""
    seed = tl.load(seeds_ptr + rows, mask=in_batch, other=0)
    position = tl.load(positions_ptr + rows, mask=in_batch, other=0)
    return _row_key(seed, position, HASH_SEED)


@triton.jit
def gumbel_noise(key, cols):
    """The Gumbel noise g of token ids `cols` under row noise key `key` (module docstring)."""
    h = _fmix32(key ^ (cols.to(tl.uint32) * 0x9E3779B9))
    u = (((h >> 9) << 1) | 1).to(tl.float32) * 5.9604644775390625e-08  # (2k + 1) / 2**24
    return -tl.log(-tl.log(u))


@triton.jit
def packed_winners(score, ids):
    """(~score key << 32 | id) as int64: the minimum of these holds the largest score and,
    among equal scores, the lowest id (module docstring); `score` has no NaN."""
    return ((~order_key(score)).to(tl.int64) << 32) | ids.to(tl.int64)


@triton.jit
def packed_id(packed):
    """The id of a `packed_winners` code (its low 32 bits), as an int32."""
    return (packed & 0xFFFFFFFF).to(tl.int32)


@jit(do_not_specialize=["row_stride", "B", "V", "chunk", "guard_ptr"])
def _gumbel_kernel(logits_ptr, row_stride, seeds_ptr, positions_ptr, temperature_ptr, slots_ptr, B, V, chunk,
                   guard_ptr, check, GUARDED: tl.constexpr, HAS_TEMPERATURE: tl.constexpr, DIVIDE: tl.constexpr,
                   HASH_SEED: tl.constexpr, BLOCK_B: tl.constexpr, BLOCK_V: tl.constexpr):
    """Program (block of rows, split); the module docstring states the algorithm. DIVIDE: the
    logits are divided by the temperature here (else they hold l / T already, and the
    temperature only marks the greedy rows)."""
    rows = tl.program_id(0).to(tl.int64) * BLOCK_B + tl.arange(0, BLOCK_B)
    split = tl.program_id(1)
    if GUARDED:
        # The call's value checks (bits 1: positions, 2: temperature), made by program
        # (0, 0) alone: the kernel writes only its own result, so nothing waits on them.
        if check & (tl.program_id(0) == 0) & (split == 0):
            failed = tl.where(rows_in_range(positions_ptr, B, 0, INT64_MAX_JIT, False, False, CHECK_BLOCK), 0, 1)
            if HAS_TEMPERATURE:
                failed |= tl.where(rows_in_range(temperature_ptr, B, 0.0, FLOAT32_MAX_JIT, False, False,
                                                 CHECK_BLOCK), 0, 2)
            record_failed(guard_ptr, failed)
    in_batch = rows < B
    if HAS_TEMPERATURE:
        t = tl.load(temperature_ptr + rows, mask=in_batch, other=1.0)
    else:
        t = tl.full([BLOCK_B], 1.0, tl.float32)
    greedy = (t == 0.0)[:, None]
    divisor = tl.broadcast_to(tl.where(t == 0.0, 1.0, t)[:, None], [BLOCK_B, BLOCK_V])
    key = row_noise_key(seeds_ptr, positions_ptr, rows, in_batch, HASH_SEED)[:, None]

    row_ptr = logits_ptr + rows[:, None] * row_stride
    lo = split * chunk
    hi = tl.minimum(lo + chunk, V)
    lanes = tl.arange(0, BLOCK_V)[None, :]
    best_score = tl.full([BLOCK_B, BLOCK_V], float("-inf"), tl.float32)
    best_id = tl.zeros([BLOCK_B, BLOCK_V], tl.int32) + lo + lanes
    for start in range(lo, hi, BLOCK_V):
        cols = start + lanes
        x = to_fp32(tl.load(row_ptr + cols, mask=in_batch[:, None] & (cols < hi), other=float("-inf")))
        # -inf stays -inf (l / T for every valid T, and l / 1 is l exactly) without a division:
        # div.rn takes a slow path on an infinite operand, so a masked row (top-k, min_p) took
        # 1.5-1.9x the time of an unmasked one on the H200 (docs/gpu-runs-2026-12-04.md, session 28).
        if HAS_TEMPERATURE and DIVIDE:
            live = x > float("-inf")
            scaled = tl.where(live, tl.math.div_rn(tl.where(live, x, 1.0), divisor), x)
        else:
            scaled = x
        g = gumbel_noise(key, cols)
        noisy = tl.where(greedy, scaled, scaled + g)
        # NaN never wins; -inf + g stays -inf.
        score = tl.where(scaled > float("-inf"), noisy, float("-inf"))
        # Strict: on a tie the earlier (lower) id of the lane stays.
        better = score > best_score
        best_score = tl.where(better, score, best_score)
        best_id = tl.where(better, cols, best_id)
    # Lanes past the chunk keep -inf and an id >= lo, so they never beat a real entry of the chunk.
    tl.atomic_min(slots_ptr + rows, tl.min(packed_winners(best_score, best_id), axis=1), mask=in_batch)


def plan(batch: int, vocab: int, device_type: str, *, block_v: int | None = None,
         splits: int | None = None) -> tuple[int, int, int, int]:
    """(BLOCK_B, BLOCK_V, splits, chunk) for a launch; the result does not depend on them."""
    if block_v is None:
        block_v = first_fitting(BLOCK_V_MENU[device_type], vocab)
    block_b = max(1, TILE[device_type] // block_v)
    if batch <= FEW_ROWS[device_type]:
        block_b = min(block_b, FEW_ROWS[device_type])
    if splits is None:
        want = cdiv(TARGET_PROGRAMS[device_type], cdiv(batch, block_b))
        splits = max(1, min(want, cdiv(vocab, SPLIT_COLUMNS)))
    chunk = cdiv(cdiv(vocab, splits), block_v) * block_v
    return block_b, block_v, cdiv(vocab, chunk), chunk


def extra_bytes(batch: int, vocab: int, device_type: str) -> int:
    """The device memory a call allocates: the row slots, which become the result."""
    return 8 * batch


def gumbel_sample(logits: torch.Tensor, *, seeds: torch.Tensor, positions: torch.Tensor,
                  temperature: torch.Tensor | None = None, block_v: int | None = None,
                  splits: int | None = None) -> torch.Tensor:
    """Sample one token id per row (module docstring); returns int64 [B]. `block_v` (a power
    of two in [1, MAX_BLOCK_V]) and `splits` (>= 1) tune the launch only."""
    if block_v is not None and not (1 <= block_v <= MAX_BLOCK_V and block_v & (block_v - 1) == 0):
        raise ValueError(f"block_v must be a power of two in [1, {MAX_BLOCK_V}]; got {block_v}")
    if splits is not None and splits < 1:
        raise ValueError(f"splits must be >= 1; got {splits}")
    guard = check_gumbel(logits, seeds, positions, temperature)
    flag = guard.settle(in_kernel=True)  # both checks are made in the kernel
    return launch_gumbel(logits, seeds, positions, temperature, flag, guard.on_device, block_v, splits)


def launch_gumbel(logits: torch.Tensor, seeds: torch.Tensor, positions: torch.Tensor,
                  temperature: torch.Tensor | None, flag: torch.Tensor | None, check: bool,
                  block_v: int | None = None, splits: int | None = None, divide: bool = True) -> torch.Tensor:
    """`gumbel_sample`'s launch, for arguments that passed `check_gumbel` (and checked `block_v`
    and `splits`): under the guard flag `flag` (None: unguarded); `check`: the kernel makes the
    call's value checks. `divide=False`: the logits hold l / T already (the sampler's
    temperature op), so the rows with T == 0 take the argmax and the others add the noise to
    the logits as they are."""
    batch, vocab = logits.shape
    if batch == 0:
        return torch.empty(0, dtype=torch.int64, device=logits.device)
    check_launchable(_gumbel_kernel, logits)
    block_b, block_v, splits, chunk = plan(batch, vocab, device_kind(logits), block_v=block_v, splits=splits)
    # Row parameters are contiguous (check_row_param), so they are passed as they are.
    slots = torch.full((batch,), EMPTY_SLOT, dtype=torch.int64, device=logits.device)
    # The interpreter computes with numpy, which warns when l / T overflows to +-inf (the
    # specified quotient) or is inf / inf (an unchecked T): neither is an error.
    quiet = np.errstate(over="ignore", invalid="ignore") if is_interpreted(_gumbel_kernel) \
        else contextlib.nullcontext()
    with quiet:
        _gumbel_kernel[(cdiv(batch, block_b), splits)](
            logits, logits.stride(0), seeds, positions, temperature, slots, batch, vocab, chunk, flag,
            check, GUARDED=flag is not None, HAS_TEMPERATURE=temperature is not None, DIVIDE=divide,
            HASH_SEED=HASH_SEED, BLOCK_B=block_b, BLOCK_V=block_v)
    # The winner's packed low half is its id (module docstring).
    return slots.bitwise_and_(ID_MASK)
