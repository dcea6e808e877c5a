"""Top-k masking, and top-k then top-p, with each row split over chunk programs, in one launch:
the path that `samplecheck.kernels.top_k_top_p.apply_top_k_top_p` takes for a small batch with
`k` (`chunks_plan`), where one program per row would leave most of the GPU idle.

Contract, semantics and cuts: those of `samplecheck.kernels.top_k_top_p` (its module
docstring). The top-k cut of a row with 0 < k < V is the k-th largest key counted with
multiplicity (NaN read as -inf), the smallest key c with #(key > c) < k; the top-p cut is the
smallest survivor key c with mass(key > c) < p * mass(survivors), masses in the same 2**-40
fixed point. The one-program search finds both too, so the paths mask every row identically.

One launch over a [B, S] grid (S chunks of 2**COL_BITS columns a row); rows with top-k and
top-p off do nothing:
- where 0 < k <= K_MAX, each program codes its chunk (`samplecheck.kernels.chunk_codes`: value
  key, then column; distinct), finds the chunk's k-th largest key L (`kth_largest_key`, digit
  by digit), writes -inf at the chunk's entries with key < L (the row's cut is at or above L:
  they are dropped whatever the other chunks hold), and lists the entries at or above L in
  the row's lists: those above L (fewer than k), then those at L, K_MAX slots in all (the
  smallest int64 in the slots left); it records 2 L + 1 if entries at L were left out (the
  chunk overflowed), else 2 L;
- each program then counts itself in at the row's counter (an atomic add, acquire-release,
  after a barrier: the program's stores are visible to whoever counts in after it); the
  program that counts in last finishes the row alone:
  - where 0 < k <= K_MAX, the row's k largest entries are among the listed ones (each chunk
    lists its k largest keys with multiplicity, or every entry it has if fewer, and perhaps
    more at its k-th key), so the k-th largest listed key is the top-k cut (`kth_largest_key`
    again). With p < 1, the listed codes' k largest, stored in order in the row's scratch,
    give the top-p cut: every survivor above the k-th value is listed, so the mass above each
    listed value is a prefix sum of their weights in the sorted list; the survivors' total
    adds the k-th value's weight once for each entry that holds it, counted from the lists
    and, in the chunks that overflowed at that value, over the chunk. Every entry not written
    yet is listed, or at the level of a chunk that overflowed: the program writes -inf at the
    listed entries below the cut (and at the listed NaN, which read as -inf) and passes over
    the overflowed chunks below the cut;
  - else (k > K_MAX, or top-k off with p < 1) it searches the whole row as the one-program
    kernel does (`samplecheck.kernels.cut_search.row_cut`, with the scratch) and writes it.
  So -inf is written below the cut and at NaN, and nothing else.
Value checks (deferred or captured): every program checks all B values of k (and p) itself
and program (0, 0) records a failure in the guard flag; a set flag makes every program write
nothing.

Buffer per call: one int64 allocation, zeroed (the counters must start at 0), [B, WORDS]
with WORDS = S * K_MAX (the lists) + S rounded up to even (each chunk's L and overflow) +
CAP / 2 (the scratch: CAP fp32 entries, or the k merged codes) + 2 (the counter and a pad
word): an even count, so every row starts 16-byte aligned; `chunks_buffer_bytes`. No host
synchronisation: the call captures in a CUDA graph.
"""

import torch
import triton
import triton.language as tl

from samplecheck.kernels.chunk_codes import (INT64_MIN_JIT, LIST_KEY_BITS, chunk_codes, code_column,
                                             kth_largest_key, list_chunk, low_zero_bits, rank_listed)
from samplecheck.kernels.cut_keys import INT32_MAX_JIT, load_row, order_key, weight, write_below_cut
from samplecheck.kernels.cut_search import row_cut
from samplecheck.kernels.drop_store import group_columns, store_neg_inf
from samplecheck.kernels.guard import guard_pointer
from samplecheck.kernels.launching import jit
from samplecheck.kernels.row_params import may_write, row_k_p
from samplecheck.kernels.runtime import cdiv

# By device: MAX_ROWS, the largest batch that takes this path, and MIN_VOCAB, the smallest
# vocab; COL_BITS: 2**COL_BITS columns a chunk (COL_BITS <= 12, `chunk_codes`); K_MAX: the
# slots of a chunk's list, the largest k listed (larger k search the row in its last
# program); MAX_MERGE: the most slots a row's lists may hold (S * K_MAX), the last program's
# tile whatever the vocab (a power of two; one compiled variant for every vocab, the lanes
# past S * K_MAX unread); DIGIT_BITS: the bits `kth_largest_key` fixes a step, one histogram
# of 2**DIGIT_BITS bins each (compiled for sm_90 at 4: 124 registers a thread with bf16 logits,
# 159 with p; fp32 170 and 198; at 1 and 8 within 12 of these;
# docs/benchmarks-2026-12-04-to-05.md, session 33; on the CPU 8: the interpreter pays per step,
# not per bin); WITH_P: whether calls with p as well as k take this path (else the one-program
# kernel); num_warps: 8, as the one-program kernel's search tiles need.
# On an H100 (docs/gpu-runs-2026-12-05.md, session 34; bf16, k = 50, p = 0.9; GPU time of a graph
# replay, this path against one program a row): DIGIT_BITS 4 is the fastest at 1 x 151936
# (top-k 34.1 / 19.7 / 23.2 us at 1 / 4 / 8 bits; top-k + top-p 61.4 / 33.2 / 39.4); MAX_ROWS
# 32 (session 36, DIGIT_BITS 4, against one program a row): bf16 top-k at 16 / 32 / 64 rows
# 99.8 -> 38.8, 100.7 -> 67.6, 104.4 -> 111.7 us; top-k + top-p 108.9 -> 59.7, 109.1 -> 96.7,
# 112.8 -> 165.2; fp16 top-k at 32 rows 98.1 -> 78.1. COL_BITS 13-15 (bf16 codes fit 15) are
# slower than 12 for top-k at 16-256 rows; 13 is a little faster for top-k + top-p (57.7 us at
# 16 rows, 87.4 at 32), and both lose to one program a row from 64 rows. On the CPU, every
# vocab and small chunks and K_MAX, so that most of the suite's top-k calls on at most
# MAX_ROWS rows take this path, over one or several chunks, with k <= K_MAX and with the row
# search.
CHUNKS_CONFIG = {
    "cuda": dict(MAX_ROWS=32, MIN_VOCAB=8192, COL_BITS=12, K_MAX=64, MAX_MERGE=4096, DIGIT_BITS=4, WITH_P=True,
                 num_warps=8),
    "cpu": dict(MAX_ROWS=4, MIN_VOCAB=1, COL_BITS=8, K_MAX=32, MAX_MERGE=2048, DIGIT_BITS=8, WITH_P=True,
                num_warps=4),
}


@triton.jit
def listed_keys(lists_ptr, S, K_MAX: tl.constexpr, COL_BITS: tl.constexpr, KEY_BITS: tl.constexpr,
                MERGE: tl.constexpr):
    """The row's list slots as [MERGE // 8, 8] tiles: (their keys, int32 where KEY_BITS < 32;
    whether a slot holds an entry; its column). Each step of the last program loads them
    afresh: tiles kept live across a selection cost registers (45 a thread with p, sm_90)."""
    slot = group_columns(MERGE)
    code = tl.load(lists_ptr + slot, mask=slot < S * K_MAX, other=INT64_MIN_JIT, cache_modifier=".cg")
    keys = code >> COL_BITS
    if KEY_BITS < 32:
        keys = keys.to(tl.int32)
    return keys, code != INT64_MIN_JIT, code_column(code, slot // K_MAX, COL_BITS).to(tl.int32)


@triton.jit
def top_k_list(lists_ptr, top_ptr, S, level, k, K_MAX: tl.constexpr, COL_BITS: tl.constexpr,
               KEY_BITS: tl.constexpr, MERGE: tl.constexpr):
    """The row's k largest row codes (key, then 2**31 - 1 - column), stored at top_ptr[:k],
    largest first (then visible to the whole program), from its chunk lists and `level`, the
    k-th largest listed key: the listed entries above `level` (fewer than k) and enough at it,
    listed as a chunk's are (`list_chunk`) and put in order; returns the k-th. Which entries at
    `level` fill the list does not matter: they share its value (up to the sign of a zero)."""
    keys, real, column = listed_keys(lists_ptr, S, K_MAX, COL_BITS, KEY_BITS, MERGE)
    codes = (keys.to(tl.int64) << 32) | (column * -1 + INT32_MAX_JIT)
    listed, rank = rank_listed(codes, keys, real, level, top_ptr, K_MAX)
    tl.store(top_ptr + rank, listed, mask=listed != INT64_MIN_JIT)
    tl.debug_barrier()
    return tl.max(tl.where(rank == k - 1, listed, INT64_MIN_JIT), axis=0)


@triton.jit
def _larger(a, b):
    return tl.maximum(a, b)


@triton.jit
def cut_ties(row_ptr, lists_ptr, levels_ptr, S, V, level, K_MAX: tl.constexpr, COL_BITS: tl.constexpr,
             KEY_BITS: tl.constexpr, MERGE: tl.constexpr):
    """How many of the row's entries have list key `level` (NaN read as -inf): the listed ones
    and, in each chunk that overflowed at that level (`list_chunk`), the unlisted ones, from a
    count over the chunk."""
    keys, real, _ = listed_keys(lists_ptr, S, K_MAX, COL_BITS, KEY_BITS, MERGE)
    ties = tl.sum((real & (keys == level)).to(tl.int32))
    chunk = tl.arange(0, MERGE // K_MAX)
    state = tl.load(levels_ptr + chunk, mask=chunk < S, other=0, cache_modifier=".cg")
    rescan = (chunk < S) & ((state & 1) == 1) & ((state >> 1) == level)
    if tl.sum(rescan.to(tl.int32), axis=0) > 0:
        local = tl.arange(0, 1 << COL_BITS)
        rank = tl.arange(0, K_MAX)
        for c in range(0, S):
            if tl.load(levels_ptr + c, cache_modifier=".cg") == level * 2 + 1:
                first = c << COL_BITS
                in_row = first + local < V
                codes = chunk_codes(tl.load(row_ptr + first + local, mask=in_row), local, in_row, COL_BITS, False)
                listed = tl.load(lists_ptr + c * K_MAX + rank, cache_modifier=".cg")
                ties += tl.sum((in_row & ((codes >> COL_BITS) == level)).to(tl.int32), axis=0)
                ties -= tl.sum(((listed != INT64_MIN_JIT) & ((listed >> COL_BITS) == level)).to(tl.int32), axis=0)
    return ties


@triton.jit
def listed_top_p_cut(row_ptr, top_ptr, lists_ptr, levels_ptr, S, V, kth, k, p, K_MAX: tl.constexpr,
                     COL_BITS: tl.constexpr, KEY_BITS: tl.constexpr, MERGE: tl.constexpr):
    """The top-p cut over the top-k survivors of a row with 0 < k <= K_MAX and p < 1, from its
    k largest row codes (top_ptr[:k], largest first; kth the k-th): the predicate and cut of
    the one-program search (`samplecheck.kernels.cut_search`), evaluated at every listed key.
    Every survivor above the k-th value is listed; its ties are counted (`cut_ties`). In the
    sorted list, the mass above rank i is the prefix sum of the weights before i's run of
    equal values (each of the run's entries has i's weight)."""
    rank = tl.arange(0, K_MAX)
    listed = rank < k
    top = tl.load(top_ptr + rank, mask=listed, other=0, cache_modifier=".cg")
    x = load_row(row_ptr + ((top & INT32_MAX_JIT) * -1 + INT32_MAX_JIT), listed)
    key = order_key(x)
    top_value = tl.max(x, axis=0)
    cut = order_key(top_value)
    if top_value < float("inf"):  # else the +inf survivors hold all the mass: only they are kept
        row_max = tl.where(top_value == float("-inf"), 0.0, top_value)
        w = weight(x, row_max)
        before = tl.load(top_ptr + rank - 1, mask=listed & (rank > 0), other=0, cache_modifier=".cg")
        run_start = tl.associative_scan(tl.where((rank == 0) | ((before >> 32) != (top >> 32)), rank, 0), 0,
                                        _larger)
        above = tl.cumsum(w, axis=0) - w - (rank - run_start) * w
        x_k = tl.max(tl.where(rank == k - 1, x, float("-inf")), axis=0)
        total = tl.sum(tl.where(rank == k - 1, above, 0), axis=0)
        if x_k > float("-inf"):
            ties = cut_ties(row_ptr, lists_ptr, levels_ptr, S, V, kth >> 32, K_MAX, COL_BITS, KEY_BITS, MERGE)
            total += ties * weight(x_k, row_max)
        holds = listed & (above.to(tl.float32) < p * total.to(tl.float32))
        cut = tl.min(tl.where(holds, key, cut), axis=0)
    return cut


@triton.jit
def write_listed_below_cut(row_ptr, lists_ptr, levels_ptr, S, V, cut, K_MAX: tl.constexpr, COL_BITS: tl.constexpr,
                           KEY_BITS: tl.constexpr, MERGE: tl.constexpr, BLOCK: tl.constexpr,
                           NUM_STAGES: tl.constexpr):
    """-inf at every entry of the row below `cut` (an `order_key`) or NaN that its chunk left
    (`list_chunk`): the listed ones, and the overflowed chunks whose level is below the cut or
    is -inf's (its entries may be NaN), passed over whole."""
    keys, real, column = listed_keys(lists_ptr, S, K_MAX, COL_BITS, KEY_BITS, MERGE)
    lowest = low_zero_bits(row_ptr.dtype.element_ty)
    cut_level = cut >> lowest
    neg_inf_level = order_key(tl.full([], float("-inf"), tl.float32)) >> lowest
    # column < V: never a store outside the row, even from a slot no chunk program wrote.
    store_neg_inf(row_ptr + column, real & (column < V) & ((keys < cut_level) | (keys == neg_inf_level)))
    chunk = tl.arange(0, MERGE // K_MAX)
    state = tl.load(levels_ptr + chunk, mask=chunk < S, other=0, cache_modifier=".cg")
    level = state >> 1
    pass_over = (chunk < S) & ((state & 1) == 1) & ((level < cut_level) | (level == neg_inf_level))
    if tl.sum(pass_over.to(tl.int32), axis=0) > 0:
        for c in range(0, S):
            state_c = tl.load(levels_ptr + c, cache_modifier=".cg")
            if ((state_c & 1) == 1) & (((state_c >> 1) < cut_level) | ((state_c >> 1) == neg_inf_level)):
                write_below_cut(row_ptr, c << COL_BITS, tl.minimum((c + 1) << COL_BITS, V), cut, BLOCK, NUM_STAGES)


# `guarded` is a runtime bool: a guarded and an unguarded call share a compiled kernel.
@jit(do_not_specialize=["k_ptr", "p_ptr", "B", "S", "guard_ptr", "guarded"])
def _top_k_chunks_kernel(logits_ptr, row_stride, k_ptr, p_ptr, buffer_ptr, B, V, S, guard_ptr, check, guarded,
                         HAS_P: tl.constexpr, COL_BITS: tl.constexpr, K_MAX: tl.constexpr,
                         MERGE: tl.constexpr, KEY_BITS: tl.constexpr, DIGIT_BITS: tl.constexpr, BLOCK: tl.constexpr,
                         NUM_STAGES: tl.constexpr, LANES: tl.constexpr, BOUND_STEPS: tl.constexpr,
                         TILE: tl.constexpr, NUM_PIVOTS: tl.constexpr, CAP: tl.constexpr, RANK_ROWS: tl.constexpr,
                         RANK_COLS: tl.constexpr, SAMPLE: tl.constexpr):
    """Program (row, chunk); the module docstring states the algorithm."""
    tl.static_assert(K_MAX <= CAP // 2)  # a row's top-k list fits its scratch
    row = tl.program_id(0).to(tl.int64)
    split = tl.program_id(1)
    row_ptr = logits_ptr + row * row_stride
    lists_ptr = buffer_ptr + row * (S * K_MAX + S + S % 2 + CAP // 2 + 2)
    levels_ptr = lists_ptr + S * K_MAX
    scratch_ptr = levels_ptr + S + S % 2
    count_ptr = scratch_ptr + CAP // 2
    k, p = row_k_p(k_ptr, p_ptr, row, V, True, HAS_P)
    listed = (k < V) & (k <= K_MAX)
    if ((k < V) | (p < 1.0)) & may_write(k_ptr, p_ptr, B, guard_ptr, check, guarded, True, HAS_P):
        if listed:
            first = split << COL_BITS
            local = group_columns(1 << COL_BITS)
            live = first + local < V
            codes = chunk_codes(tl.load(row_ptr + first + local, mask=live), local, live, COL_BITS, False)
            keys = codes >> COL_BITS
            level = kth_largest_key(keys, live, k, KEY_BITS, DIGIT_BITS)
            store_neg_inf(row_ptr + first + local, live & (keys < level))
            overflowed = list_chunk(codes, keys, live, level, lists_ptr + split * K_MAX, K_MAX)
            tl.store(levels_ptr + split, level.to(tl.int64) * 2 + overflowed.to(tl.int64))
        tl.debug_barrier()
        if tl.atomic_add(count_ptr, 1) == S - 1:
            if listed:
                keys, real, _ = listed_keys(lists_ptr, S, K_MAX, COL_BITS, KEY_BITS, MERGE)
                kth_key = kth_largest_key(keys, real, k, KEY_BITS, DIGIT_BITS)
                cut = (kth_key << low_zero_bits(logits_ptr.dtype.element_ty)).to(tl.int32)
                if HAS_P:
                    if p < 1.0:
                        kth = top_k_list(lists_ptr, scratch_ptr, S, kth_key, k, K_MAX, COL_BITS, KEY_BITS, MERGE)
                        cut = listed_top_p_cut(row_ptr, scratch_ptr, lists_ptr, levels_ptr, S, V, kth, k, p, K_MAX,
                                               COL_BITS, KEY_BITS, MERGE)
                write_listed_below_cut(row_ptr, lists_ptr, levels_ptr, S, V, cut, K_MAX, COL_BITS, KEY_BITS, MERGE,
                                       BLOCK, NUM_STAGES)
            else:
                cut = row_cut(row_ptr, V, k, p, scratch_ptr.to(tl.pointer_type(tl.float32), bitcast=True), True,
                              HAS_P, BLOCK, NUM_STAGES, LANES, BOUND_STEPS, TILE, NUM_PIVOTS, CAP, RANK_ROWS,
                              RANK_COLS, SAMPLE, False)[0]
                write_below_cut(row_ptr, 0, V, cut, BLOCK, NUM_STAGES)


def chunks_plan(batch: int, vocab: int, device: str, has_k: bool, has_p: bool) -> int | None:
    """S, the chunks a row splits into, when the call takes this path (k, with p where WITH_P;
    at most MAX_ROWS rows, at least MIN_VOCAB columns, S * K_MAX codes within MAX_MERGE); else
    None."""
    c = CHUNKS_CONFIG[device]
    splits = cdiv(vocab, 1 << c["COL_BITS"])
    if not has_k or (has_p and not c["WITH_P"]) or batch > c["MAX_ROWS"] or vocab < c["MIN_VOCAB"]:
        return None
    if splits * c["K_MAX"] > c["MAX_MERGE"]:
        return None
    return splits


def _row_words(splits: int, device: str, cap: int) -> int:
    """The int64 words of a row's part of the buffer (module docstring)."""
    return splits * CHUNKS_CONFIG[device]["K_MAX"] + splits + splits % 2 + cap // 2 + 2


def chunks_buffer_bytes(batch: int, splits: int, device: str, cap: int) -> int:
    """Bytes the path allocates for a call: its one buffer (module docstring)."""
    return 8 * batch * _row_words(splits, device, cap)


def launch_chunks(logits: torch.Tensor, k: torch.Tensor, p: torch.Tensor | None, splits: int, device: str,
                  search: dict, flag: torch.Tensor | None, check: bool) -> None:
    """Mask `logits` (module docstring); `search`: the one-program kernel's launch config
    (`samplecheck.kernels.top_k_top_p.LAUNCH_CONFIG[device]`), for the rows searched whole."""
    c = CHUNKS_CONFIG[device]
    batch, vocab = logits.shape
    buffer = logits.new_zeros((batch, _row_words(splits, device, search["CAP"])), dtype=torch.int64)
    _top_k_chunks_kernel[(batch, splits)](
        logits, logits.stride(0), k, p, buffer, batch, vocab, splits, guard_pointer(flag, buffer), check,
        flag is not None, HAS_P=p is not None, COL_BITS=c["COL_BITS"], K_MAX=c["K_MAX"], MERGE=c["MAX_MERGE"],
        KEY_BITS=LIST_KEY_BITS[logits.dtype], DIGIT_BITS=c["DIGIT_BITS"], BLOCK=search["BLOCK"],
        NUM_STAGES=search["NUM_STAGES"], LANES=search["LANES"], BOUND_STEPS=search["BOUND_STEPS"],
        TILE=search["TILE"], NUM_PIVOTS=search["NUM_PIVOTS"], CAP=search["CAP"], RANK_ROWS=search["RANK_ROWS"],
        RANK_COLS=search["RANK_COLS"], SAMPLE=search["SAMPLE"], num_warps=c["num_warps"])
