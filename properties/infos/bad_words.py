"""Registry record for multi-token bad words (ban a word's last id after its prefix, in place).

Matches must actually happen, so each row draws its past and its words from a small
alphabet of ids, and about half of the words are built to match the end of the past; the
others are near misses and other edges (`samplecheck.families.token_lists.words_for`).
"""

import torch

from samplecheck.families.errors import dtype_message, floats, full, id_ends, id_range, ids, logits_errors, rejected
from samplecheck.families.token_lists import BadWordsCase, bad_words_args, bad_words_cases, bad_words_row
from samplecheck.families.values import ValueInfo, check_banned
from samplecheck.inputs.far_lists import IdList, IdLists
from samplecheck.inputs.off_encodings import BAD_WORDS_OFF
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.kernels.bad_words import MAX_WORD_TOKENS, MAX_WORDS
from samplecheck.oracles.bad_words import bad_words_expected, bad_words_reference
from samplecheck.registry.layouts import LAYOUTS
from samplecheck.registry.matrix import register
from samplecheck.registry.records import ALL_DTYPES, Backend, RegressionExample

VALID = {"bad_words": ids([[[1, 2, -1]], [[3, -1, -1]]]), "output_token_ids": ids([[1, -1], [0, 4]])}
WORDS_RANGE = id_range("bad_words")
PAST_RANGE = id_range("output_token_ids")
PAST_SHAPE = r"output_token_ids must have shape \[batch, length\] with batch = 2"
BAD_WORDS_ERRORS = (
    logits_errors(**VALID)
    # vllm#48824: the banned (last) id of a word is stored at row * stride + id, so an
    # unchecked id >= V writes into the next row or past the buffer.
    + id_ends("bad_words", WORDS_RANGE, lambda bad: ids([[[1, 2]], [[3, bad]]]), **VALID)
    + rejected("bad_words", ValueError, WORDS_RANGE + r"; got 8", {
        "banned id == V": ids([[[1, 8]], [[3, -1]]]), "prefix id == V": ids([[[8, 2]], [[3, -1]]])}, **VALID)
    + rejected("bad_words", ValueError, WORDS_RANGE + r"; got 100", {
        "single-token word id > V": ids([[[-1]], [[100]]], torch.int32)}, **VALID)
    + rejected("bad_words", ValueError, r"bad_words must be right-padded per word: no token id after a -1 within a "
               r"word; got id 2 at \[0, 0, 2\]", {"id after -1 within a word": ids([[[1, -1, 2]], [[3, -1, -1]]])},
               **VALID)
    + rejected("bad_words", ValueError, r"bad_words must have at most 128 words per row \(dim 1\); got 129", {
        "129 words": full((2, 129, 1), -1)}, **VALID)
    + rejected("bad_words", ValueError, r"bad_words must have at most 1024 tokens per word \(dim 2\); got 1025", {
        "1025 tokens per word": full((2, 1, 1025), -1)}, **VALID)
    + rejected("bad_words", ValueError, r"bad_words must have shape \[batch, n, n\] with batch = 2", {
        "2-D bad_words": ids([[1, 2], [3, -1]]), "bad_words of wrong batch": ids([[[1, 2]]])}, **VALID)
    + rejected("bad_words", TypeError, dtype_message("bad_words", "int32, int64"), {
        "float bad_words": floats([[[1.0]], [[2.0]]])}, **VALID)
    + id_ends("output_token_ids", PAST_RANGE, lambda bad: ids([[1, -1], [0, bad]]), **VALID)
    + rejected("output_token_ids", ValueError, PAST_RANGE + r"; got -2", {
        "output id -2 after the past": ids([[1, -1, -2], [0, -1, -1]], torch.int32)}, **VALID)
    + rejected("output_token_ids", ValueError, PAST_SHAPE, {
        "1-D output_token_ids": ids([1, 2]), "output_token_ids of wrong batch": ids([[1, 2]] * 3)}, **VALID)
    + rejected("output_token_ids", TypeError, dtype_message("output_token_ids", "int32, int64"), {
        "float output_token_ids": floats([[1.0], [2.0]])}, **VALID)
)


# Every rule edge in one small batch (V = 1019, ids near both ends), in every dtype and layout;
# finite logits, so that every wrong ban shows.
EDGE_ROWS = (
    # Past 5 3 6 4: a two-token match at the end (bans 7), a prefix matching the start of the
    # past only (5 3 -> 9) and one matching in the middle (3 6 -> 15), the whole past as the
    # prefix (bans 1018), a prefix one longer than the past (skipped), a near miss
    # (6 3 -> 2), a single-token word (bans 0) and its duplicate, an absent word between them.
    bad_words_row((5, 3, 6, 4), ((6, 4, 7), (5, 3, 9), (3, 6, 15), (5, 3, 6, 4, 1018), (1, 5, 3, 6, 4, 11), (6, 3, 2),
                        (0,), (), (0,)),
         junk=(4, 4)),
    # Empty past: only single-token words apply; the two-token word is skipped.
    bad_words_row((), ((4,), (4, 6), (1018,))),
    # Past ends with ids that also appear after its -1 ("junk" 8 8 is not part of the past):
    # 2 8 -> 12 does not match, 1 2 -> 13 does; overlapping words 2 -> 14 and 1 2 -> 14.
    bad_words_row((1, 2), ((2, 8, 12), (1, 2, 13), (2, 14), (1, 2, 14)), junk=(8, 8)),
    # No words at all.
    bad_words_row((7, 7, 7), ()),
)
# Full-size rows: opt-125m's vocab 50272 padded to 50304 (a strided view), batch 8, words
# banning the first and the last id of the row.
OPT125M = LogitsRecipe(batch=8, vocab=50272, family="randn", scale=1.0, seed=48824)
BAD_WORDS_REGRESSIONS = (
    RegressionExample("edges: suffix vs start match, whole past, too long, near miss, junk after -1",
                      BadWordsCase(LogitsRecipe(batch=5, vocab=1019, family="randn", scale=3.0, seed=7), EDGE_ROWS,
                                   extra_words=1, extra_tokens=1, extra_past=2, words_dtype=torch.int32),
                      dtypes=ALL_DTYPES, layouts=LAYOUTS),
    # 64 rows x 9 words: more (row, word) pairs than one program takes on any device (at most
    # 256), so rows beyond the first program's are banned by other programs.
    RegressionExample("the edge rows on 64 rows: pairs over several programs",
                      BadWordsCase(LogitsRecipe(batch=64, vocab=1019, family="randn", scale=3.0, seed=8), EDGE_ROWS),
                      dtypes=(torch.float32,), layouts=("contig",)),
    RegressionExample("full-size padded vocab (opt-125m 50272 -> 50304), ids 0 and V - 1",
                      BadWordsCase(OPT125M, (bad_words_row((50271, 17), ((17, 50271), (50271, 17, 0), (50271,))),
                                             bad_words_row((0,), ((0, 0), (50271, 0, 5)), junk=(50271,)))),
                      dtypes=(torch.bfloat16, torch.float32), layouts=("padded64",)),
)

def bad_words_extra_memory(logits, args) -> int:
    """Bytes beyond the inputs, per id entry: validation's bool temporaries (at most 4 live
    at once) and, for a non-contiguous id tensor, its int64 contiguous copy; nothing the
    size of the logits."""
    return (4 + 8) * (args["bad_words"].numel() + args["output_token_ids"].numel())


BAD_WORDS = register(ValueInfo(
    name="bad_words",
    off_encodings=BAD_WORDS_OFF,
    id_lists=IdLists((IdList("bad_words", (MAX_WORDS, MAX_WORD_TOKENS)), IdList("output_token_ids", (None,)))),
    backends=(Backend("triton", "samplecheck.kernels.bad_words:apply_bad_words", capturable=True, guard_flag=True,
                      batch_invariant=True),),
    cases=bad_words_cases, make_args=bad_words_args,
    reference=bad_words_reference, expected=bad_words_expected,
    check=check_banned,
    # Exact: only -inf is stored and the rule compares ids.
    tolerance={torch.float32: 0, torch.bfloat16: 0, torch.float16: 0},
    semantics={"rule": "ban tn iff the past ends with t0 .. tn-1 (vLLM)", "single_token": "always banned",
               "too_long": "a word with more prefix tokens than the past is skipped",
               "past": "output ids before the first -1; later entries ignored",
               "caps": "128 words, 1024 tokens per word", "banned_id": "validated in [0, V) (vllm#48824)"},
    error_inputs=BAD_WORDS_ERRORS,
    examples=BAD_WORDS_REGRESSIONS,
    extra_memory=bad_words_extra_memory,
))
