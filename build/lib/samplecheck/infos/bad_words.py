"""Registry record for multi-token bad words (ban a word's last id after its prefix, in place).

Matches must actually happen, so each row draws its past and its words from a small
alphabet of ids (2 to 4 of them, where the vocab allows), and about half of the words are built to match the end
of the past; the others are near misses (one prefix token differs; the prefix is one token
longer than the past; the prefix matches at another offset), single tokens, random words,
duplicates and absent (all -1) words. Ids after the past's first -1 ("junk") and extra -1
padding (words, tokens per word, past length) vary the tensor shapes.
"""

import dataclasses
from dataclasses import dataclass

import torch
from hypothesis import strategies as st

from samplecheck.oracles.bad_words import bad_words_expected, bad_words_reference
from samplecheck.judging import checks
from samplecheck.judging.laws import exact_output_law
from samplecheck.inputs.layouts import LAYOUTS
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.harness.registry import ALL_DTYPES, Backend, ErrorInput, KernelInfo, RegressionExample, register, tensor_on, zeros_on
from samplecheck.inputs.strategies import Budget, expand_pool, logits_recipes

PAD = -1
MAX_POOL = 4
MAX_PAST = 8
MAX_WORDS = 6
MAX_RANDOM_WORD = 4
ID_DTYPES = (torch.int32, torch.int64)
NEG_INF_FRACTIONS = (0.0, 0.0, 0.0, 0.5)


@dataclass(frozen=True)
class BadWordsRow:
    """One row's parameters: its past, ids stored after the -1 that ends it (ignored by the
    rule), and its words (an empty word is stored as all -1)."""

    past: tuple[int, ...]
    junk: tuple[int, ...]
    words: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class BadWordsCase:
    """Logits recipe plus a pool of rows (row r takes rows[r % len(rows)]), the -1 padding
    beyond the longest entry in each dimension, and the id tensors' dtypes."""

    logits: LogitsRecipe
    rows: tuple[BadWordsRow, ...]
    extra_words: int = 0
    extra_tokens: int = 0
    extra_past: int = 0
    words_dtype: torch.dtype = torch.int64
    past_dtype: torch.dtype = torch.int64


def token_ids(vocab: int) -> st.SearchStrategy[int]:
    """An id in [0, V), the first and last ids first."""
    return st.one_of(st.sampled_from((0, vocab - 1)), st.integers(0, vocab - 1))


@st.composite
def words_for(draw, past: tuple[int, ...], alphabet: tuple[int, ...], vocab: int) -> tuple[tuple[int, ...], ...]:
    """Up to MAX_WORDS words against `past`: half built to match its end, the rest near misses
    and other edges."""
    sym = st.sampled_from(alphabet)
    last = st.one_of(sym, token_ids(vocab))
    words: list[tuple[int, ...]] = []
    for _ in range(draw(st.integers(0, MAX_WORDS))):
        kind = "match" if draw(st.booleans()) else draw(st.sampled_from(
            ("near_miss", "too_long", "wrong_offset", "single", "random", "duplicate", "absent")))
        if kind == "near_miss" and past and (len(alphabet) > 1 or vocab > 1):
            n = draw(st.integers(1, len(past)))
            prefix = list(past[len(past) - n:])
            j = draw(st.sampled_from((n - 1, 0)) | st.integers(0, n - 1))  # last and first prefix token first
            others = [a for a in alphabet if a != prefix[j]]
            prefix[j] = draw(st.sampled_from(others) if others else token_ids(vocab).filter(lambda t: t != prefix[j]))
            word = tuple(prefix) + (draw(last),)
        elif kind == "too_long":
            word = (draw(sym),) + past + (draw(last),)
        elif kind == "wrong_offset" and len(past) >= 2:
            n = draw(st.integers(1, len(past) - 1))
            start = draw(st.integers(0, len(past) - n - 1))
            word = past[start:start + n] + (draw(last),)
        elif kind == "single":
            word = (draw(last),)
        elif kind == "random":
            word = tuple(draw(st.lists(sym, min_size=1, max_size=MAX_RANDOM_WORD)))
        elif kind == "duplicate" and words:
            word = draw(st.sampled_from(words))
        elif kind == "absent":
            word = ()
        else:  # match (also the fallback where a kind does not apply)
            n = draw(st.integers(0, len(past)))
            word = past[len(past) - n:] + (draw(last),)
        words.append(word)
    return tuple(words)


@st.composite
def bad_words_rows(draw, vocab: int) -> BadWordsRow:
    # At least two ids where the vocab allows: with one, the start and the end of a past agree.
    alphabet = tuple(draw(st.lists(token_ids(vocab), min_size=min(2, vocab), max_size=4, unique=True)))
    sym = st.sampled_from(alphabet)
    past = tuple(draw(st.lists(sym, max_size=MAX_PAST)))
    junk = tuple(draw(st.one_of(st.just(()), st.lists(sym, min_size=1, max_size=3))))
    return BadWordsRow(past, junk, draw(words_for(past, alphabet, vocab)))


@st.composite
def bad_words_cases(draw, budget: Budget) -> BadWordsCase:
    # Mostly finite rows: a ban on an entry that is already -inf is invisible.
    recipe = draw(logits_recipes(budget))
    recipe = dataclasses.replace(recipe, neg_inf_fraction=draw(st.sampled_from(NEG_INF_FRACTIONS)))
    rows = tuple(draw(st.lists(bad_words_rows(recipe.vocab), min_size=1, max_size=MAX_POOL)))
    pad = st.sampled_from((0, 0, 1, 2))
    return BadWordsCase(recipe, rows, draw(pad), draw(pad), draw(pad),
                        draw(st.sampled_from(ID_DTYPES)), draw(st.sampled_from(ID_DTYPES)))


def _padded(lists: list[list[int]], shape, dtype, device) -> torch.Tensor:
    """Ragged id lists, each right-padded with -1 to shape[-1], as a tensor of `shape` (one
    list per row of a 2-D shape, per word of a 3-D one)."""
    width = shape[-1]
    return torch.tensor([ids + [PAD] * (width - len(ids)) for ids in lists], dtype=dtype).view(shape).to(device)


def bad_words_args(case: BadWordsCase, logits: torch.Tensor) -> dict:
    batch = logits.size(0)
    rows = expand_pool(case.rows, batch)
    stored = [list(row.past) + ([PAD] + list(row.junk) if row.junk else []) for row in rows]
    words = max((len(row.words) for row in rows), default=0) + case.extra_words
    tokens = max((len(w) for row in rows for w in row.words), default=0) + case.extra_tokens
    length = max((len(s) for s in stored), default=0) + case.extra_past
    word_lists = [list(row.words[w]) if w < len(row.words) else [] for row in rows for w in range(words)]
    return {"bad_words": _padded(word_lists, (batch, words, tokens), case.words_dtype, logits.device),
            "output_token_ids": _padded(stored, (batch, length), case.past_dtype, logits.device)}


def bad_words_ref(logits, semantics, tolerance, *, bad_words, output_token_ids):
    return bad_words_reference(logits, bad_words, output_token_ids)


def bad_words_check(original, output, reference, what):
    """Exact: the banned entries are -inf, every other entry is bitwise the input."""
    checks.assert_masked_like(original, output, ~reference.banned, torch.zeros_like(reference.banned), what)


def bad_words_extra_memory(logits, args) -> int:
    """Bytes beyond the inputs, per id entry: validation's bool temporaries (at most 4 live
    at once) and, for a non-contiguous id tensor, its int64 contiguous copy; nothing the
    size of the logits."""
    return (4 + 8) * (args["bad_words"].numel() + args["output_token_ids"].numel())


def _call(logits, bad_words, output_token_ids):
    """make(device) for an ErrorInput: each argument is built on the device."""
    return lambda device: ((logits(device),), {"bad_words": bad_words(device),
                                                "output_token_ids": output_token_ids(device)})


def _full(shape, value, dtype=torch.int64):
    return lambda device: torch.full(shape, value, dtype=dtype, device=device)


_WORDS_OK = tensor_on([[[1, 2, -1]], [[3, -1, -1]]], torch.int64)
_PAST_OK = tensor_on([[1, -1], [0, 4]], torch.int64)
_WORDS_RANGE = r"bad_words must hold token ids in \[0, 8\) or -1 \(padding\)"
_PAST_RANGE = r"output_token_ids must hold token ids in \[0, 8\) or -1 \(padding\)"
BAD_WORDS_ERRORS = (
    ErrorInput("1-D logits", _call(zeros_on(8), _WORDS_OK, _PAST_OK), ValueError, r"logits must be 2-D"),
    ErrorInput("float64 logits", _call(zeros_on(2, 8, dtype=torch.float64), _WORDS_OK, _PAST_OK),
               TypeError, r"logits dtype must be one of float32, bfloat16, float16"),
    ErrorInput("column-strided logits", _call(lambda d: zeros_on(2, 16)(d)[:, ::2], _WORDS_OK, _PAST_OK),
               ValueError, r"column stride 1"),
    # vllm#48824: the banned (last) id of a word is stored at row * stride + id, so an
    # unchecked id >= V writes into the next row or past the buffer.
    ErrorInput("banned id == V", _call(zeros_on(2, 8), tensor_on([[[1, 8]], [[3, -1]]], torch.int64), _PAST_OK),
               ValueError, _WORDS_RANGE + r"; got 8"),
    ErrorInput("single-token word id > V", _call(zeros_on(2, 8), tensor_on([[[-1]], [[100]]], torch.int32), _PAST_OK),
               ValueError, _WORDS_RANGE + r"; got 100"),
    ErrorInput("prefix id == V", _call(zeros_on(2, 8), tensor_on([[[8, 2]], [[3, -1]]], torch.int64), _PAST_OK),
               ValueError, _WORDS_RANGE + r"; got 8"),
    ErrorInput("bad_words id -2", _call(zeros_on(2, 8), tensor_on([[[1, -2]], [[3, -1]]], torch.int64), _PAST_OK),
               ValueError, _WORDS_RANGE + r"; got -2"),
    ErrorInput("id after -1 within a word",
               _call(zeros_on(2, 8), tensor_on([[[1, -1, 2]], [[3, -1, -1]]], torch.int64), _PAST_OK),
               ValueError, r"bad_words must be right-padded per word: no token id after a -1 within a word; "
                           r"got id 2 at \[0, 0, 2\]"),
    ErrorInput("129 words", _call(zeros_on(2, 8), _full((2, 129, 1), -1), _PAST_OK),
               ValueError, r"bad_words must have at most 128 words per row \(dim 1\); got 129"),
    ErrorInput("1025 tokens per word", _call(zeros_on(2, 8), _full((2, 1, 1025), -1), _PAST_OK),
               ValueError, r"bad_words must have at most 1024 tokens per word \(dim 2\); got 1025"),
    ErrorInput("2-D bad_words", _call(zeros_on(2, 8), tensor_on([[1, 2], [3, -1]], torch.int64), _PAST_OK),
               ValueError, r"bad_words must have shape \[batch, n, n\] with batch = 2"),
    ErrorInput("bad_words of wrong batch", _call(zeros_on(2, 8), tensor_on([[[1, 2]]], torch.int64), _PAST_OK),
               ValueError, r"bad_words must have shape \[batch, n, n\] with batch = 2"),
    ErrorInput("float bad_words", _call(zeros_on(2, 8), tensor_on([[[1.0]], [[2.0]]], torch.float32), _PAST_OK),
               TypeError, r"bad_words dtype must be one of int32, int64"),
    ErrorInput("output id == V", _call(zeros_on(2, 8), _WORDS_OK, tensor_on([[1, 8], [0, -1]], torch.int64)),
               ValueError, _PAST_RANGE + r"; got 8"),
    ErrorInput("output id -2 after the past",
               _call(zeros_on(2, 8), _WORDS_OK, tensor_on([[1, -1, -2], [0, -1, -1]], torch.int32)), ValueError, _PAST_RANGE + r"; got -2"),
    ErrorInput("1-D output_token_ids", _call(zeros_on(2, 8), _WORDS_OK, tensor_on([1, 2], torch.int64)),
               ValueError, r"output_token_ids must have shape \[batch, length\] with batch = 2"),
    ErrorInput("output_token_ids of wrong batch",
               _call(zeros_on(2, 8), _WORDS_OK, tensor_on([[1, 2]] * 3, torch.int64)), ValueError, r"output_token_ids must have shape \[batch, length\] with batch = 2"),
    ErrorInput("float output_token_ids", _call(zeros_on(2, 8), _WORDS_OK, tensor_on([[1.0], [2.0]], torch.float32)),
               TypeError, r"output_token_ids dtype must be one of int32, int64"),
)


def _row(past, words, junk=()):
    return BadWordsRow(tuple(past), tuple(junk), tuple(tuple(w) for w in words))


# Every rule edge in one small batch (V = 1019, ids near both ends), in every dtype and layout;
# finite logits, so that every wrong ban shows.
EDGE_ROWS = (
    # Past 5 3 6 4: a two-token match at the end (bans 7), a prefix matching the start of the
    # past only (5 3 -> 9) and one matching in the middle (3 6 -> 15), the whole past as the
    # prefix (bans 1018), a prefix one longer than the past (skipped), a near miss
    # (6 3 -> 2), a single-token word (bans 0) and its duplicate, an absent word between them.
    _row((5, 3, 6, 4), ((6, 4, 7), (5, 3, 9), (3, 6, 15), (5, 3, 6, 4, 1018), (1, 5, 3, 6, 4, 11), (6, 3, 2),
                        (0,), (), (0,)),
         junk=(4, 4)),
    # Empty past: only single-token words apply; the two-token word is skipped.
    _row((), ((4,), (4, 6), (1018,))),
    # Past ends with ids that also appear after its -1 ("junk" 8 8 is not part of the past):
    # 2 8 -> 12 does not match, 1 2 -> 13 does; overlapping words 2 -> 14 and 1 2 -> 14.
    _row((1, 2), ((2, 8, 12), (1, 2, 13), (2, 14), (1, 2, 14)), junk=(8, 8)),
    # No words at all.
    _row((7, 7, 7), ()),
)
# Full-size rows: opt-125m's vocab 50272 padded to 50304 (a strided view), batch 8, words
# banning the first and the last id of the row.
OPT125M = LogitsRecipe(batch=8, vocab=50272, family="randn", scale=1.0, seed=48824)
BAD_WORDS_REGRESSIONS = (
    RegressionExample("edges: suffix vs start match, whole past, too long, near miss, junk after -1",
                      BadWordsCase(LogitsRecipe(batch=5, vocab=1019, family="randn", scale=3.0, seed=7), EDGE_ROWS,
                                   extra_words=1, extra_tokens=1, extra_past=2, words_dtype=torch.int32),
                      dtypes=ALL_DTYPES, layouts=LAYOUTS),
    RegressionExample("full-size padded vocab (opt-125m 50272 -> 50304), ids 0 and V - 1",
                      BadWordsCase(OPT125M, (_row((50271, 17), ((17, 50271), (50271, 17, 0), (50271,))),
                                             _row((0,), ((0, 0), (50271, 0, 5)), junk=(50271,)))),
                      dtypes=(torch.bfloat16, torch.float32), layouts=("padded64",)),
)

BAD_WORDS = register(KernelInfo(
    name="bad_words",
    backends=(Backend("triton", "samplecheck.kernels.bad_words:apply_bad_words"),),
    cases=bad_words_cases,
    make_args=bad_words_args,
    reference=bad_words_ref,
    check=bad_words_check,
    dtypes=ALL_DTYPES,
    # Exact: only -inf is stored and the rule compares ids.
    tolerance={torch.float32: 0, torch.bfloat16: 0, torch.float16: 0},
    semantics={"rule": "ban tn iff the past ends with t0 .. tn-1 (vLLM)", "single_token": "always banned",
               "too_long": "a word with more prefix tokens than the past is skipped",
               "past": "output ids before the first -1; later entries ignored",
               "caps": "128 words, 1024 tokens per word", "banned_id": "validated in [0, V) (vllm#48824)"},
    error_inputs=BAD_WORDS_ERRORS,
    examples=BAD_WORDS_REGRESSIONS,
    law=lambda original, reference, **_: exact_output_law(bad_words_expected(original, reference)),
    extra_memory=bad_words_extra_memory,
))
