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

Design: no [B, V] scratch (no counts, no masks, no fp32 copy). On the host, each row's
entries become keys 2*id (prompt) and 2*id + 1 (output), ignored entries 2*V; the keys are
sorted per row, torch.searchsorted counts each key's output occurrences (keys equal to
2*id + 1), and every key but the first of its id is replaced by the ignored id V. The
kernel (grid B x cdiv(P + O, BLOCK)) then updates the logit of each remaining id: every id
is updated exactly once, so programs never race. Scratch: a few [B, P + O] int tensors, at
most SCRATCH_BYTES_PER_ID bytes per list entry (sort values and indices, searchsorted
results, the device sort's workspace).
"""

import contextlib

import numpy as np
import torch
import triton
import triton.language as tl

from samplecheck.kernels.rounding import to_fp32, to_output_dtype
from samplecheck.kernels.runtime import check_launchable, is_interpreted
from samplecheck.kernels.guard import FLOAT32_MAX, FLOAT32_MAX_JIT, ValueGuard, list_has_bad_id
from samplecheck.kernels.validation import (check_id_layout, check_logits, check_row_param, history, range_describer,
                                            token_ids_describer)

# List entries per program (the result does not depend on it). The interpreter pays per
# program, so the CPU block holds a drawn row's lists whole; the full-size regression
# example's lists span several blocks.
BLOCK = {"cuda": 256, "cpu": 128}
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


@triton.jit(do_not_specialize=["V", "P", "O"])
def _penalties_guard_kernel(flag_ptr, first, V, prompt_ptr, P, output_ptr, O, repetition_ptr, frequency_ptr,
                            presence_ptr, BLOCK: tl.constexpr):
    """One program per row: its two id lists (ids in [0, V), -1 or V) and its three
    penalties; the failed checks' bits (from 1 << first, in check_penalties' order) OR-ed
    into the flag."""
    row = tl.program_id(0).to(tl.int64)
    r = tl.load(repetition_ptr + row)
    f = tl.load(frequency_ptr + row)
    q = tl.load(presence_ptr + row)
    failed = tl.zeros([], dtype=tl.int32)
    failed |= tl.where(list_has_bad_id(prompt_ptr + row * P, P, V, V, BLOCK), 1, 0)
    failed |= tl.where(list_has_bad_id(output_ptr + row * O, O, V, V, BLOCK), 2, 0)
    failed |= tl.where((r > 0.0) & (r <= FLOAT32_MAX_JIT), 0, 4)
    failed |= tl.where(tl.abs(f) <= 2.0, 0, 8)
    failed |= tl.where(tl.abs(q) <= 2.0, 0, 16)
    if failed != 0:
        tl.atomic_or(flag_ptr, failed << first)


def _launch_guard(flag, first, vocab, prompt, output, repetition, frequency, presence) -> None:
    """The fused device check of `check_penalties`."""
    batch = prompt.size(0)
    if batch == 0:
        return
    _penalties_guard_kernel[(batch,)](  # an empty list passes the flag as a placeholder (never read)
        flag, first, vocab, prompt.contiguous() if prompt.size(1) else flag, prompt.size(1),
        output.contiguous() if output.size(1) else flag, output.size(1), repetition, frequency, presence,
        BLOCK=GUARD_BLOCK[flag.device.type])


def sorted_keys(prompt_token_ids: torch.Tensor, output_token_ids: torch.Tensor, vocab: int) -> torch.Tensor:
    """[B, P + O] per row ascending: 2*id for prompt entries, 2*id + 1 for output entries,
    2*V for ignored entries (-1, V, anything outside [0, V), and the output entries from
    the row's first -1 on), which sort after every real id."""
    dtype = torch.int32 if 2 * vocab + 1 < 2**31 else torch.int64
    keys = torch.cat((prompt_token_ids.to(dtype) * 2, history(output_token_ids).to(dtype) * 2 + 1), dim=1)
    keys.masked_fill_((keys < 0) | (keys >= 2 * vocab), 2 * vocab)
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


@triton.jit(do_not_specialize=["row_stride", "V", "L"])
def _penalties_kernel(logits_ptr, row_stride, tokens_ptr, counts_ptr, L, repetition_ptr, frequency_ptr,
                      presence_ptr, V, guard_ptr, GUARDED: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    r = tl.load(repetition_ptr + row)
    f = tl.load(frequency_ptr + row)
    q = tl.load(presence_ptr + row)
    clear = True
    if GUARDED:
        clear = tl.load(guard_ptr) == 0
    if ((r != 1.0) | (f != 0.0) | (q != 0.0)) & clear:
        cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
        token = tl.load(tokens_ptr + row * L + cols, mask=cols < L, other=V)
        hit = token < V
        count = tl.load(counts_ptr + row * L + cols, mask=hit, other=0)
        seen = count > 0
        ptrs = logits_ptr + row * row_stride + token
        x = to_fp32(tl.load(ptrs, mask=hit, other=0.0))
        x = tl.where(x > 0.0, tl.math.div_rn(x, tl.broadcast_to(r, [BLOCK])), x * r)
        x = tl.where(seen, tl.math.fma(tl.broadcast_to(-f, [BLOCK]), count.to(tl.float32), x), x)
        x = tl.where(seen, x - q, x)
        tl.store(ptrs, to_output_dtype(x, logits_ptr.dtype.element_ty), mask=hit)


def apply_penalties(logits: torch.Tensor, *, prompt_token_ids: torch.Tensor, output_token_ids: torch.Tensor,
                    repetition_penalty: torch.Tensor, frequency_penalty: torch.Tensor,
                    presence_penalty: torch.Tensor) -> torch.Tensor:
    """Apply the penalties to `logits` in place (module docstring) and return it."""
    flag = check_penalties(logits, prompt_token_ids, output_token_ids, repetition_penalty, frequency_penalty,
                           presence_penalty).settle()
    batch, vocab = logits.shape
    length = prompt_token_ids.size(1) + output_token_ids.size(1)
    if batch == 0 or vocab == 0 or length == 0:
        return logits
    tokens, counts = first_occurrences(prompt_token_ids, output_token_ids, vocab)
    check_launchable(_penalties_kernel, logits)
    block = BLOCK[logits.device.type]
    # The interpreter computes with numpy, which warns when l / r or l * r overflows to
    # +-inf (or the fp16 store does): that is the specified result, not an error.
    quiet = np.errstate(over="ignore") if is_interpreted(_penalties_kernel) else contextlib.nullcontext()
    with quiet:
        _penalties_kernel[(batch, triton.cdiv(length, block))](
            logits, logits.stride(0), tokens, counts, length, repetition_penalty, frequency_penalty,
            presence_penalty, vocab, flag, GUARDED=flag is not None, BLOCK=block)
    return logits
