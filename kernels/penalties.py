"""Repetition, frequency and presence penalties, in place: a sparse update of the ids in
each row's prompt and output lists.

Contract (the oracle `samplecheck.oracles.penalties` states the semantics in full):
- `logits` [B, V] fp32/bf16/fp16, any row stride, column stride 1; loads upcast to fp32.
  Modified in place and returned.
- `prompt_token_ids` [B, P] and `output_token_ids` [B, O], int32/int64 on the logits'
  device (P, O >= 0). Entries are ids in [0, V), -1 or V (the pad id). In the prompt, -1
  and V are ignored wherever they appear. The output list is the generated history, read
  as every op reads it (`samplecheck.kernels.validation.history`): it ends at the row's
  first -1 (padding, or async-scheduling placeholders: the tokens not known yet), and
  every later entry is ignored; V is ignored anywhere. Anything else is a ValueError
  (a value check: unchecked, ids outside [0, V) are ignored, never addressed).
- `repetition_penalty` [B] float32, finite and > 0 (1: off); `frequency_penalty` and
  `presence_penalty` [B] float32 in [-2, 2] (0: off); all on the logits' device.
- Per row, for each distinct id t of prompt ∪ output, with c = its count in the output
  list only, in fp32 and in this order:
    l = div_rn(l, r) if l > 0 else l * r      (repetition; 0 and -inf are fixed points)
    l = fma(-f, c, l)                          (frequency, only where c > 0: one rounding)
    l = l - q                                  (presence, only where c > 0)
  then stored with round-to-nearest-even in the logits' dtype (`samplecheck.kernels.rounding`).
  Every operation is a single IEEE round-to-nearest step, so the result is the same bits
  on a GPU and in the interpreter: division is `tl.math.div_rn` (Triton's `/` is
  approximate on NVIDIA), and the frequency step is an explicit fma, so the compiler's
  mul+add contraction has nothing to change. No clamp: l * r or l / r may overflow to +-inf.
- Non-finite logits follow IEEE arithmetic in the steps above: NaN stays NaN, +-inf stay
  +-inf (a frequency or presence step never meets inf - inf, as f * c and q are finite).
- Values (`values_checked`): unchecked, penalties outside their ranges are applied as
  given (a NaN penalty makes the listed entries NaN), in bounds.
- Rows with r == 1, f == 0 and q == 0 are never written. Ids outside prompt ∪ output are
  never read or written, so they stay bitwise unchanged; row-stride gaps are untouched.

Design: no [B, V] scratch (no counts, no masks, no fp32 copy); every id of a row is updated
exactly once, so programs never race. Each entry of a row becomes a key: 2*id (prompt),
2*id + 1 (output), 2*V where ignored, so that a row's sorted keys hold each id's entries
together, its output entries last. Three paths, the same arithmetic per id:
- short lists (P + O <= IN_KERNEL_MAX_LENGTH, V < 2**30), few rows (B * (P + O)**2 <=
  PAIRS_MAX_WORK): one kernel, grid B x (cdiv(O, BLOCK) + cdiv(P, BLOCK)), BLOCK of
  PAIR_LAUNCH (`_penalties_pairs_kernel`); a row's entries are taken in the order output
  list ++ prompt list, each entry is compared with the entries that decide it, and written
  iff it is its id's first occurrence in that order, with its count of output occurrences.
  No scratch.
- other short lists: one kernel, one program per row (`_penalties_row_sort_kernel`); the
  program loads the row's P + O keys (LENGTH of them, a power of two, the rest 2*V), sorts
  them in registers, counts each id's output keys with a scan that restarts at every new id,
  and updates the logit of each id at its last key. No scratch.
- longer lists: on the host, the keys are sorted per row, torch.searchsorted counts each
  key's output occurrences (keys equal to 2*id + 1), and every key but the first of its id is
  replaced by the ignored id V; the kernel (grid B x cdiv(P + O, BLOCK)) then updates the
  logit of each remaining id. Scratch: a few [B, P + O] int tensors, at most
  SCRATCH_BYTES_PER_ID bytes per list entry (sort values and indices, searchsorted results,
  the device sort's workspace).

Value checks (deferred or captured mode, `samplecheck.kernels.validation`): when the batch's
lists hold at most INLINE_CHECK_IDS ids, every program checks both lists and the three
penalties of the whole batch itself (`penalties_failures`, flat), writes nothing where a
check fails, and program (0, 0) records the failed checks in the call's guard flag: one
launch. Larger calls launch `_penalties_guard_kernel` (one program per row) first.
"""

import contextlib

import numpy as np
import torch
import triton
import triton.language as tl

from samplecheck.kernels.rounding import to_fp32, to_output_dtype
from samplecheck.kernels.launching import jit
from samplecheck.kernels.runtime import cdiv, check_launchable, device_kind, is_interpreted
from samplecheck.kernels.guard import (FLOAT32_MAX, FLOAT32_MAX_JIT, INLINE_CHECK_IDS, ValueGuard, guard_pointer,
                                      list_has_bad_id, record_failed, rows_in_range)
from samplecheck.kernels.validation import (check_id_layout, check_logits, check_row_param, history, range_describer,
                                            token_ids_describer)

# List entries per program of the host-sorted path's kernel (the result does not depend on
# it). The interpreter pays per program, so the CPU block holds a drawn row's lists whole; the
# full-size regression example's lists span several blocks.
BLOCK = {"cuda": 256, "cpu": 128}
# Lists of at most IN_KERNEL_MAX_LENGTH entries (prompt + output) are handled in the kernel (one
# launch, no host preprocessing); longer ones sorted on the host first. On CPU the limit is
# small so that the suite's drawn lists exercise every path.
IN_KERNEL_MAX_LENGTH = {"cuda": 2048, "cpu": 6}
# Of those, a batch of at most PAIRS_MAX_WORK compares (B * (P + O)**2) takes the pair kernel,
# whose B x cdiv(P + O, BLOCK) programs fill the GPU where one program a row (latency-bound
# by its sort) does not. On an H100 at 512 + 256 ids a row (docs/gpu-runs.md, sessions 43 and
# 44), GPU time, pair kernel against row sort: 7.6 against 16.2 us at one row, 17.4 against 20.2
# at 64 rows (2**25.2 compares), 40.1 against 32.3 at 256 rows (2**27.2).
PAIRS_MAX_WORK = {"cuda": 2**26, "cpu": 64}
# (BLOCK, num_warps) of the pair kernel: BLOCK list entries per program, compared BLOCK at a
# time (the fastest of (64, 8), (64, 4), (32, 4), (32, 8) on the H200: docs/gpu-runs-2026-12-04.md,
# session 28).
PAIR_LAUNCH = {"cuda": (32, 4), "cpu": (8, 1)}
# The fewest keys the row-sort kernel sorts (LENGTH is P + O rounded up to a power of two, at
# least this): fewer LENGTHs, fewer specializations to compile (a GPU's 512 keys cost little
# more than 128 to sort). ROW_SORT_MOST_KEYS: the most (longer lists take the host path
# whatever `in_kernel_max_length` says). A program has a warp per ROW_SORT_KEYS_PER_WARP keys,
# at least ROW_SORT_MIN_WARPS and at most ROW_SORT_MOST_WARPS. On an H100 at 1024 keys a row
# (docs/gpu-runs.md, session 45), GPU time at 256 x 32000 / 256 x 151936 / 1024 x 151936: 4
# warps 26.5 / 32.2 / 93.7 us, 8 warps 22.7 / 28.0 / 76.8, 16 warps 20.9 / 25.3 / 74.6, the
# same at 16 warps whichever setting gives them.
ROW_SORT_MIN_LENGTH = {"cuda": 512, "cpu": 8}
ROW_SORT_MOST_KEYS = 8192
ROW_SORT_KEYS_PER_WARP = 64
ROW_SORT_MIN_WARPS = 4
ROW_SORT_MOST_WARPS = 16
# Upper bound on the host scratch per list entry (P + O entries per row), in bytes.
SCRATCH_BYTES_PER_ID = 64
GUARD_BLOCK = {"cuda": 256, "cpu": 64}  # ids per step of the fused value check


def check_penalties(logits, prompt_token_ids, output_token_ids, repetition_penalty, frequency_penalty,
                    presence_penalty, guard: ValueGuard | None = None) -> ValueGuard:
    """Shapes, dtypes and devices (raised at once) and the value checks, added to `guard` (a
    new one if None) as one fused device check, and returned (module docstring); each error
    names its parameter."""
    check_logits(logits)
    guard = ValueGuard(logits.device, "apply_penalties") if guard is None else guard
    vocab = logits.size(1)
    check_id_layout("prompt_token_ids", prompt_token_ids, logits)
    check_id_layout("output_token_ids", output_token_ids, logits)
    check_row_param("repetition_penalty", repetition_penalty, logits, (torch.float32,))
    check_row_param("frequency_penalty", frequency_penalty, logits, (torch.float32,))
    check_row_param("presence_penalty", presence_penalty, logits, (torch.float32,))
    named = [(name, token_ids_describer(name, ids, vocab, (vocab,)))
             for name, ids in (("prompt_token_ids", prompt_token_ids), ("output_token_ids", output_token_ids))]
    named.append(("repetition_penalty", range_describer("repetition_penalty", repetition_penalty,
                                                        "finite and > 0 (1 turns it off)", 0.0, FLOAT32_MAX,
                                                        lo_open=True)))
    for name, value in (("frequency_penalty", frequency_penalty), ("presence_penalty", presence_penalty)):
        named.append((name, range_describer(name, value, "in [-2, 2] (0 turns it off)", -2.0, 2.0)))
    guard.fused(named, lambda flag, first: _launch_guard(
        flag, first, vocab, prompt_token_ids, output_token_ids, repetition_penalty, frequency_penalty,
        presence_penalty))
    return guard


@triton.jit
def penalties_failures(prompt_ptr, prompt_len, output_ptr, output_len, repetition_ptr, frequency_ptr, presence_ptr,
                       rows, V, BLOCK: tl.constexpr):
    """The failed checks of `rows` consecutive rows (pointers at the first; prompt_len and
    output_len: their lists' entries), as bits in check_penalties' order: list ids in [0, V),
    -1 or V; r finite and > 0; f and q in [-2, 2]."""
    failed = tl.where(list_has_bad_id(prompt_ptr, prompt_len, V, V, BLOCK), 1, 0)
    failed |= tl.where(list_has_bad_id(output_ptr, output_len, V, V, BLOCK), 2, 0)
    failed |= tl.where(rows_in_range(repetition_ptr, rows, 0.0, FLOAT32_MAX_JIT, True, False, BLOCK), 0, 4)
    failed |= tl.where(rows_in_range(frequency_ptr, rows, -2.0, 2.0, False, False, BLOCK), 0, 8)
    return failed | tl.where(rows_in_range(presence_ptr, rows, -2.0, 2.0, False, False, BLOCK), 0, 16)


@jit(do_not_specialize=["flag_ptr", "first", "V", "prompt_ptr", "P", "output_ptr", "O", "repetition_ptr",
                       "frequency_ptr", "presence_ptr"])
def _penalties_guard_kernel(flag_ptr, first, V, prompt_ptr, P, output_ptr, O, repetition_ptr, frequency_ptr,
                            presence_ptr, BLOCK: tl.constexpr):
    """One program per row: its failed checks OR-ed into the flag from bit `first`."""
    row = tl.program_id(0).to(tl.int64)
    failed = penalties_failures(prompt_ptr + row * P, P, output_ptr + row * O, O, repetition_ptr + row,
                                frequency_ptr + row, presence_ptr + row, 1, V, BLOCK)
    if failed != 0:
        tl.atomic_or(flag_ptr, failed << first)


def _launch_guard(flag, first, vocab, prompt, output, repetition, frequency, presence) -> None:
    """The fused device check of `check_penalties`."""
    batch = prompt.size(0)
    if batch == 0:
        return
    _penalties_guard_kernel[(batch,)](  # an empty list is passed as it is (never read)
        flag, first, vocab, prompt.contiguous(), prompt.size(1), output.contiguous(), output.size(1),
        repetition, frequency, presence,
        BLOCK=GUARD_BLOCK[device_kind(flag)])


def int32_keys(vocab: int) -> bool:
    """Whether a row's keys (module docstring; the largest 2 * V) fit int32."""
    return 2 * vocab + 1 < 2**31


def row_sort_launch(length: int, kind: str) -> tuple[int, int]:
    """(LENGTH, num_warps) of the row-sort kernel for lists of `length` entries (P + O) on a
    device of `kind`: P + O rounded up to a power of two, at least ROW_SORT_MIN_LENGTH; a warp
    per ROW_SORT_KEYS_PER_WARP keys, from ROW_SORT_MIN_WARPS to ROW_SORT_MOST_WARPS."""
    keys = max(triton.next_power_of_2(length), ROW_SORT_MIN_LENGTH[kind])
    return keys, min(ROW_SORT_MOST_WARPS, max(ROW_SORT_MIN_WARPS, keys // ROW_SORT_KEYS_PER_WARP))


def sorted_keys(prompt_token_ids: torch.Tensor, output_token_ids: torch.Tensor, vocab: int) -> torch.Tensor:
    """[B, P + O] per row ascending: 2*id for prompt entries, 2*id + 1 for output entries,
    2*V for ignored entries (-1, V, anything outside [0, V), and the output entries from
    the row's first -1 on), which sort after every real id."""
    dtype = torch.int32 if int32_keys(vocab) else torch.int64

    def keys_of(ids: torch.Tensor, role: int) -> torch.Tensor:
        # The range test on the ids as given: narrowing first would read an int64 id beyond
        # int32 as its low 32 bits (2**32 + 3 as 3).
        return torch.where((ids >= 0) & (ids < vocab), ids.to(dtype) * 2 + role, 2 * vocab)

    keys = torch.cat((keys_of(prompt_token_ids, 0), keys_of(history(output_token_ids), 1)), dim=1)
    return keys.sort(dim=1).values


def first_occurrences(prompt_token_ids: torch.Tensor, output_token_ids: torch.Tensor,
                      vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(tokens, counts), both [B, P + O]: each id of prompt ∪ output once per row (V in every
    other slot), and int32 counts, where counts[b, j] is how often tokens[b, j] occurs in the
    output list (the number of keys 2*id + 1 in its row)."""
    keys = sorted_keys(prompt_token_ids, output_token_ids, vocab)
    out_key = keys | 1
    counts = torch.searchsorted(keys, out_key, side="right", out_int32=True)
    counts.sub_(torch.searchsorted(keys, out_key, side="left", out_int32=True))
    tokens = keys.bitwise_right_shift_(1)
    repeated = tokens[:, 1:] == tokens[:, :-1]
    tokens[:, 1:].masked_fill_(repeated, vocab)
    return tokens, counts


@triton.jit
def _penalized(x, r, f, q, count, BLOCK: tl.constexpr):
    """The penalty steps of the module docstring, in fp32, for entries seen `count` times in
    the output list."""
    seen = count > 0
    x = tl.where(x > 0.0, tl.math.div_rn(x, tl.broadcast_to(r, [BLOCK])), x * r)
    x = tl.where(seen, tl.math.fma(tl.broadcast_to(-f, [BLOCK]), count.to(tl.float32), x), x)
    return tl.where(seen, x - q, x)


@triton.jit
def _row_active(repetition_ptr, frequency_ptr, presence_ptr, row, guard_ptr, B, V, prompt_ptr, P, output_ptr, O,
                check, guarded, CHECK_BLOCK: tl.constexpr):
    """(r, f, q, whether the row is written: a penalty is on, the guard flag is clear and,
    `check`, every check of the batch's values passes; module docstring)."""
    r = tl.load(repetition_ptr + row)
    f = tl.load(frequency_ptr + row)
    q = tl.load(presence_ptr + row)
    clear = True
    if guarded:
        clear = tl.load(guard_ptr) == 0
        if check:
            failed = penalties_failures(prompt_ptr, B * P, output_ptr, B * O, repetition_ptr, frequency_ptr,
                                        presence_ptr, B, V, CHECK_BLOCK)
            record_failed(guard_ptr, failed)
            clear = clear & (failed == 0)
    return r, f, q, ((r != 1.0) | (f != 0.0) | (q != 0.0)) & clear


# The lists and per-row parameters are read per row at unspecialized offsets: their alignment
# gains nothing.
@jit(do_not_specialize=["row_stride", "V", "L", "B", "P", "O", "prompt_ptr", "output_ptr", "repetition_ptr",
                       "frequency_ptr", "presence_ptr", "guard_ptr", "guarded"])
def _penalties_kernel(logits_ptr, row_stride, tokens_ptr, counts_ptr, L, prompt_ptr, P, output_ptr, O,
                      repetition_ptr, frequency_ptr, presence_ptr, V, guard_ptr, B, check, guarded,
                      CHECK_BLOCK: tl.constexpr, BLOCK: tl.constexpr):
    """Sorted path: (tokens, counts) from `first_occurrences`, each id once per row; the
    lists themselves only for the value checks."""
    row = tl.program_id(0).to(tl.int64)
    r, f, q, active = _row_active(repetition_ptr, frequency_ptr, presence_ptr, row, guard_ptr, B, V, prompt_ptr, P,
                                  output_ptr, O, check, guarded, CHECK_BLOCK)
    if active:
        cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        token = tl.load(tokens_ptr + row * L + cols, mask=cols < L, other=V)
        hit = token < V
        count = tl.load(counts_ptr + row * L + cols, mask=hit, other=0)
        ptrs = logits_ptr + row * row_stride + token
        x = _penalized(to_fp32(tl.load(ptrs, mask=hit, other=0.0)), r, f, q, count, BLOCK)
        tl.store(ptrs, to_output_dtype(x, logits_ptr.dtype.element_ty), mask=hit)


@triton.jit
def _list_tile(ids_ptr, start, length, V, BLOCK: tl.constexpr):
    """Entries start .. start + BLOCK - 1 of a list whose first `length` entries count, as
    int32 ids in [0, V), or -1 where ignored (-1, V, anything outside [0, V), beyond `length`).
    The range test is on the ids as given: narrowing first would read an int64 id beyond int32
    as its low 32 bits."""
    k = start + tl.arange(0, BLOCK)
    ids = tl.load(ids_ptr + k, mask=k < length, other=-1)
    return tl.where((ids >= 0) & (ids < V), ids, -1).to(tl.int32)


@triton.jit
def _same(id_j, ids_ptr, start, length, V, BLOCK: tl.constexpr):
    """[BLOCK, BLOCK]: whether id_j[j] is the id of entry start + i of the list (`_list_tile`)."""
    return id_j[:, None] == _list_tile(ids_ptr, start, length, V, BLOCK)[None, :]


@triton.jit
def _differ(id_j, ids_ptr, start, length, V, BLOCK: tl.constexpr):
    """[BLOCK, BLOCK] uint32: id_j[j] ^ the id of entry start + i of the list, 0 iff they match."""
    return (id_j[:, None] ^ _list_tile(ids_ptr, start, length, V, BLOCK)[None, :]).to(tl.uint32, bitcast=True)


@triton.jit
def _history_length(output_row_ptr, O, BLOCK: tl.constexpr):
    """The index of the output list's first -1 (O if none): its entries before it count."""
    first = tl.full([BLOCK], O, dtype=tl.int32)
    for start in range(0, O, BLOCK):
        k = start + tl.arange(0, BLOCK)
        tok = tl.load(output_row_ptr + k, mask=k < O, other=0)
        first = tl.minimum(first, tl.where(tok == -1, k, O))
    return tl.min(first, axis=0)


@jit(do_not_specialize=["row_stride", "V", "P", "O", "B", "prompt_ptr", "output_ptr", "repetition_ptr",
                       "frequency_ptr", "presence_ptr", "guard_ptr", "guarded"])
def _penalties_pairs_kernel(logits_ptr, row_stride, prompt_ptr, P, output_ptr, O, repetition_ptr, frequency_ptr,
                            presence_ptr, V, guard_ptr, B, check, guarded,
                            CHECK_BLOCK: tl.constexpr, BLOCK: tl.constexpr):
    """Short-list path, no host preprocessing. A row's entries are taken in the order output
    list ++ prompt list, in blocks of BLOCK that never straddle the two: program (row, blk)
    takes block blk (the output list's cdiv(O, BLOCK) blocks first) and compares each of its
    entries j with the entries i that can decide it, BLOCK x BLOCK at a time: every output
    entry, and for a prompt j the prompt entries before it. j is written iff no entry before
    it in that order holds its id, with count = the output entries holding it (0 for a prompt
    j that is written)."""
    row = tl.program_id(0).to(tl.int64)
    r, f, q, active = _row_active(repetition_ptr, frequency_ptr, presence_ptr, row, guard_ptr, B, V, prompt_ptr, P,
                                  output_ptr, O, check, guarded, CHECK_BLOCK)
    if active:
        output_row = output_ptr + row * O
        prompt_row = prompt_ptr + row * P
        past_len = _history_length(output_row, O, BLOCK)
        n_out = tl.cdiv(O, BLOCK)
        blk = tl.program_id(1)
        if blk < n_out:
            id_j = _list_tile(output_row, blk * BLOCK, past_len, V, BLOCK)
        else:
            id_j = _list_tile(prompt_row, (blk - n_out) * BLOCK, P, V, BLOCK)
        lane = tl.arange(0, BLOCK)
        before = lane[None, :] < lane[:, None]  # within the block: i before j
        own = id_j[:, None] == id_j[None, :]
        if blk < n_out:  # output entries: the earlier ones decide, the whole output list counts
            hits = tl.zeros([BLOCK, BLOCK], dtype=tl.int32)  # matches summed over the tiles so far
            for t in range(0, blk):
                hits += _same(id_j, output_row, t * BLOCK, past_len, V, BLOCK).to(tl.int32)
            earlier = tl.sum(hits + (own & before).to(tl.int32), axis=1)
            hits += own.to(tl.int32)
            for t in range(blk + 1, n_out):
                hits += _same(id_j, output_row, t * BLOCK, past_len, V, BLOCK).to(tl.int32)
            count = tl.sum(hits, axis=1)
        else:  # prompt entries: every output entry and the earlier prompt entries decide, none counts
            # Whether any entry matched, as the least id_j ^ id_i so far (0 iff one did): two
            # instructions per pair where a count takes four.
            least = tl.full([BLOCK, BLOCK], 0xFFFFFFFF, dtype=tl.uint32)
            for t in range(0, n_out):
                least = tl.minimum(least, _differ(id_j, output_row, t * BLOCK, past_len, V, BLOCK))
            for t in range(n_out, blk):
                least = tl.minimum(least, _differ(id_j, prompt_row, (t - n_out) * BLOCK, P, V, BLOCK))
            earlier = (tl.min(tl.where(own & before, 0, least), axis=1) == 0).to(tl.int32)
            count = tl.zeros_like(earlier)
        write = (id_j >= 0) & (earlier == 0)
        ptrs = logits_ptr + row * row_stride + id_j
        x = _penalized(to_fp32(tl.load(ptrs, mask=write, other=0.0)), r, f, q, count, BLOCK)
        tl.store(ptrs, to_output_dtype(x, logits_ptr.dtype.element_ty), mask=write)


@triton.jit
def _same_id_sum(id_a, n_a, id_b, n_b):
    """Scan step over sorted ids: b's count plus a's where they hold the same id (so the scan's
    sum restarts at every new id; associative because equal ids are adjacent)."""
    return id_b, n_b + tl.where(id_a == id_b, n_a, 0)


@triton.jit
def _row_keys(prompt_row_ptr, P, output_row_ptr, O, V, LENGTH: tl.constexpr):
    """The row's LENGTH keys (module docstring), unsorted: the output list's O entries, then the
    prompt list's P, then 2*V. An output entry counts only before the list's first -1; the range
    test is on the ids as given (narrowing first would read an int64 id beyond int32 as its low
    32 bits)."""
    j = tl.arange(0, LENGTH)
    in_output = j < O
    output_ids = tl.load(output_row_ptr + j, mask=in_output, other=0)
    history = tl.min(tl.where(in_output & (output_ids == -1), j, O), axis=0)
    in_prompt = (j >= O) & (j < O + P)
    prompt_ids = tl.load(prompt_row_ptr + (j - O), mask=in_prompt, other=-1)
    ids = tl.where(in_output, output_ids, prompt_ids)
    counted = (j < history) | in_prompt
    return tl.where(counted & (ids >= 0) & (ids < V), ids.to(tl.int32) * 2 + in_output.to(tl.int32), 2 * V)


# The lists and per-row parameters are read per row at unspecialized offsets: their alignment
# gains nothing.
@jit(do_not_specialize=["row_stride", "V", "P", "O", "B", "prompt_ptr", "output_ptr", "repetition_ptr",
                       "frequency_ptr", "presence_ptr", "guard_ptr", "guarded"])
def _penalties_row_sort_kernel(logits_ptr, row_stride, prompt_ptr, P, output_ptr, O, repetition_ptr, frequency_ptr,
                               presence_ptr, V, guard_ptr, B, check, guarded,
                               CHECK_BLOCK: tl.constexpr, LENGTH: tl.constexpr):
    """Short-list path, one program per row (P + O <= LENGTH, 2 * V + 1 < 2**31): the row's keys
    sorted; each id's output keys counted by a scan over the sorted keys that restarts at
    every new id; the id written at its last key, which holds its whole count."""
    row = tl.program_id(0).to(tl.int64)
    r, f, q, active = _row_active(repetition_ptr, frequency_ptr, presence_ptr, row, guard_ptr, B, V, prompt_ptr, P,
                                  output_ptr, O, check, guarded, CHECK_BLOCK)
    if active:
        keys = tl.sort(_row_keys(prompt_ptr + row * P, P, output_ptr + row * O, O, V, LENGTH))
        token = keys >> 1
        _, count = tl.associative_scan((token, keys & 1), 0, _same_id_sum)
        j = tl.arange(0, LENGTH)
        last = (j == LENGTH - 1) | (tl.gather(token, tl.minimum(j + 1, LENGTH - 1), 0) != token)
        write = last & (token < V)
        ptrs = logits_ptr + row * row_stride + token
        x = _penalized(to_fp32(tl.load(ptrs, mask=write, other=0.0)), r, f, q, count, LENGTH)
        tl.store(ptrs, to_output_dtype(x, logits_ptr.dtype.element_ty), mask=write)


def apply_penalties(logits: torch.Tensor, *, prompt_token_ids: torch.Tensor, output_token_ids: torch.Tensor,
                    repetition_penalty: torch.Tensor, frequency_penalty: torch.Tensor,
                    presence_penalty: torch.Tensor, in_kernel_max_length: int | None = None,
                    pairs_max_work: int | None = None) -> torch.Tensor:
    """Apply the penalties to `logits` in place (module docstring) and return it.
    `in_kernel_max_length` (an int >= 0; None: IN_KERNEL_MAX_LENGTH of the device) is the longest
    list (P + O) handled in the kernel (at most ROW_SORT_MOST_KEYS, where V < 2**30), and
    `pairs_max_work` (an int >= 0; None: PAIRS_MAX_WORK of the device) the most B * (P + O)**2
    compares of such lists that take the pair kernel instead of the row sort. They pick the
    path only: every path gives the same bits."""
    for name, value in (("in_kernel_max_length", in_kernel_max_length), ("pairs_max_work", pairs_max_work)):
        if value is not None and (not isinstance(value, int) or value < 0):
            raise ValueError(f"{name} must be None or an int >= 0; got {value!r}")
    guard = check_penalties(logits, prompt_token_ids, output_token_ids, repetition_penalty, frequency_penalty,
                            presence_penalty)
    ids = prompt_token_ids.numel() + output_token_ids.numel()
    flag = guard.settle(in_kernel=logits.numel() > 0 and 0 < ids <= INLINE_CHECK_IDS[device_kind(logits)])
    return launch_penalties(logits, prompt_token_ids, output_token_ids, repetition_penalty, frequency_penalty,
                            presence_penalty, flag, guard.on_device, in_kernel_max_length, pairs_max_work)


def launch_penalties(logits: torch.Tensor, prompt_token_ids: torch.Tensor, output_token_ids: torch.Tensor,
                     repetition_penalty: torch.Tensor, frequency_penalty: torch.Tensor,
                     presence_penalty: torch.Tensor, flag: torch.Tensor | None, check: bool,
                     in_kernel_max_length: int | None = None, pairs_max_work: int | None = None) -> torch.Tensor:
    """`apply_penalties`'s launch, for arguments that passed `check_penalties` (and checked
    `in_kernel_max_length` and `pairs_max_work`): under the guard flag `flag` (None: unguarded);
    `check`: the kernel makes the call's value checks."""
    batch, vocab = logits.shape
    prompt_len, output_len = prompt_token_ids.size(1), output_token_ids.size(1)
    length = prompt_len + output_len
    kind = device_kind(logits)
    if logits.numel() == 0 or length == 0:
        return logits
    check_launchable(_penalties_kernel, logits)
    # An empty list is passed as it is (never read): its pointer keeps the list's dtype, so an
    # empty list adds no specialization.
    lists = (prompt_token_ids.contiguous(), prompt_len, output_token_ids.contiguous(), output_len)
    # The guard is a runtime bool, and without a flag an int32 view of repetition_penalty stands
    # for it (never read): a guarded and an unguarded call share a compiled kernel.
    params = (repetition_penalty, frequency_penalty, presence_penalty, vocab,
              guard_pointer(flag, repetition_penalty), batch, check, flag is not None)
    checks = dict(CHECK_BLOCK=GUARD_BLOCK[kind])
    limit = IN_KERNEL_MAX_LENGTH[kind] if in_kernel_max_length is None else in_kernel_max_length
    pairs_work = PAIRS_MAX_WORK[kind] if pairs_max_work is None else pairs_max_work
    # The interpreter computes with numpy, which warns when l / r or l * r overflows to
    # +-inf (or the fp16 store does): that is the specified result, not an error.
    quiet = np.errstate(over="ignore") if is_interpreted(_penalties_kernel) else contextlib.nullcontext()
    with quiet:
        in_kernel = length <= min(limit, ROW_SORT_MOST_KEYS) and int32_keys(vocab)
        if in_kernel and batch * length**2 <= pairs_work:
            block, warps = PAIR_LAUNCH[kind]
            _penalties_pairs_kernel[(batch, cdiv(output_len, block) + cdiv(prompt_len, block))](
                logits, logits.stride(0), *lists, *params, **checks, BLOCK=block, num_warps=warps)
        elif in_kernel:
            keys, warps = row_sort_launch(length, kind)
            _penalties_row_sort_kernel[(batch,)](logits, logits.stride(0), *lists, *params, **checks, LENGTH=keys,
                                                 num_warps=warps)
        else:
            tokens, counts = first_occurrences(prompt_token_ids, output_token_ids, vocab)
            block = BLOCK[kind]
            _penalties_kernel[(batch, cdiv(length, block))](
                logits, logits.stride(0), tokens, counts, length, *lists, *params, **checks, BLOCK=block)
    return logits
