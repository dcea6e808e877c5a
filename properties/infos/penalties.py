"""Registry record for repetition, frequency and presence penalties (sparse, in place).

Token histories are recipes too (`samplecheck.families.token_lists.HistoryRecipe`: list
widths, a per-row alphabet, the share of ignored -1 / V entries, a torch seed), so ids
repeat and occur in both lists; penalties come from per-row pools with off values, both
signs, the ±2 bounds and extreme repetition values.
"""

import torch

from samplecheck.families.errors import (INF, NAN, dtype_message, floats, id_ends, id_range, ids, logits_errors,
                                       rejected, row_shape)
from samplecheck.families.token_lists import FixedHistory, HistoryRecipe, PenaltiesCase, penalties_args, penalties_cases
from samplecheck.families.values import ValueInfo, check_penalised
from samplecheck.inputs.far_lists import IdList, IdLists
from samplecheck.inputs.off_encodings import PENALTIES_OFF
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.kernels.penalties import SCRATCH_BYTES_PER_ID
from samplecheck.oracles.penalties import penalties_reference
from samplecheck.registry.layouts import LAYOUTS
from samplecheck.registry.matrix import register
from samplecheck.registry.records import ALL_DTYPES, Backend, Oracle, RegressionExample

VALID = {"prompt_token_ids": ids([[1, 2, -1], [3, 8, -1]]), "output_token_ids": ids([[1, -1], [-1, 8]]),
         "repetition_penalty": floats([1.2, 1.0]), "frequency_penalty": floats([0.5, 0.0]),
         "presence_penalty": floats([0.0, -1.0])}
LISTS = r"must have shape \[batch, length\] with batch = 2"
PENALTIES_ERRORS = (
    logits_errors(**VALID)
    # -1 and V are both padding here: the ends are -2 and V + 1.
    + id_ends("prompt_token_ids", id_range("prompt_token_ids", ", 8"), lambda bad: ids([[1, bad], [0, -1]]),
              (-2, 9), **VALID)
    + id_ends("output_token_ids", id_range("output_token_ids", ", 8"), lambda bad: ids([[1, -1], [0, bad]]),
              (-2, 9), **VALID)
    + rejected("output_token_ids", ValueError, id_range("output_token_ids", ", 8"), {
        "int32 output id far out of range": ids([[2**31 - 1], [0]], torch.int32)}, **VALID)
    + rejected("prompt_token_ids", TypeError, dtype_message("prompt_token_ids", "int32, int64"), {
        "float prompt ids": floats([[1.0], [2.0]])}, **VALID)
    + rejected("output_token_ids", ValueError, r"output_token_ids " + LISTS, {"1-D output ids": ids([1, 2])}, **VALID)
    + rejected("prompt_token_ids", ValueError, r"prompt_token_ids " + LISTS, {
        "prompt ids of the wrong batch": ids([[1, 2]])}, **VALID)
    + rejected("repetition_penalty", ValueError, r"repetition_penalty must be finite and > 0", {
        "repetition 0": floats([0.0, 1.0]), "negative repetition": floats([-1.2, 1.0]),
        "NaN repetition": floats([NAN, 1.0]), "infinite repetition": floats([INF, 1.0])}, **VALID)
    + rejected("frequency_penalty", ValueError, r"frequency_penalty must be in \[-2, 2\]", {
        "frequency above 2": floats([2.5, 0.0]), "frequency below -2": floats([-2.01, 0.0]),
        "NaN frequency": floats([NAN, 0.0])}, **VALID)
    + rejected("presence_penalty", ValueError, r"presence_penalty must be in \[-2, 2\]", {
        "presence below -2": floats([-3.0, 0.0]), "NaN presence": floats([NAN, 0.0]),
        "infinite presence": floats([-INF, 0.0])}, **VALID)
    + rejected("frequency_penalty", TypeError, dtype_message("frequency_penalty", "float32"), {
        "float64 frequency": floats([0.5, 0.0], torch.float64)}, **VALID)
    + rejected("repetition_penalty", ValueError, row_shape("repetition_penalty"), {
        "repetition of wrong length": floats([1.2])}, **VALID)
)


# Six rows on V = 17 (ids 0..16, pad id 17), one per edge:
# 0: repeats in both lists (3 in the prompt twice and the output once, 5 three times in the
#    output), -1 and 17 mixed in; 1: boost (r < 1) with negative f and q on ids 0 and V - 1
#    (a -1 read as V - 1 or 17 as 0 shows); 2: every penalty off; 3: only ignored entries
#    (nothing may change); 4: tiny r (overflows fp16/bf16 for positive logits), prompt-only
#    id 4 and an output id; 5: large r, -1 placeholders inside the output list.
EDGE_HISTORY = FixedHistory(
    prompt=((3, 3, -1, 17, 9), (), (1, 2, 3), (-1, -1), (4, 16), (2,)),
    output=((3, 5, 5, 5, -1, 17), (0, 16, 16), (1, 1), (17, 17, -1), (16,), (7, -1, 7, -1, 6)),
)
EDGE_PENALTIES = dict(repetition=(1.5, 0.5, 1.0, 2.0, 1e-6, 1e30),
                      frequency=(0.5, -2.0, 0.0, 2.0, 2.0, 1e-3),
                      presence=(1.0, -2.0, 0.0, 2.0, -0.5, 0.0))
# Counts beyond the exact integers of fp16 (2048) and bf16 (256): id 5 occurs 2049 times and
# id 9 257 times in the output, id 9 once more in the prompt; a frequency penalty of 1/8 makes
# one count more or less a visible 0.125 in fp32.
LONG_HISTORY = FixedHistory(prompt=((9, 2), (3,)), output=((5,) * 2049 + (9,) * 257 + (-1, 1), (9,) * 258))
OPT125M = LogitsRecipe(batch=8, vocab=50272, family="randn", scale=3.0, neg_inf_fraction=0.1, seed=27910)
PENALTIES_REGRESSIONS = (
    RegressionExample("edges on levels 0..3 (zero logits are fixed points of repetition)",
                      PenaltiesCase(LogitsRecipe(batch=6, vocab=17, family="ties", scale=1.0, seed=3),
                                    EDGE_HISTORY, **EDGE_PENALTIES),
                      dtypes=ALL_DTYPES, layouts=LAYOUTS),
    RegressionExample("edges on negative and -inf logits",
                      PenaltiesCase(LogitsRecipe(batch=6, vocab=17, family="randn", scale=3.0,
                                                 neg_inf_fraction=0.5, seed=4),
                                    EDGE_HISTORY, **EDGE_PENALTIES),
                      dtypes=ALL_DTYPES, layouts=LAYOUTS),
    RegressionExample("counts beyond fp16's and bf16's exact integers",
                      PenaltiesCase(LogitsRecipe(batch=2, vocab=17, family="randn", scale=1.0, seed=5), LONG_HISTORY,
                                    repetition=(1.0,), frequency=(0.125,), presence=(0.0,)),
                      dtypes=(torch.float32,), layouts=("contig",)),
    # Full-size rows (opt-125m's vocab 50272 padded to 50304): long lists with -1 and V
    # entries (#27910, #49081), repeats, off rows, int32 ids.
    RegressionExample("full-size padded vocab with long histories",
                      PenaltiesCase(OPT125M, HistoryRecipe(prompt_width=200, output_width=100, alphabet=150,
                                                           special=0.05, edges=True, dtype=torch.int32, seed=49081),
                                    repetition=(1.2, 1.0, 0.8), frequency=(0.5, 0.0, -0.3, 2.0),
                                    presence=(0.5, 0.0)),
                      dtypes=(torch.bfloat16, torch.float32), layouts=("padded64",)),
)


def penalties_scratch(logits, args):
    """The kernel's host scratch: at most SCRATCH_BYTES_PER_ID per entry of the two lists."""
    length = args["prompt_token_ids"].size(1) + args["output_token_ids"].size(1)
    return SCRATCH_BYTES_PER_ID * logits.size(0) * length


def in_kernel_path(args) -> int:
    """The in_kernel_max_length that keeps the lists in the kernel, which needs no host scratch
    (the host-sorted path's is 64 bytes per list entry: 128 GiB at 2**31 entries)."""
    return args["prompt_token_ids"].size(1) + args["output_token_ids"].size(1)


PENALTIES = register(ValueInfo(
    name="penalties",
    off_encodings=PENALTIES_OFF,
    id_lists=IdLists((IdList("prompt_token_ids", (None,)), IdList("output_token_ids", (None,))),
                     knobs={"in_kernel_max_length": in_kernel_path}),
    backends=(Backend("triton", "samplecheck.kernels.penalties:apply_penalties",
                      knobs=("in_kernel_max_length", "pairs_max_work"),
                      paths={"pair kernel": {"in_kernel_max_length": 2**30, "pairs_max_work": 2**62},
                             "row-sort kernel": {"in_kernel_max_length": 2**30, "pairs_max_work": 0},
                             "host-sorted path": {"in_kernel_max_length": 0}},
                      capturable=True, guard_flag=True, batch_invariant=True),),
    cases=penalties_cases, make_args=penalties_args,
    reference=Oracle(penalties_reference, tolerance="rtol"),
    check=check_penalised,
    # Relative tolerance on penalised entries: none. Each step is one IEEE-rounded fp32
    # operation (div_rn, an explicit fma for l - f * c, a subtraction) and the oracle
    # reproduces every rounding exactly (samplecheck.oracles.penalties), so the check is bitwise.
    tolerance={torch.float32: 0.0, torch.bfloat16: 0.0, torch.float16: 0.0},
    semantics={"repetition": "prompt ∪ output: l / r if l > 0 else l * r",
               "frequency": "l - f * c_out, one rounding (fma)",
               "presence": "l - q where c_out > 0", "order": "repetition, frequency, presence",
               "counts": "output list only", "ignored_ids": "prompt: -1 and V anywhere; output: ends at its first -1, V anywhere",
               "precision": "fp32 steps, round-to-nearest-even store", "off_rows": "r == 1, f == 0, q == 0: untouched"},
    error_inputs=PENALTIES_ERRORS,
    examples=PENALTIES_REGRESSIONS,
    extra_memory=penalties_scratch,
))
