"""Registry record for allowed_token_ids, logit_bias and min_tokens (per row, in place)."""

import torch

from samplecheck.families.errors import (INF, NAN, dtype_message, floats, full, id_ends, id_range, ids,
                                       logits_errors, rejected, row_shape)
from samplecheck.families.token_lists import F32_MAX, LogitBiasCase, logit_bias_args, logit_bias_cases
from samplecheck.families.values import ValueInfo, check_biased, logit_bias_verdict
from samplecheck.inputs.far_lists import IdList, IdLists
from samplecheck.inputs.off_encodings import LOGIT_BIAS_OFF
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.kernels.logit_bias import MAX_ALLOWED, MAX_BIAS, MAX_STOP
from samplecheck.registry.layouts import LAYOUTS
from samplecheck.registry.matrix import register
from samplecheck.registry.records import ALL_DTYPES, Backend, RegressionExample


TOGETHER = r"logit_bias_ids and logit_bias_values must be given together"
LISTS = r"must have shape \[batch, length\] with batch = 2"
BIAS = {"logit_bias_ids": ids([[1], [2]]), "logit_bias_values": floats([[1.0], [1.0]])}
MIN_TOKENS = {"stop_token_ids": ids([[1], [2]]), "min_tokens": ids([2, 2]), "output_len": ids([0, 1])}
LOGIT_BIAS_ERRORS = (
    logits_errors(allowed_token_ids=ids([[1], [2]]))
    # GHSA-wr27-mx79-rg6c: an allowed id >= V addresses the next row or the row-stride gap.
    + id_ends("allowed_token_ids", id_range("allowed_token_ids"), lambda bad: ids([[1, -1], [2, bad]]))
    + rejected("allowed_token_ids", TypeError, dtype_message("allowed_token_ids", "int32, int64"), {
        "float allowed ids": floats([[1.0], [2.0]])})
    + rejected("allowed_token_ids", ValueError, "allowed_token_ids " + LISTS, {
        "1-D allowed ids": ids([1, 2]), "allowed ids for 3 rows": ids([[1], [2], [3]])})
    + rejected("allowed_token_ids", ValueError, r"allowed_token_ids may hold at most 1024 ids per row", {
        "1025 allowed ids": full((2, 1025), 0)})
    # vllm#16529: a bias id outside the vocab crashed the engine.
    + id_ends("logit_bias_ids", id_range("logit_bias_ids"), lambda bad: ids([[1], [bad]]), **BIAS)
    + rejected("logit_bias_ids", ValueError, TOGETHER, {"bias ids without values": ids([[1], [2]])})
    + rejected("logit_bias_values", ValueError, TOGETHER, {"bias values without ids": floats([[1.0], [1.0]])})
    + rejected("logit_bias_values", ValueError, r"logit_bias_values must be finite where logit_bias_ids is not -1", {
        "NaN bias": floats([[1.0], [NAN]]), "infinite bias": floats([[-INF], [1.0]])}, **BIAS)
    + rejected("logit_bias_values", TypeError, r"logit_bias_values dtype must be float32", {
        "float64 bias": floats([[1.0], [1.0]], torch.float64)}, **BIAS)
    + rejected("logit_bias_ids", ValueError, r"logit_bias_values must have the shape of logit_bias_ids \(2, 2\)", {
        "bias values of another shape": ids([[1, 3], [2, 4]])}, **BIAS)
    + rejected("logit_bias_ids", ValueError, r"logit_bias_ids must not repeat an id within a row; row 1 repeats 4", {
        "repeated bias id": ids([[1, -1, -1], [4, 3, 4]])},
        logit_bias_values=floats([[1.0, 0.0, 0.0], [1.0, 2.0, 3.0]]))
    + rejected("logit_bias_ids", ValueError, r"logit_bias_ids may hold at most 1024 ids per row", {
        "1025 bias entries": full((2, 1025), 0)}, logit_bias_values=full((2, 1025), 0.0, torch.float32))
    + id_ends("stop_token_ids", id_range("stop_token_ids"), lambda bad: ids([[1], [bad]]), **MIN_TOKENS)
    + rejected("stop_token_ids", ValueError, id_range("stop_token_ids"), {
        "stop id < -1 beside a valid bias": ids([[-3], [2]])},
        logit_bias_ids=ids([[1, -1], [2, 3]]), logit_bias_values=floats([[1.0, 0.0], [2.0, -3.0]]), **MIN_TOKENS)
    + rejected("stop_token_ids", ValueError, r"stop_token_ids may hold at most 128 ids per row", {
        "129 stop ids": full((2, 129), 0)}, **MIN_TOKENS)
    + rejected("min_tokens", ValueError, r"min_tokens must be >= 0", {"negative min_tokens": ids([2, -1])},
               **MIN_TOKENS)
    + rejected("output_len", ValueError, r"output_len must be >= 0", {"negative output_len": ids([-1, 0])},
               **MIN_TOKENS)
    + rejected("min_tokens", TypeError, dtype_message("min_tokens", "int32, int64"), {
        "float min_tokens": floats([2.0, 2.0])}, **MIN_TOKENS)
    + rejected("output_len", ValueError, row_shape("output_len"), {
        "output_len of wrong length": ids([0, 1, 2])}, **MIN_TOKENS)
    + rejected("min_tokens", ValueError, r"min_tokens and stop_token_ids must be given together", {
        "min_tokens without stop ids": ids([2, 2])}, output_len=ids([0, 0]))
    + rejected("stop_token_ids", ValueError, r"min_tokens and output_len must be given together", {
        "stop ids without output_len": ids([[1], [2]])}, min_tokens=ids([2, 2]))
)


# Edges, one row each (V = 1019, not a block multiple; about half the entries -inf):
# r0: allowlist with a repeated id, both ends and -inf entries; biases on an allowed entry,
#     an allowed -inf entry and a masked entry; an allowed, biased stop id masked by active
#     min_tokens (a restore after the later phases would bring it back);
# r1: unrestricted; biases overflowing bf16 (fp32 max) and fp16 (65519), signed zeros;
#     min_tokens == output_len (inactive: the stop ids stay);
# r2: a single allowed id that is also an active stop id (the row ends all -inf);
# r3: an allowlist of -inf entries only (the row ends all -inf), a bias on one of them;
# r4: unrestricted, small and subnormal biases on stop ids and others, min_tokens active.
EDGE_ROWS = LogitBiasCase(
    LogitsRecipe(batch=5, vocab=1019, family="randn", scale=3.0, neg_inf_fraction=0.5, seed=6),
    allowed=((0, 1018, 5, 5, 7, 3), (), (3,), (1, 2, 3), ()),
    bias=(((5, 1.5), (1018, -100.0), (8, 7.0), (7, 2.0)),
          ((0, F32_MAX), (5, 65519.0), (1017, 65504.0), (7, -0.0), (10, 0.0)), (), ((1, 5.0),),
          ((3, 0.3), (7, -0.7), (11, 1e-40))),
    min_tokens=(((7,), 3, 2), ((0, 1017), 2, 2), ((3,), 1, 0), ((), 0, 0), ((3, 0, 3), 5, 0)), pad=1,
)
# vllm#46245: a 1024-id allowlist (the cap) in a 8193-token row, beside an unrestricted row;
# every allowed entry keeps its bits, everything else is -inf.
BIG_ALLOWLIST = LogitBiasCase(
    LogitsRecipe(batch=2, vocab=8193, family="randn", scale=1.0, seed=46245),
    allowed=(tuple(range(1, 8193, 8)), ()), bias=(((8, 1.0), (9, -1.0)),), min_tokens=None, pad=0,
)
# Full-size rows: opt-125m's vocab 50272 padded to 50304 (a strided view), batch 8; the last
# id of the vocab allowed, biased and stopped (next to the padding columns).
OPT125M = LogitBiasCase(
    LogitsRecipe(batch=8, vocab=50272, family="peaked", scale=1.0, seed=49080),
    allowed=((50271, 0, 17), (), tuple(range(0, 50272, 997))),
    bias=(((50271, 5.0), (3, -3.0)), ()), min_tokens=(((50271, 2), 1, 0), ((50271,), 0, 0), ((), 3, 1)), pad=1,
)
LOGIT_BIAS_REGRESSIONS = (
    RegressionExample("edges: allowlist, bias, min_tokens overlapping on one row each",
                      EDGE_ROWS, dtypes=ALL_DTYPES, layouts=LAYOUTS),
    RegressionExample("vllm#46245 1024-id allowlist", BIG_ALLOWLIST, dtypes=ALL_DTYPES, layouts=("contig", "padded64")),
    RegressionExample("full-size padded vocab (opt-125m 50272 -> 50304), last id everywhere",
                      OPT125M, dtypes=(torch.bfloat16, torch.float32), layouts=("padded64",)),
)

LOGIT_BIAS = register(ValueInfo(
    name="logit_bias",
    off_encodings=LOGIT_BIAS_OFF,
    id_lists=IdLists((IdList("allowed_token_ids", (MAX_ALLOWED,)),
                      IdList("logit_bias_ids", (MAX_BIAS,), parallel=(("logit_bias_values", float("nan")),)),
                      IdList("stop_token_ids", (MAX_STOP,)))),
    backends=(Backend("triton", "samplecheck.kernels.logit_bias:apply_logit_bias", capturable=True, guard_flag=True,
                      batch_invariant=True),),
    cases=logit_bias_cases, make_args=logit_bias_args,
    reference=logit_bias_verdict,
    check=check_biased,
    # Bitwise: the contract fixes one fp32 add and round-to-nearest-even (samplecheck.oracles.logit_bias).
    tolerance={torch.float32: 0, torch.bfloat16: 0, torch.float16: 0},
    semantics={"order": "allowed_token_ids, then logit_bias, then min_tokens",
               "allowed": "allowed entries bitwise unchanged, others -inf; a row without ids is unrestricted",
               "bias": "fp32 add, round-to-nearest-even to the logits' dtype; unique ids per row",
               "min_tokens": "stop ids masked while output_len < min_tokens"},
    error_inputs=LOGIT_BIAS_ERRORS,
    examples=LOGIT_BIAS_REGRESSIONS,
))
