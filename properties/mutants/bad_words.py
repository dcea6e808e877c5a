"""Mutants of the bad_words kernel."""

from samplecheck.mutants import Mutant
from samplecheck.registry import catalog

MUTANTS = (
    Mutant(
        name="bad_words_match_past_start", kernel="bad_words",
        module="samplecheck.kernels.bad_words", entry="apply_bad_words",
        find="row_past + (past_len - n)[:, None] + t", replace="row_past + t",
        description="a word's prefix is compared with the first n tokens of the past instead of the last n",
        ref="fault class: wrong offset in a suffix match (docs/backends.md, 'bad_words': the last n tokens)",
    ),
    Mutant(
        name="bad_words_prefix_one_short", kernel="bad_words",
        module="samplecheck.kernels.bad_words", entry="apply_bad_words",
        find="in_prefix = (t < n[:, None])", replace="in_prefix = (t < n[:, None] - 1)",
        description="only n - 1 prefix tokens are compared: the token right before the banned one is ignored",
        ref="fault class: off-by-one on the prefix length",
    ),
    Mutant(
        name="bad_words_prefix_one_long", kernel="bad_words",
        module="samplecheck.kernels.bad_words", entry="apply_bad_words",
        find="in_prefix = (t < n[:, None])", replace="in_prefix = (t <= n[:, None])",
        description="n + 1 tokens are compared: the banned token itself against the entry after the past",
        ref="fault class: off-by-one on the prefix length",
    ),
    Mutant(
        name="bad_words_single_token_skipped", kernel="bad_words",
        module="samplecheck.kernels.bad_words", entry="apply_bad_words",
        find="applies = in_batch & (n >= 0)", replace="applies = in_batch & (n >= 1)",
        description="single-token words (always banned) are skipped",
        ref="docs/backends.md, 'bad_words': a single-token word is always banned",
    ),
    Mutant(
        name="bad_words_padding_in_past", kernel="bad_words",
        module="samplecheck.kernels.bad_words", entry="apply_bad_words",
        find="for start in range(0, O, BLOCK_PAST):", replace="for start in range(0, 0, BLOCK_PAST):",
        description="the past is the whole output_token_ids row: its -1 padding (and what follows) counts as tokens",
        ref="vllm#27910 class: -1 placeholders in output histories taken as tokens",
    ),
    Mutant(
        name="bad_words_past_counts_ids", kernel="bad_words",
        module="samplecheck.kernels.bad_words", entry="apply_bad_words",
        find=("past_len = tl.full([BLOCK_P], O, tl.int32)\n"
              "    scan = tl.arange(0, BLOCK_PAST)[None, :]\n"
              "    for start in range(0, O, BLOCK_PAST):\n"
              "        idx = start + scan\n"
              "        tok = tl.load(row_past + idx, mask=in_batch[:, None] & (idx < O), other=0)\n"
              "        past_len = tl.minimum(past_len, tl.min(tl.where((tok == -1) & (idx < O), idx, O), axis=1))\n"),
        replace=("past_len = tl.full([BLOCK_P], 0, tl.int32)\n"
                 "    scan = tl.arange(0, BLOCK_PAST)[None, :]\n"
                 "    for start in range(0, O, BLOCK_PAST):\n"
                 "        idx = start + scan\n"
                 "        tok = tl.load(row_past + idx, mask=in_batch[:, None] & (idx < O), other=-1)\n"
                 "        past_len += tl.sum((tok != -1).to(tl.int32), axis=1)\n"),
        description="past length = number of non -1 entries: ids after the first -1 extend the past",
        ref="fault class: a padded list's length counted instead of cut at its first pad (contract: ignored after -1)",
    ),
    Mutant(
        name="bad_words_banned_id_unchecked", kernel="bad_words",
        module="samplecheck.kernels.bad_words", entry="apply_bad_words",
        find='token_ids_describer("bad_words", bad_words, vocab)',
        replace='token_ids_describer("bad_words", bad_words.clamp(max=0), vocab)',
        description="bad-word ids >= V are not rejected: the kernel stores -inf at row * stride + id, past the row",
        ref="vllm#48824 (open): MRV2 _bad_words_kernel stores at the banned id without a bounds check",
        killed_by=catalog.ERROR_INPUTS,
        faults_memory=True,
    ),
)
