"""Multi-token bad words, in place: the Triton kernel.

Contract (the oracle `samplecheck.oracles.bad_words` states the semantics in full):
- `logits` [B, V] fp32/bf16/fp16, any row stride, column stride 1; the kernel never reads
  them, it only stores -inf at banned ids (so no rounding is involved).
- `bad_words` [B, W, T] int32/int64 on the logits' device: word w of row r is
  bad_words[r, w] up to its first -1 (right-padded with -1; an all -1 word is absent, and
  no id may follow a -1 within a word). W <= 128 words, T <= 1024 tokens per word. Ids in
  [0, V): this host check is the bounds check of the banned id (vLLM #48824); the id
  range and the padding rule are value checks (`values_checked`). Unchecked, the result
  for such words is unspecified, but the kernel never stores outside [0, V).
- `output_token_ids` [B, O] int32/int64 on the logits' device: the row's generated tokens,
  right-padded with -1. The past is the prefix before the first -1 (all O entries when
  there is none); whatever follows the first -1 is unknown and ignored (it must still be
  an id in [0, V) or -1). This is the one history rule of every op (penalties too).
- Rule, per row and word [t0 .. tn]: l[tn] becomes -inf iff the last n tokens of the past
  equal [t0 .. tn-1]. A single-token word is always banned; a word with n > len(past) is
  skipped. Several words may ban the same id (idempotent). Every other entry is bitwise
  unchanged; -inf entries stay -inf, NaN and +inf entries are kept unless banned.
- In place: returns `logits`. Only banned ids of the [B, V] view are written, never a
  row-stride gap.
- Memory: nothing the size of the logits; validation's bool temporaries over the id
  tensors and, for non-contiguous id tensors, contiguous copies of them.

The kernel flattens the words to B * W (row, word) pairs; each program takes BLOCK_P pairs,
counts each word's prefix length in steps of BLOCK_T tokens, scans each word's row of the
past for its length (steps of BLOCK_PAST entries; W words of a row read the same past, from
cache), compares each word's prefix with the end of the past (steps of BLOCK_T), and stores
-inf at the banned ids of the matching words (a scatter store; duplicate ids store the same
value). The blocks come from a short fixed menu per device (see `TILE`), so a few compiled
variants serve every batch, word count and length. The small token-id tensors are made
contiguous; the logits are used as given and never read.

Value checks (deferred or captured mode, `samplecheck.kernels.validation`): when the batch's
words and pasts hold at most INLINE_CHECK_IDS ids, every program checks them all itself
(`bad_words_failures` over the whole batch, flat), stores nothing where a check fails, and
program 0 records the failed checks in the call's guard flag: one launch. Larger calls launch
`_bad_words_guard_kernel` (one program per row) first.
"""

import torch
import triton
import triton.language as tl

from samplecheck.kernels.launching import jit
from samplecheck.kernels.runtime import cdiv, check_launchable, device_kind, first_fitting
from samplecheck.kernels.guard import INLINE_CHECK_IDS, ValueGuard, list_has_bad_id, record_failed
from samplecheck.kernels.validation import PAD_ID, check_id_layout, check_logits, token_ids_describer

MAX_WORDS = 128
MAX_WORD_TOKENS = 1024
# Launch menu per device: BLOCK_T (tokens of each word per step) is the first of WORD_BLOCKS
# that holds the words, else the last; BLOCK_P ((row, word) pairs per program) the first of
# PAIR_BLOCKS that holds the pairs, else the last, at most TILE // BLOCK_T; BLOCK_PAST (past
# entries per scan step) is TILE // BLOCK_P. Few pairs thus scan in few wide steps. The
# result does not depend on them. The interpreter pays per program and per operation, so a
# CPU test batch runs as one program, while its steps are narrow enough that the suite's
# longer words and pasts (up to ~12 entries) take two.
TILE = {"cuda": 4096, "cpu": 2048}
WORD_BLOCKS = {"cuda": (16, 256), "cpu": (8,)}
PAIR_BLOCKS = {"cuda": (1, 8, 64), "cpu": (256,)}
GUARD_BLOCK = {"cuda": 256, "cpu": 64}  # ids per step of the fused value check


def _after_padding(bad_words: torch.Tensor) -> torch.Tensor:
    """bool [B, W, T - 1]: True at an id that follows a -1 within its word."""
    return (bad_words[..., 1:] != PAD_ID) & (bad_words[..., :-1] == PAD_ID)


def check_bad_words(logits: torch.Tensor, bad_words: torch.Tensor, output_token_ids: torch.Tensor,
                    guard: ValueGuard | None = None) -> ValueGuard:
    """bad_words: [batch, words <= 128, tokens <= 1024] ids in [0, V) or -1, each word
    left-aligned (no id after a -1); output_token_ids: [batch, length] ids in [0, V) or -1.
    Ids and the padding rule are value checks, added to `guard` (a new one if None) as one
    fused device check."""
    check_logits(logits)
    guard = ValueGuard(logits.device, "apply_bad_words") if guard is None else guard
    check_id_layout("bad_words", bad_words, logits, dims=3)
    if bad_words.size(1) > MAX_WORDS:
        raise ValueError(f"bad_words must have at most {MAX_WORDS} words per row (dim 1); got {bad_words.size(1)}")
    if bad_words.size(2) > MAX_WORD_TOKENS:
        raise ValueError(
            f"bad_words must have at most {MAX_WORD_TOKENS} tokens per word (dim 2); got {bad_words.size(2)}")
    check_id_layout("output_token_ids", output_token_ids, logits)
    vocab = logits.size(1)

    def describe_padding() -> None:
        after_pad = _after_padding(bad_words)
        if after_pad.numel() and bool(after_pad.any()):
            r, w, t = (int(i) for i in after_pad.nonzero()[0])
            raise ValueError(f"bad_words must be right-padded per word: no token id after a -1 within a word; "
                             f"got id {int(bad_words[r, w, t + 1])} at [{r}, {w}, {t + 1}]")
    guard.fused([("bad_words", token_ids_describer("bad_words", bad_words, vocab)),
                 ("output_token_ids", token_ids_describer("output_token_ids", output_token_ids, vocab)),
                 ("bad_words", describe_padding)],
                lambda flag, first: _launch_guard(flag, first, vocab, bad_words, output_token_ids))
    return guard


@triton.jit
def bad_words_failures(words_ptr, L, T, past_ptr, O, V, BLOCK: tl.constexpr):
    """The failed checks of consecutive rows (pointers at the first; L: their words' entries,
    T per word; O: their past entries), as bits in check_bad_words' order: word ids and past
    ids in [0, V) or -1; no id after a -1 within a word."""
    failed = tl.where(list_has_bad_id(words_ptr, L, V, -1, BLOCK), 1, 0)
    failed |= tl.where(list_has_bad_id(past_ptr, O, V, -1, BLOCK), 2, 0)
    after_pad = tl.zeros([], dtype=tl.int32)
    for start in range(0, L, BLOCK):
        k = start + tl.arange(0, BLOCK)
        pair = (k + 1 < L) & ((k + 1) % T != 0)  # k and k + 1 in the same word
        here = tl.load(words_ptr + k, mask=pair, other=0)
        after = tl.load(words_ptr + k + 1, mask=pair, other=0)
        after_pad += tl.sum((pair & (here == -1) & (after != -1)).to(tl.int32), axis=0)
    return failed | tl.where(after_pad > 0, 4, 0)


@jit(do_not_specialize=["flag_ptr", "first", "V", "words_ptr", "L", "T", "past_ptr", "O"])
def _bad_words_guard_kernel(flag_ptr, first, V, words_ptr, L, T, past_ptr, O, BLOCK: tl.constexpr):
    """One program per row (L = words * T entries, O past entries): its failed checks OR-ed
    into the flag from bit `first`."""
    row = tl.program_id(0).to(tl.int64)
    failed = bad_words_failures(words_ptr + row * L, L, T, past_ptr + row * O, O, V, BLOCK)
    if failed != 0:
        tl.atomic_or(flag_ptr, failed << first)


def _launch_guard(flag, first, vocab, bad_words, output_token_ids) -> None:
    """The fused device check of `check_bad_words` (an empty list is passed as it is: never read)."""
    batch, words, tokens = bad_words.shape
    if batch == 0:
        return
    _bad_words_guard_kernel[(batch,)](
        flag, first, vocab, bad_words.contiguous(), words * tokens, max(tokens, 1),
        output_token_ids.contiguous(), output_token_ids.size(1),
        BLOCK=GUARD_BLOCK[device_kind(flag)])


@jit(do_not_specialize=["row_stride", "V", "words_ptr", "W", "T", "past_ptr", "O", "PAIRS", "B", "guard_ptr"])
def _bad_words_kernel(logits_ptr, row_stride, V, words_ptr, W, T, past_ptr, O, PAIRS, B, guard_ptr, check,
                      GUARDED: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_T: tl.constexpr,
                      BLOCK_PAST: tl.constexpr, CHECK_BLOCK: tl.constexpr):
    # BLOCK_P (row, word) pairs of the flattened [B * W] word list, one word per tile row.
    pair = tl.program_id(0).to(tl.int64) * BLOCK_P + tl.arange(0, BLOCK_P)
    in_batch = pair < PAIRS
    row = pair // W
    word_ptr = words_ptr + pair[:, None] * T
    lanes = tl.arange(0, BLOCK_T)[None, :]
    # Prefix lengths n: ids before the first -1, minus the banned one (validation: no id
    # follows a -1 within a word); -1 for absent words.
    n = tl.full([BLOCK_P], -1, tl.int32)
    for start in range(0, T, BLOCK_T):
        t = start + lanes
        words = tl.load(word_ptr + t, mask=in_batch[:, None] & (t < T), other=-1)
        n += tl.sum((words != -1).to(tl.int32), axis=1)
    # Past lengths: index of the first -1 in the row's output ids, O when there is none.
    row_past = past_ptr + row[:, None] * O
    past_len = tl.full([BLOCK_P], O, tl.int32)
    scan = tl.arange(0, BLOCK_PAST)[None, :]
    for start in range(0, O, BLOCK_PAST):
        idx = start + scan
        tok = tl.load(row_past + idx, mask=in_batch[:, None] & (idx < O), other=0)
        past_len = tl.minimum(past_len, tl.min(tl.where((tok == -1) & (idx < O), idx, O), axis=1))
    # Each word's prefix word[0 .. n-1] against past[past_len - n .. past_len - 1].
    applies = in_batch & (n >= 0) & (n <= past_len)
    mismatches = tl.zeros([BLOCK_P], tl.int32)
    for start in range(0, T, BLOCK_T):
        t = start + lanes
        in_prefix = (t < n[:, None]) & applies[:, None]
        words = tl.load(word_ptr + t, mask=in_prefix, other=-1).to(tl.int64)
        past = tl.load(row_past + (past_len - n)[:, None] + t, mask=in_prefix, other=0).to(tl.int64)
        mismatches += tl.sum((in_prefix & (words != past)).to(tl.int32), axis=1)
    match = applies & (mismatches == 0)
    if GUARDED:
        match = match & (tl.load(guard_ptr + tl.zeros([BLOCK_P], tl.int32)) == 0)
        if check:
            failed = bad_words_failures(words_ptr, B * W * T, T, past_ptr, B * O, V, CHECK_BLOCK)
            record_failed(guard_ptr, failed)
            # Broadcast before the &: the interpreter rejects a load mask built from a scalar bool.
            match = match & ((failed + tl.zeros([BLOCK_P], tl.int32)) == 0)
    banned = tl.load(words_ptr + pair * T + n, mask=match, other=0).to(tl.int64)
    neg_inf = tl.full([BLOCK_P], float("-inf"), tl.float32).to(logits_ptr.dtype.element_ty)
    # Unchecked calls may carry ids outside [0, V): never stored.
    tl.store(logits_ptr + row * row_stride + banned, neg_inf, mask=match & (banned >= 0) & (banned < V))


def apply_bad_words(logits: torch.Tensor, *, bad_words: torch.Tensor, output_token_ids: torch.Tensor) -> torch.Tensor:
    """Set every banned id of `logits` to -inf in place (module docstring) and return it."""
    guard = check_bad_words(logits, bad_words, output_token_ids)
    batch, words, tokens = bad_words.shape
    launched = logits.numel() > 0 and words > 0 and tokens > 0
    ids = batch * (words * tokens + output_token_ids.size(1))
    flag = guard.settle(in_kernel=launched and ids <= INLINE_CHECK_IDS[device_kind(logits)])
    return launch_bad_words(logits, bad_words, output_token_ids, flag, guard.on_device)


def launch_bad_words(logits: torch.Tensor, bad_words: torch.Tensor, output_token_ids: torch.Tensor,
                     flag: torch.Tensor | None, check: bool) -> torch.Tensor:
    """`apply_bad_words`'s launch, for arguments that passed `check_bad_words`: under the guard
    flag `flag` (None: unguarded); `check`: the kernel makes the call's value checks."""
    batch, vocab = logits.shape
    _, words, tokens = bad_words.shape
    kind = device_kind(logits)
    if logits.numel() == 0 or words == 0 or tokens == 0:
        return logits
    check_launchable(_bad_words_kernel, logits)
    pairs = batch * words
    if output_token_ids.size(1) == 0:  # no pasts: one -1 per row, so no kernel argument is empty
        output_token_ids = torch.full((batch, 1), PAD_ID, dtype=output_token_ids.dtype, device=logits.device)
    block_t = first_fitting(WORD_BLOCKS[kind], tokens)
    block_p = min(first_fitting(PAIR_BLOCKS[kind], pairs), TILE[kind] // block_t)
    _bad_words_kernel[(cdiv(pairs, block_p),)](
        logits, logits.stride(0), vocab, bad_words.contiguous(), words, tokens,
        output_token_ids.contiguous(), output_token_ids.size(1), pairs, batch, flag, check,
        GUARDED=flag is not None, BLOCK_P=block_p, BLOCK_T=block_t, BLOCK_PAST=TILE[kind] // block_p,
        CHECK_BLOCK=GUARD_BLOCK[kind])
    return logits
