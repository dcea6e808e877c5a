"""Registry record for allowed_token_ids, logit_bias and min_tokens (per row, in place)."""

import dataclasses
from dataclasses import dataclass

import torch
from hypothesis import strategies as st

from samplecheck.oracles.logit_bias import logit_bias_reference
from samplecheck.judging.checks import assert_bitwise_equal
from samplecheck.judging.laws import exact_output_law
from samplecheck.inputs.layouts import LAYOUTS
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.harness.registry import ALL_DTYPES, Backend, ErrorInput, KernelInfo, RegressionExample, register, tensor_on, zeros_on
from samplecheck.inputs.strategies import Budget, expand_pool, logits_recipes, row_pools

F32_MAX = 3.4028234663852886e38
# Bias edges: signed zeros, small, vLLM's clamp (+-100), fp16's max (l + 65504 overflows fp16
# for l >= 16), fp32's max (overflows bf16 after rounding), a subnormal.
BIAS_EDGES = (0.0, -0.0, 1.0, -1.0, 0.5, 100.0, -100.0, 1e-3, 65504.0, F32_MAX, -F32_MAX, 1e-40)
# (min_tokens, output_len): inactive at 0, active while output_len < min_tokens, equality edges.
MIN_TOKENS_EDGES = ((0, 0), (1, 0), (1, 1), (3, 2), (3, 3), (3, 4))
MAX_LIST = 6
MAX_POOL = 4
ALLOWED_CAP = 1024  # vLLM MRV2's per-request cap on allowed_token_ids


@dataclass(frozen=True)
class LogitBiasCase:
    """Logits recipe plus per-row pools (row r takes pool[r % len(pool)]; None: argument absent).

    allowed: allowlists (() is an unrestricted row); bias: (id, bias) lists; min_tokens:
    (stop ids, min_tokens, output_len). Every list is padded with `pad` extra -1 columns
    beyond the longest row; pad positions of logit_bias_values hold NaN (ignored)."""

    logits: LogitsRecipe
    allowed: tuple[tuple[int, ...], ...] | None
    bias: tuple[tuple[tuple[int, float], ...], ...] | None
    min_tokens: tuple[tuple[tuple[int, ...], int, int], ...] | None
    pad: int = 0
    id_dtype: torch.dtype = torch.int64


def bias_values() -> st.SearchStrategy[float]:
    return st.one_of(st.sampled_from(BIAS_EDGES), st.floats(-100.0, 100.0, width=32))


def _pools(values: st.SearchStrategy) -> st.SearchStrategy:
    """A per-row pool, or None (argument absent) less often than `row_pools` alone gives it."""
    return st.one_of(st.lists(values, min_size=1, max_size=MAX_POOL).map(tuple), row_pools(values, MAX_POOL))


def spread_ids(vocab: int, hot: list[int]) -> st.SearchStrategy[tuple[int, ...]]:
    """The hot ids plus evenly spaced ones, up to the cap: long allowlists (vllm#46245) for
    little entropy, still overlapping the other lists."""
    return st.builds(lambda start, step, count: tuple(hot) + tuple(range(start, vocab, step))[:count],
                     st.integers(0, vocab - 1), st.integers(1, max(1, vocab // 8)),
                     st.integers(1, ALLOWED_CAP - len(hot)))


@st.composite
def logit_bias_cases(draw, budget: Budget) -> LogitBiasCase:
    recipe = draw(logits_recipes(budget))
    # Mostly finite rows, so that biases and masks land on finite entries; -inf entries
    # (in allowlists, under biases) still come from the 0.5 / 0.9 / recipe fractions.
    recipe = dataclasses.replace(recipe, neg_inf_fraction=draw(
        st.sampled_from((0.0, 0.0, 0.0, 0.5, 0.9, recipe.neg_inf_fraction))))
    vocab = recipe.vocab
    # Ids come mostly from a few hot ids (the edges 0 and V-1 among them), so allowlists,
    # biases and stop lists of a row overlap often.
    hot = draw(st.lists(st.integers(0, vocab - 1), min_size=1, max_size=3)) + [0, vocab - 1]
    token = st.one_of(st.sampled_from(hot), st.sampled_from(hot), st.integers(0, vocab - 1))
    allowed = draw(_pools(st.one_of(st.lists(token, max_size=MAX_LIST).map(tuple), spread_ids(vocab, hot))))
    bias = draw(_pools(st.lists(st.tuples(token, bias_values()), max_size=MAX_LIST,
                                unique_by=lambda entry: entry[0]).map(tuple)))
    counts = st.one_of(st.sampled_from(MIN_TOKENS_EDGES), st.tuples(st.integers(0, 6), st.integers(0, 6)),
                       st.integers(0, 6).map(lambda n: (n, n)))
    stops = st.tuples(st.lists(token, max_size=4).map(tuple), counts).map(lambda s: (s[0], *s[1]))
    min_tokens = draw(_pools(stops))
    pad = draw(st.integers(0, 2))
    id_dtype = draw(st.sampled_from((torch.int64, torch.int32)))
    return LogitBiasCase(recipe, allowed, bias, min_tokens, pad, id_dtype)


def _padded(lists: list[tuple], pad: int, fill, dtype, device) -> torch.Tensor:
    width = max(len(row) for row in lists) + pad
    rows = [list(row) + [fill] * (width - len(row)) for row in lists]
    return torch.tensor(rows, dtype=dtype, device=device).reshape(len(lists), width)


def logit_bias_args(case: LogitBiasCase, logits: torch.Tensor) -> dict:
    batch, device, args = logits.size(0), logits.device, {}
    if case.allowed is not None:
        args["allowed_token_ids"] = _padded(expand_pool(case.allowed, batch), case.pad, -1, case.id_dtype, device)
    if case.bias is not None:
        rows = expand_pool(case.bias, batch)
        args["logit_bias_ids"] = _padded([[i for i, _ in r] for r in rows], case.pad, -1, case.id_dtype, device)
        args["logit_bias_values"] = _padded([[b for _, b in r] for r in rows], case.pad, float("nan"),
                                            torch.float32, device)
    if case.min_tokens is not None:
        rows = expand_pool(case.min_tokens, batch)
        args["stop_token_ids"] = _padded([r[0] for r in rows], case.pad, -1, case.id_dtype, device)
        args["min_tokens"] = torch.tensor([r[1] for r in rows], dtype=case.id_dtype, device=device)
        args["output_len"] = torch.tensor([r[2] for r in rows], dtype=case.id_dtype, device=device)
    return args


def logit_bias_ref(logits, semantics, tolerance, **args):
    return logit_bias_reference(logits, **args)


def logit_bias_check(original, output, expected, what):
    assert_bitwise_equal(output, expected, f"{what}: output vs the oracle")


def _call(logits=zeros_on(2, 8), **params):
    """make(device) for an ErrorInput: each argument is built on the device."""
    return lambda device: ((logits(device),), {name: make(device) for name, make in params.items()})


def _ids(values):
    return tensor_on(values, torch.int64)


def _wide(n):
    """Two rows of n ids (all 0): one more than a cap."""
    return lambda device: torch.zeros(2, n, dtype=torch.int64, device=device)


def _bias(ids, values, dtype=torch.float32):
    return {"logit_bias_ids": _ids(ids), "logit_bias_values": tensor_on(values, dtype)}


def _min_tokens(**changes):
    """Valid stop_token_ids / min_tokens / output_len, with `changes` replacing some."""
    return {"stop_token_ids": _ids([[1], [2]]), "min_tokens": _ids([2, 2]), "output_len": _ids([0, 1]), **changes}


def _id_range(name):
    return rf"{name} must hold token ids in \[0, 8\) or -1"


_ROWS = r"must have shape \[batch, length\] with batch = 2"
_FINITE = r"logit_bias_values must be finite where logit_bias_ids is not -1"
LOGIT_BIAS_ERRORS = (
    ErrorInput("1-D logits", _call(zeros_on(8), allowed_token_ids=_ids([1])), ValueError, r"logits must be 2-D"),
    ErrorInput("float64 logits", _call(zeros_on(2, 8, dtype=torch.float64), allowed_token_ids=_ids([[1], [2]])),
               TypeError, r"logits dtype must be one of float32, bfloat16, float16"),
    ErrorInput("column-strided logits", _call(lambda d: zeros_on(2, 16)(d)[:, ::2], allowed_token_ids=_ids([[1], [2]])),
               ValueError, r"column stride 1"),
    # GHSA-wr27-mx79-rg6c: an allowed id >= V addresses the next row or the row-stride gap.
    ErrorInput("allowed id = V", _call(allowed_token_ids=_ids([[1, 8], [2, -1]])),
               ValueError, _id_range("allowed_token_ids")),
    ErrorInput("allowed id < -1", _call(allowed_token_ids=_ids([[1, -2], [2, -1]])),
               ValueError, _id_range("allowed_token_ids")),
    ErrorInput("float allowed ids", _call(allowed_token_ids=tensor_on([[1.0], [2.0]], torch.float32)),
               TypeError, r"allowed_token_ids dtype must be one of int32, int64"),
    ErrorInput("1-D allowed ids", _call(allowed_token_ids=_ids([1, 2])), ValueError, "allowed_token_ids " + _ROWS),
    ErrorInput("allowed ids for 3 rows", _call(allowed_token_ids=_ids([[1], [2], [3]])),
               ValueError, "allowed_token_ids " + _ROWS),
    ErrorInput("1025 allowed ids", _call(allowed_token_ids=_wide(1025)),
               ValueError, r"allowed_token_ids may hold at most 1024 ids per row"),
    # vllm#16529: a bias id outside the vocab crashed the engine.
    ErrorInput("bias id = V", _call(**_bias([[8], [2]], [[1.0], [1.0]])), ValueError, _id_range("logit_bias_ids")),
    ErrorInput("bias ids without values", _call(logit_bias_ids=_ids([[1], [2]])),
               ValueError, r"logit_bias_ids and logit_bias_values must be given together"),
    ErrorInput("bias values without ids", _call(logit_bias_values=tensor_on([[1.0], [1.0]], torch.float32)),
               ValueError, r"logit_bias_ids and logit_bias_values must be given together"),
    ErrorInput("NaN bias", _call(**_bias([[1], [2]], [[1.0], [float("nan")]])), ValueError, _FINITE),
    ErrorInput("infinite bias", _call(**_bias([[1], [2]], [[float("-inf")], [1.0]])), ValueError, _FINITE),
    ErrorInput("float64 bias", _call(**_bias([[1], [2]], [[1.0], [1.0]], torch.float64)),
               TypeError, r"logit_bias_values dtype must be float32"),
    ErrorInput("bias values of another shape", _call(**_bias([[1, 3], [2, 4]], [[1.0], [1.0]])),
               ValueError, r"logit_bias_values must have the shape of logit_bias_ids \(2, 2\)"),
    ErrorInput("repeated bias id", _call(**_bias([[1, -1, -1], [4, 3, 4]], [[1.0, 0.0, 0.0], [1.0, 2.0, 3.0]])),
               ValueError, r"logit_bias_ids must not repeat an id within a row; row 1 repeats 4"),
    ErrorInput("1025 bias entries", _call(logit_bias_ids=_wide(1025), logit_bias_values=zeros_on(2, 1025)),
               ValueError, r"logit_bias_ids may hold at most 1024 ids per row"),
    ErrorInput("stop id = V", _call(**_min_tokens(stop_token_ids=_ids([[1], [8]]))),
               ValueError, _id_range("stop_token_ids")),
    ErrorInput("stop id < -1 beside a valid bias", _call(**_bias([[1, -1], [2, 3]], [[1.0, 0.0], [2.0, -3.0]]),
                                                         **_min_tokens(stop_token_ids=_ids([[-3], [2]]))),
               ValueError, _id_range("stop_token_ids")),
    ErrorInput("129 stop ids", _call(**_min_tokens(stop_token_ids=_wide(129))),
               ValueError, r"stop_token_ids may hold at most 128 ids per row"),
    ErrorInput("negative min_tokens", _call(**_min_tokens(min_tokens=_ids([2, -1]))),
               ValueError, r"min_tokens must be >= 0"),
    ErrorInput("negative output_len", _call(**_min_tokens(output_len=_ids([-1, 0]))),
               ValueError, r"output_len must be >= 0"),
    ErrorInput("float min_tokens", _call(**_min_tokens(min_tokens=tensor_on([2.0, 2.0], torch.float32))),
               TypeError, r"min_tokens dtype must be one of int32, int64"),
    ErrorInput("output_len of wrong length", _call(**_min_tokens(output_len=_ids([0, 1, 2]))),
               ValueError, r"output_len must have shape \[batch\] = \[2\]"),
    ErrorInput("min_tokens without stop ids", _call(min_tokens=_ids([2, 2]), output_len=_ids([0, 0])),
               ValueError, r"min_tokens and stop_token_ids must be given together"),
    ErrorInput("stop ids without output_len", _call(stop_token_ids=_ids([[1], [2]]), min_tokens=_ids([2, 2])),
               ValueError, r"min_tokens and output_len must be given together"),
)


def _case(recipe, allowed, bias, min_tokens, pad=1):
    return LogitBiasCase(recipe, allowed, bias, min_tokens, pad)


# Edges, one row each (V = 1019, not a block multiple; about half the entries -inf):
# r0: allowlist with a repeated id, both ends and -inf entries; biases on an allowed entry,
#     an allowed -inf entry and a masked entry; an allowed, biased stop id masked by active
#     min_tokens (a restore after the later phases would bring it back);
# r1: unrestricted; biases overflowing bf16 (fp32 max) and fp16 (65519), signed zeros;
#     min_tokens == output_len (inactive: the stop ids stay);
# r2: a single allowed id that is also an active stop id (the row ends all -inf);
# r3: an allowlist of -inf entries only (the row ends all -inf), a bias on one of them;
# r4: unrestricted, small and subnormal biases on stop ids and others, min_tokens active.
EDGE_ROWS = _case(
    LogitsRecipe(batch=5, vocab=1019, family="randn", scale=3.0, neg_inf_fraction=0.5, seed=6),
    allowed=((0, 1018, 5, 5, 7, 3), (), (3,), (1, 2, 3), ()),
    bias=(((5, 1.5), (1018, -100.0), (8, 7.0), (7, 2.0)),
          ((0, F32_MAX), (5, 65519.0), (1017, 65504.0), (7, -0.0), (10, 0.0)), (), ((1, 5.0),),
          ((3, 0.3), (7, -0.7), (11, 1e-40))),
    min_tokens=(((7,), 3, 2), ((0, 1017), 2, 2), ((3,), 1, 0), ((), 0, 0), ((3, 0, 3), 5, 0)),
)
# vllm#46245: a 1024-id allowlist (the cap) in a 8193-token row, beside an unrestricted row;
# every allowed entry keeps its bits, everything else is -inf.
BIG_ALLOWLIST = _case(
    LogitsRecipe(batch=2, vocab=8193, family="randn", scale=1.0, seed=46245),
    allowed=(tuple(range(1, 8193, 8)), ()), bias=(((8, 1.0), (9, -1.0)),), min_tokens=None, pad=0,
)
# Full-size rows: opt-125m's vocab 50272 padded to 50304 (a strided view), batch 8; the last
# id of the vocab allowed, biased and stopped (next to the padding columns).
OPT125M = _case(
    LogitsRecipe(batch=8, vocab=50272, family="peaked", scale=1.0, seed=49080),
    allowed=((50271, 0, 17), (), tuple(range(0, 50272, 997))),
    bias=(((50271, 5.0), (3, -3.0)), ()), min_tokens=(((50271, 2), 1, 0), ((50271,), 0, 0), ((), 3, 1)),
)
LOGIT_BIAS_REGRESSIONS = (
    RegressionExample("edges: allowlist, bias, min_tokens overlapping on one row each",
                      EDGE_ROWS, dtypes=ALL_DTYPES, layouts=LAYOUTS),
    RegressionExample("vllm#46245 1024-id allowlist", BIG_ALLOWLIST, dtypes=ALL_DTYPES, layouts=("contig", "padded64")),
    RegressionExample("full-size padded vocab (opt-125m 50272 -> 50304), last id everywhere",
                      OPT125M, dtypes=(torch.bfloat16, torch.float32), layouts=("padded64",)),
)

LOGIT_BIAS = register(KernelInfo(
    name="logit_bias",
    backends=(Backend("triton", "samplecheck.kernels.logit_bias:apply_logit_bias"),),
    cases=logit_bias_cases,
    make_args=logit_bias_args,
    reference=logit_bias_ref,
    check=logit_bias_check,
    dtypes=ALL_DTYPES,
    # Bitwise: the contract fixes one fp32 add and round-to-nearest-even (samplecheck.oracles.logit_bias).
    tolerance={torch.float32: 0, torch.bfloat16: 0, torch.float16: 0},
    semantics={"order": "allowed_token_ids, then logit_bias, then min_tokens",
               "allowed": "allowed entries bitwise unchanged, others -inf; a row without ids is unrestricted",
               "bias": "fp32 add, round-to-nearest-even to the logits' dtype; unique ids per row",
               "min_tokens": "stop ids masked while output_len < min_tokens"},
    error_inputs=LOGIT_BIAS_ERRORS,
    examples=LOGIT_BIAS_REGRESSIONS,
    law=lambda original, expected, **_: exact_output_law(expected),
))
