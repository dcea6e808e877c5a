"""The bad-input table: bad and edge inputs for every registry record, as data.

Each `BadInput` (samplecheck.registry.records) names a record (its call contract: positional
logits, keyword arguments as the record's backends take them), a category, the call, built
with the error inputs' own builders (samplecheck.families.errors: `call`, `ids`, `floats`,
`full`, ...), and what the contract promises: `error` + `argument` (the caller's parameter
the message must name), or `result(output, args, kwargs)` (the documented result; raises
AssertionError otherwise). Calls are B x V = 2 x 8 (interpreter-sized), on the logits
`RAMP` unless an entry gives its own. docs/validation.md and docs/backends.md state the
rules the entries check; samplecheck.judging.bad_calls runs an entry and judges it.
"""

import torch

from samplecheck.families.errors import (B, INF, NAN, V, call, floats, full, ids, on_meta, on_other_device,
                                         strided_columns)
from samplecheck.families.pipeline import batch
from samplecheck.registry.records import BadInput, zeros_on


def ramp(r=0):
    """The row 0 + r, 1 + r, ..., V - 1 + r."""
    return [float(c + r) for c in range(V)]


RAMP = floats([ramp(0), ramp(1)])  # the logits of an entry that gives none: row r is ramp(r)


def entry(kernel, description, category, *, logits=RAMP, error=None, argument=None, result=None,
          **arguments) -> BadInput:
    """An entry of record `kernel`: `call(logits, **arguments)`, promising `error` about
    `argument`, or the documented `result`."""
    return BadInput(kernel, description, category, call(logits, **arguments), error, argument, result)


def sampler(description, category, *, logits=RAMP, error=None, argument=None, result=None, **fields) -> BadInput:
    """An entry of the whole sampler: params = a `batch` of `fields` (seeds and positions 0
    unless given)."""
    return entry("sampling_params", description, category, logits=logits, error=error, argument=argument,
                 result=result, params=batch(**fields))


def bad_logits(kernel: str, **required) -> list[BadInput]:
    """The logits entries every record gets (with its required arguments)."""
    cases = [
        ("logits a list", "non-tensor", TypeError, [[0.0] * V] * B),
        ("logits 1-D", "rank", ValueError, zeros_on(V)),
        ("logits int32", "dtype", TypeError, zeros_on(B, V, dtype=torch.int32)),
        ("logits on meta", "device", ValueError, on_meta(zeros_on(B, V))),
        ("logits column stride 2", "shape", ValueError, strided_columns(zeros_on(B, 2 * V))),
    ]
    return [entry(kernel, description, category, logits=logits, error=error, argument="logits", **required)
            for description, category, error, logits in cases]


# --- documented results -----------------------------------------------------------------

def unchanged_except(expected_rows):
    """Result check for in-place ops: the returned logits equal `expected_rows` (NaN where NaN)."""
    def check(output, args, kwargs):
        expected = torch.tensor(expected_rows, dtype=output.dtype)
        torch.testing.assert_close(output.cpu(), expected, rtol=0, atol=0, equal_nan=True)
    return check


def sampled_ids(expected):
    """Result check for samplers: the sampled ids (a tensor, or the output's `sampled`) are `expected`."""
    def check(output, args, kwargs):
        sampled = output if isinstance(output, torch.Tensor) else output.sampled
        assert sampled.tolist() == expected, f"sampled {sampled.tolist()}, documented {expected}"
    return check


def ids_in_range(output, args, kwargs):
    """Result check for samplers: every sampled id is in [0, V)."""
    sampled = output if isinstance(output, torch.Tensor) else output.sampled
    assert ((sampled >= 0) & (sampled < V)).all(), f"ids {sampled.tolist()} outside [0, {V})"


NEG = -INF
NAN_ROW = [NAN] * V
NAN_AT_3 = [0.0, 1.0, 2.0, NAN, 4.0, 5.0, 6.0, 7.0]
TWO_INF = [0.0, INF, 2.0, 3.0, INF, 5.0, 6.0, 7.0]


def valid_rows(expected):
    """Result check for the sampler: rows' `valid` flags are `expected`, every id in range."""
    def check(output, args, kwargs):
        assert output.valid.tolist() == expected, f"valid {output.valid.tolist()}, documented {expected}"
        ids_in_range(output, args, kwargs)
    return check


def all_nan_logprobs(output, args, kwargs):
    """Result check for logprobs: every logprob is NaN."""
    assert output.logprobs.isnan().all(), f"logprobs {output.logprobs.tolist()}: documented all NaN"


def penalised_as_if(output_token_ids):
    """Penalties result: the same call with `output_token_ids` instead (the history rule)."""
    def check(output, args, kwargs):
        from samplecheck.kernels.penalties import apply_penalties
        device = output.device.type
        expected = apply_penalties(RAMP(device), **{**kwargs, "output_token_ids": ids(output_token_ids)(device)})
        torch.testing.assert_close(output, expected, rtol=0, atol=0)
    return check


PEN = dict(prompt_token_ids=ids([[1, -1], [2, 8]]), output_token_ids=ids([[3, -1], [4, 4]]),
           repetition_penalty=floats([1.2, 1.2]), frequency_penalty=floats([0.5, 0.5]),
           presence_penalty=floats([0.1, 0.1]))
WORDS = dict(bad_words=ids([[[1, 2], [5, -1]], [[3, -1], [-1, -1]]]), output_token_ids=ids([[1, -1], [2, 3]]))
GUMBEL = dict(seeds=ids([1, 2]), positions=ids([0, 1]))


def pen(**changes):
    """The penalties' valid arguments (PEN), with `changes`."""
    return {**PEN, **changes}


def words(**changes):
    """The bad words' valid arguments (WORDS), with `changes`."""
    return {**WORDS, **changes}


def gum(**changes):
    """The Gumbel sampler's valid arguments (GUMBEL), with `changes`."""
    return {**GUMBEL, **changes}


ROWS = [
    # --- logits, every record ---
    *bad_logits("temperature", temperature=floats([0.5, 2.0])),
    *bad_logits("min_p", min_p=floats([0.1, 0.2])),
    *bad_logits("top_k_top_p", k=ids([2, 3]), p=None),
    *bad_logits("softmax", temperature=None),
    *bad_logits("top_k_top_p_sample", k=ids([2, 3]), seed=7),
    *bad_logits("min_p_sample", min_p=floats([0.1, 0.2]), seed=7),
    *bad_logits("gumbel_sample", **GUMBEL),
    *bad_logits("logprobs", sampled=ids([0, 1]), num_logprobs=2),
    *bad_logits("penalties", **PEN),
    *bad_logits("bad_words", **WORDS),
    *bad_logits("logit_bias", allowed_token_ids=ids([[1, -1], [2, 3]])),
    # --- per-row parameters ---
    entry("temperature", "temperature negative", "range", temperature=floats([0.5, -1.0]), error=ValueError,
          argument="temperature"),
    entry("temperature", "temperature NaN", "nan-param", temperature=floats([NAN, 1.0]), error=ValueError,
          argument="temperature"),
    entry("temperature", "temperature +inf", "nan-param", temperature=floats([INF, 1.0]), error=ValueError,
          argument="temperature"),
    entry("temperature", "temperature float64", "dtype", temperature=floats([1.0, 1.0], torch.float64),
          error=TypeError, argument="temperature"),
    entry("temperature", "temperature [B + 1]", "shape", temperature=floats([1.0, 1.0, 1.0]), error=ValueError,
          argument="temperature"),
    entry("temperature", "temperature on another device", "device",
          temperature=on_other_device(floats([1.0, 1.0])), error=ValueError, argument="temperature"),
    entry("temperature", "temperature a list", "non-tensor", temperature=[1.0, 1.0], error=TypeError,
          argument="temperature"),
    entry("softmax", "softmax temperature 0", "range", temperature=floats([0.0, 1.0]), error=ValueError,
          argument="temperature"),
    entry("min_p", "min_p above 1", "range", min_p=floats([1.5, 0.1]), error=ValueError, argument="min_p"),
    entry("min_p", "min_p NaN", "nan-param", min_p=floats([NAN, 0.1]), error=ValueError, argument="min_p"),
    entry("min_p", "min_p int64", "dtype", min_p=ids([0, 0]), error=TypeError, argument="min_p"),
    entry("min_p", "min_p 2-D", "rank", min_p=floats([[0.1, 0.1]]), error=ValueError, argument="min_p"),
    entry("top_k_top_p", "k below -1", "range", k=ids([5, -2]), error=ValueError, argument="k"),
    entry("top_k_top_p", "k float32", "dtype", k=floats([5.0, 5.0]), error=TypeError, argument="k"),
    entry("top_k_top_p", "k on another device", "device", k=on_other_device(ids([1, 1])),
          error=ValueError, argument="k"),
    entry("top_k_top_p", "p zero", "range", p=floats([0.0, 0.5]), error=ValueError, argument="p"),
    entry("top_k_top_p", "p NaN", "nan-param", p=floats([NAN, 0.5]), error=ValueError, argument="p"),
    entry("top_k_top_p", "p float64", "dtype", p=full((B,), 0.5, torch.float64),
          error=TypeError, argument="p"),
    entry("top_k_top_p", "p [B - 1]", "shape", p=floats([0.5]), error=ValueError, argument="p"),
    # --- seeds and positions ---
    entry("top_k_top_p_sample", "seed a string", "non-tensor", k=ids([2, 3]), seed="7", error=TypeError,
          argument="seed"),
    entry("top_k_top_p_sample", "seed 2**64", "seed", k=ids([2, 3]), seed=2**64, error=ValueError, argument="seed"),
    entry("min_p_sample", "seed below -2**63", "seed", min_p=floats([0.1, 0.1]), seed=-2**63 - 1, error=ValueError,
          argument="seed"),
    entry("min_p_sample", "seed 2**64 - 1", "seed", min_p=floats([0.1, 0.1]), seed=2**64 - 1, result=ids_in_range),
    entry("gumbel_sample", "seeds None", "non-tensor", seeds=None, positions=ids([0, 1]), error=TypeError,
          argument="seeds"),
    entry("gumbel_sample", "seeds int32", "dtype", **gum(seeds=ids([1, 2], torch.int32)), error=TypeError,
          argument="seeds"),
    entry("gumbel_sample", "positions negative", "position", **gum(positions=ids([0, -1])), error=ValueError,
          argument="positions"),
    entry("gumbel_sample", "temperature negative", "range", **gum(temperature=floats([1.0, -0.5])), error=ValueError,
          argument="temperature"),
    entry("gumbel_sample", "vocab 0", "shape", logits=zeros_on(B, 0), **GUMBEL,
          error=ValueError, argument="logits"),
    entry("gumbel_sample", "extreme seeds and positions", "seed",
          **gum(seeds=ids([-2**63, 2**63 - 1]), positions=ids([2**62, 2**63 - 1])), result=ids_in_range),
    # --- logprobs ---
    entry("logprobs", "sampled id V", "id-range", sampled=ids([0, V]), num_logprobs=1, error=ValueError,
          argument="sampled"),
    entry("logprobs", "sampled int32", "dtype", sampled=ids([0, 1], torch.int32), num_logprobs=1, error=TypeError,
          argument="sampled"),
    entry("logprobs", "num_logprobs above V", "cap", sampled=ids([0, 1]), num_logprobs=V + 1, error=ValueError,
          argument="num_logprobs"),
    entry("logprobs", "num_logprobs a float", "non-tensor", sampled=ids([0, 1]), num_logprobs=1.5, error=TypeError,
          argument="num_logprobs"),
    entry("logprobs", "num_logprobs True", "non-tensor", sampled=ids([0, 1]), num_logprobs=True, error=TypeError,
          argument="num_logprobs"),
    # --- penalties ---
    entry("penalties", "prompt_token_ids None", "non-tensor", **pen(prompt_token_ids=None), error=TypeError,
          argument="prompt_token_ids"),
    entry("penalties", "output id -2", "id-range", **pen(output_token_ids=ids([[3, -2], [4, 4]])), error=ValueError,
          argument="output_token_ids"),
    entry("penalties", "prompt id V + 1", "id-range", **pen(prompt_token_ids=ids([[1, V + 1], [2, 8]])),
          error=ValueError, argument="prompt_token_ids"),
    entry("penalties", "prompt ids float", "dtype", **pen(prompt_token_ids=floats([[1.0], [2.0]])), error=TypeError,
          argument="prompt_token_ids"),
    entry("penalties", "output ids 1-D", "rank", **pen(output_token_ids=ids([3, 4])), error=ValueError,
          argument="output_token_ids"),
    entry("penalties", "output ids of another batch", "length", **pen(output_token_ids=ids([[3], [4], [5]])),
          error=ValueError, argument="output_token_ids"),
    entry("penalties", "repetition NaN", "nan-param", **pen(repetition_penalty=floats([NAN, 1.0])), error=ValueError,
          argument="repetition_penalty"),
    entry("penalties", "repetition 0", "range", **pen(repetition_penalty=floats([0.0, 1.0])), error=ValueError,
          argument="repetition_penalty"),
    entry("penalties", "frequency +inf", "nan-param", **pen(frequency_penalty=floats([INF, 0.0])), error=ValueError,
          argument="frequency_penalty"),
    entry("penalties", "presence 2.5", "range", **pen(presence_penalty=floats([2.5, 0.0])), error=ValueError,
          argument="presence_penalty"),
    entry("penalties", "-1 in the middle of the output ids", "history",
          **pen(output_token_ids=ids([[3, -1, 5], [4, -1, 4]])), result=penalised_as_if([[3, -1, -1], [4, -1, -1]])),
    # --- bad words ---
    entry("bad_words", "bad word id V", "id-range", **words(bad_words=ids([[[1, V]], [[3, -1]]])), error=ValueError,
          argument="bad_words"),
    entry("bad_words", "id after -1 within a word", "id-range", **words(bad_words=ids([[[1, -1, 2]], [[3, -1, -1]]])),
          error=ValueError, argument="bad_words"),
    entry("bad_words", "129 words", "cap", **words(bad_words=full((B, 129, 1), 1)),
          error=ValueError, argument="bad_words"),
    entry("bad_words", "1025 tokens a word", "cap", **words(bad_words=full((B, 1, 1025), -1)),
          error=ValueError, argument="bad_words"),
    entry("bad_words", "output_token_ids None", "non-tensor", **words(output_token_ids=None), error=TypeError,
          argument="output_token_ids"),
    entry("bad_words", "bad_words 2-D", "rank", **words(bad_words=ids([[1, 2], [3, 4]])), error=ValueError,
          argument="bad_words"),
    entry("bad_words", "-1 in the middle of the past", "history",
          **words(bad_words=ids([[[1, 2]], [[2, 3]]]), output_token_ids=ids([[0, -1, 1], [3, -1, 2]])),
          result=unchanged_except([ramp(0), ramp(1)])),
    # --- allowed / bias / min_tokens ---
    entry("logit_bias", "allowed id V", "id-range", allowed_token_ids=ids([[1, V], [2, -1]]), error=ValueError,
          argument="allowed_token_ids"),
    entry("logit_bias", "allowed a list", "non-tensor", allowed_token_ids=[[1], [2]], error=TypeError,
          argument="allowed_token_ids"),
    entry("logit_bias", "1025 allowed ids", "cap", allowed_token_ids=full((B, 1025), -1),
          error=ValueError, argument="allowed_token_ids"),
    entry("logit_bias", "bias ids without values", "group", logit_bias_ids=ids([[1], [2]]), error=ValueError,
          argument="logit_bias_values"),
    entry("logit_bias", "bias values without ids", "group", logit_bias_values=floats([[1.0], [2.0]]), error=ValueError,
          argument="logit_bias_ids"),
    entry("logit_bias", "bias value NaN", "nan-param", logit_bias_ids=ids([[1], [2]]),
          logit_bias_values=floats([[NAN], [1.0]]), error=ValueError, argument="logit_bias_values"),
    entry("logit_bias", "bias id repeated", "id-range", logit_bias_ids=ids([[1, 1], [2, -1]]),
          logit_bias_values=floats([[1.0, 1.0], [1.0, 0.0]]), error=ValueError, argument="logit_bias_ids"),
    entry("logit_bias", "stop ids without min_tokens", "group", stop_token_ids=ids([[1], [2]]),
          output_len=ids([0, 0]), error=ValueError, argument="min_tokens"),
    entry("logit_bias", "min_tokens negative", "range", stop_token_ids=ids([[1], [2]]), min_tokens=ids([-1, 0]),
          output_len=ids([0, 0]), error=ValueError, argument="min_tokens"),
    entry("logit_bias", "output_len float", "dtype", stop_token_ids=ids([[1], [2]]), min_tokens=ids([1, 0]),
          output_len=floats([0.0, 0.0]), error=TypeError, argument="output_len"),
    entry("logit_bias", "129 stop ids", "cap", stop_token_ids=full((B, 129), -1),
          min_tokens=ids([1, 1]), output_len=ids([0, 0]), error=ValueError, argument="stop_token_ids"),
    entry("logit_bias", "NaN logit with a bias, allowed NaN", "non-finite-row",
          logits=floats([NAN_AT_3, ramp(1)]), allowed_token_ids=ids([[3, 4], [-1, -1]]),
          logit_bias_ids=ids([[3, -1], [0, -1]]), logit_bias_values=floats([[1.0, 0.0], [2.0, 0.0]]),
          result=unchanged_except([[NEG, NEG, NEG, NAN, 4.0, NEG, NEG, NEG], [3.0] + ramp(1)[1:]])),
    # --- non-finite rows (documented results) ---
    entry("temperature", "NaN and +inf entries", "non-finite-row", logits=floats([NAN_AT_3, TWO_INF]),
          temperature=floats([2.0, 2.0]),
          result=unchanged_except([[x / 2 for x in NAN_AT_3], [x / 2 for x in TWO_INF]])),
    entry("min_p", "one NaN; an all-NaN row", "non-finite-row", logits=floats([NAN_AT_3, NAN_ROW]),
          min_p=floats([0.5, 0.5]), result=unchanged_except([[NEG] * 7 + [7.0], [NEG] * V])),
    entry("min_p", "+inf entries; NaN where min-p is off", "non-finite-row", logits=floats([TWO_INF, NAN_AT_3]),
          min_p=floats([0.1, 0.0]), result=unchanged_except([[NEG, INF, NEG, NEG, INF, NEG, NEG, NEG], NAN_AT_3])),
    entry("min_p", "vocab 1: a NaN row beside a finite one", "non-finite-row",
          logits=floats([[NAN], [2.0]]), min_p=floats([0.5, 0.5]),
          result=unchanged_except([[NEG], [2.0]])),
    entry("min_p", "vocab 0", "shape", logits=zeros_on(B, 0), min_p=floats([0.5, 0.5]),
          result=unchanged_except([[], []])),
    entry("top_k_top_p", "top-k 5 with one NaN; all-NaN row", "non-finite-row", logits=floats([NAN_AT_3, NAN_ROW]),
          k=ids([5, 5]), result=unchanged_except([[NEG, NEG, 2.0, NEG, 4.0, 5.0, 6.0, 7.0], [NEG] * V])),
    entry("top_k_top_p", "top-p with +inf entries; NaN where both are off", "non-finite-row",
          logits=floats([TWO_INF, NAN_AT_3]), k=ids([0, 0]), p=floats([0.9, 1.0]),
          result=unchanged_except([[NEG, INF, NEG, NEG, INF, NEG, NEG, NEG], NAN_AT_3])),
    entry("top_k_top_p", "all -inf row", "non-finite-row", logits=floats([[NEG] * V, ramp()]), k=ids([3, 0]),
          p=floats([0.5, 1.0]), result=unchanged_except([[NEG] * V, ramp()])),
    entry("gumbel_sample", "all-NaN and all -inf rows", "non-finite-row", logits=floats([NAN_ROW, [NEG] * V]),
          **GUMBEL, result=sampled_ids([0, 0])),
    entry("gumbel_sample", "+inf entries win, lowest first; NaN never", "non-finite-row",
          logits=floats([TWO_INF, [NAN] * 7 + [0.0]]), **GUMBEL, result=sampled_ids([1, 7])),
    entry("logprobs", "NaN row and +inf row", "non-finite-row", logits=floats([NAN_AT_3, TWO_INF]),
          sampled=ids([0, 1]), num_logprobs=2, result=all_nan_logprobs),
    entry("top_k_top_p_sample", "all-NaN row", "non-finite-row", logits=floats([NAN_ROW, ramp()]), k=ids([2, 2]),
          seed=3, result=lambda out, a, kw: sampled_ids([0])(out[:1], a, kw)),
    # --- the whole sampler ---
    entry("sampling_params", "params a dict", "non-tensor", params=lambda device: {"seeds": full((B,), 0)(device)},
           error=TypeError, argument="params"),
    sampler("top_k -2 after a temperature", "range", temperature=floats([0.5, 2.0]), top_k=ids([5, -2]),
            error=ValueError, argument="top_k"),
    sampler("top_p 1.5", "range", temperature=floats([0.5, 2.0]), top_p=floats([1.5, 0.5]), error=ValueError,
            argument="top_p"),
    sampler("top_p NaN", "nan-param", min_p=floats([0.1, 0.1]), top_p=floats([NAN, 0.5]), error=ValueError,
            argument="top_p"),
    sampler("top_k float", "dtype", temperature=floats([0.5, 2.0]), top_k=floats([5.0, 5.0]), error=TypeError,
            argument="top_k"),
    sampler("seeds int32", "dtype", temperature=floats([0.5, 2.0]), seeds=ids([1, 2], torch.int32), error=TypeError,
            argument="seeds"),
    sampler("seeds None", "non-tensor", temperature=floats([0.5, 2.0]), seeds=None, error=TypeError, argument="seeds"),
    sampler("positions -1", "position", temperature=floats([0.5, 2.0]), positions=ids([0, -1]), error=ValueError,
            argument="positions"),
    sampler("num_logprobs above V", "cap", temperature=floats([0.5, 2.0]), num_logprobs=V + 1, error=ValueError,
            argument="num_logprobs"),
    sampler("num_logprobs a string", "non-tensor", num_logprobs="5", error=TypeError, argument="num_logprobs"),
    sampler("logprobs_mode unknown", "non-tensor", num_logprobs=1, logprobs_mode="raw", error=ValueError,
            argument="logprobs_mode"),
    sampler("temperature NaN", "nan-param", temperature=floats([NAN, 1.0]), error=ValueError, argument="temperature"),
    sampler("min_p -0.5", "range", temperature=floats([0.5, 2.0]), min_p=floats([-0.5, 0.1]), error=ValueError,
            argument="min_p"),
    sampler("bias ids without values", "group", logit_bias_ids=ids([[1], [2]]), temperature=floats([0.5, 2.0]),
            error=ValueError, argument="logit_bias_values"),
    sampler("stop ids without output_len", "group", stop_token_ids=ids([[1], [2]]), min_tokens=ids([1, 1]),
            error=ValueError, argument="output_len"),
    sampler("frequency 3 with a bias", "range", logit_bias_ids=ids([[1], [2]]),
            logit_bias_values=floats([[1.0], [1.0]]),
            frequency_penalty=floats([3.0, 0.0]), error=ValueError, argument="frequency_penalty"),
    sampler("bad word id V after penalties", "id-range", repetition_penalty=floats([1.5, 1.5]),
            bad_words=ids([[[V]], [[1]]]), error=ValueError, argument="bad_words"),
    sampler("allowed ids of another batch", "length", allowed_token_ids=ids([[1]]), error=ValueError,
            argument="allowed_token_ids"),
    sampler("logits on meta", "device", logits=on_meta(zeros_on(B, V)), error=ValueError,
            argument="logits"),
    sampler("an all-NaN row and a row masked whole", "non-finite-row", logits=floats([NAN_ROW, ramp()]),
            allowed_token_ids=ids([[-1], [3]]), stop_token_ids=ids([[-1], [3]]), min_tokens=ids([0, 1]),
            output_len=ids([0, 0]), min_p=floats([0.1, 0.1]), result=valid_rows([False, False])),
    sampler("frequency penalty alone is applied", "group", frequency_penalty=floats([2.0, 0.0]),
            output_token_ids=ids([[7, -1], [-1, -1]]), temperature=floats([0.0, 0.0]), result=sampled_ids([6, 7])),
    sampler("bad words with no history", "group", bad_words=ids([[[7, -1]], [[0, 7]]]), temperature=floats([0.0, 0.0]),
            result=sampled_ids([6, 7])),
]

TABLE: tuple[BadInput, ...] = tuple(ROWS)
