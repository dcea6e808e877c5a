"""The bad-input table: bad and edge inputs for every registry record, as data.

Each `BadInput` names a record (its call contract: positional logits, keyword arguments as
the record's backends take them), a category, `make(device) -> (args, kwargs)` and what the
contract promises: `error` + `field` (the caller's parameter the message must name), or
`result(output, args, kwargs)` (the documented result; raises AssertionError otherwise).
Inputs are 2 x 8 (interpreter-sized). docs/validation.md and docs/backends.md state the
rules the entries check.
"""

from dataclasses import dataclass
from typing import Callable

import torch

from samplecheck.kernels.sampling_params import SamplingBatch

B, V = 2, 8
NAN, INF = float("nan"), float("inf")


@dataclass(frozen=True)
class BadInput:
    kernel: str
    description: str
    category: str
    make: Callable[[str], tuple[tuple, dict]]
    error: type[Exception] | None = None
    field: str | None = None
    result: Callable | None = None


def other_device(device: str) -> str:
    """A device that is not the logits': meta next to CPU logits, the CPU next to CUDA ones."""
    return "meta" if device == "cpu" else "cpu"


def logits_on(device, *, rows=None, dtype=torch.float32):
    """B x V logits 0, 1, ..., V - 1 per row (row r shifted by r), or the given rows."""
    if rows is None:
        rows = [[float(c + r) for c in range(V)] for r in range(B)]
    return torch.tensor(rows, dtype=dtype, device=device)


def f32(values):
    return lambda device: torch.tensor(values, dtype=torch.float32, device=device)


def i64(values, dtype=torch.int64):
    return lambda device: torch.tensor(values, dtype=dtype, device=device)


def call(kernel, description, category, *, logits=None, error=None, field=None, result=None, **kwargs):
    """An entry whose kwargs are callables of the device (or plain values)."""
    def make(device):
        x = logits(device) if logits is not None else logits_on(device)
        return (x,), {k: v(device) if callable(v) else v for k, v in kwargs.items()}
    return BadInput(kernel, description, category, make, error, field, result)


def batch(description, category, *, error=None, field=None, result=None, logits=None, **fields):
    """A sampler entry: a SamplingBatch with seeds and positions 0 unless given."""
    def make(device):
        built = {"seeds": torch.zeros(B, dtype=torch.int64, device=device),
                 "positions": torch.zeros(B, dtype=torch.int64, device=device)}
        built.update({k: v(device) if callable(v) else v for k, v in fields.items()})
        x = logits(device) if logits is not None else logits_on(device)
        return (x,), {"params": SamplingBatch(**built)}
    return BadInput("sampling_params", description, category, make, error, field, result)


def bad_logits(kernel: str, **required) -> list[BadInput]:
    """The logits entries every record gets (with its required arguments)."""
    cases = [
        ("logits a list", "non-tensor", TypeError, lambda d: [[0.0] * V] * B),
        ("logits 1-D", "rank", ValueError, lambda d: torch.zeros(V, device=d)),
        ("logits int32", "dtype", TypeError, lambda d: torch.zeros(B, V, dtype=torch.int32, device=d)),
        ("logits on meta", "device", ValueError, lambda d: torch.zeros(B, V, device="meta")),
        ("logits column stride 2", "shape", ValueError, lambda d: torch.zeros(B, 2 * V, device=d)[:, ::2]),
    ]
    return [call(kernel, description, category, logits=maker, error=error, field="logits", **required)
            for description, category, error, maker in cases]


# --- documented results -----------------------------------------------------------------

def unchanged_except(expected_rows):
    """Result check for in-place ops: the returned logits equal `expected_rows` (NaN where NaN)."""
    def check(output, args, kwargs):
        expected = torch.tensor(expected_rows, dtype=output.dtype)
        torch.testing.assert_close(output.cpu(), expected, rtol=0, atol=0, equal_nan=True)
    return check


def sampled_ids(expected):
    def check(output, args, kwargs):
        ids = output if isinstance(output, torch.Tensor) else output.sampled
        assert ids.tolist() == expected, f"sampled {ids.tolist()}, documented {expected}"
    return check


def ids_in_range(output, args, kwargs):
    ids = output if isinstance(output, torch.Tensor) else output.sampled
    assert ((ids >= 0) & (ids < V)).all(), f"ids {ids.tolist()} outside [0, {V})"


def ramp(r=0):
    return [float(c + r) for c in range(V)]


NEG = -INF
NAN_ROW = [NAN] * V
NAN_AT_3 = [0.0, 1.0, 2.0, NAN, 4.0, 5.0, 6.0, 7.0]
TWO_INF = [0.0, INF, 2.0, 3.0, INF, 5.0, 6.0, 7.0]


def logits_rows(*rows):
    return lambda device: logits_on(device, rows=list(rows))


def valid_rows(expected):
    def check(output, args, kwargs):
        assert output.valid.tolist() == expected, f"valid {output.valid.tolist()}, documented {expected}"
        ids_in_range(output, args, kwargs)
    return check


def all_nan_logprobs(output, args, kwargs):
    assert output.logprobs.isnan().all(), f"logprobs {output.logprobs.tolist()}: documented all NaN"


def penalised_as_if(output_token_ids):
    """Penalties result: the same call with `output_token_ids` instead (the history rule)."""
    def check(output, args, kwargs):
        from samplecheck.kernels.penalties import apply_penalties
        fresh = logits_on(output.device.type)
        expected = apply_penalties(fresh, **{**kwargs, "output_token_ids": i64(output_token_ids)(output.device.type)})
        torch.testing.assert_close(output, expected, rtol=0, atol=0)
    return check


R1, R0, F0 = f32([1.0, 1.0]), f32([0.0, 0.0]), f32([0.0, 0.0])
PEN = dict(prompt_token_ids=i64([[1, -1], [2, 8]]), output_token_ids=i64([[3, -1], [4, 4]]),
           repetition_penalty=f32([1.2, 1.2]), frequency_penalty=f32([0.5, 0.5]), presence_penalty=f32([0.1, 0.1]))
WORDS = dict(bad_words=i64([[[1, 2], [5, -1]], [[3, -1], [-1, -1]]]), output_token_ids=i64([[1, -1], [2, 3]]))
GUMBEL = dict(seeds=i64([1, 2]), positions=i64([0, 1]))


def pen(**changes):
    return {**PEN, **changes}


def words(**changes):
    return {**WORDS, **changes}


def gum(**changes):
    return {**GUMBEL, **changes}


ROWS = [
    # --- logits, every record ---
    *bad_logits("temperature", temperature=f32([0.5, 2.0])),
    *bad_logits("min_p", min_p=f32([0.1, 0.2])),
    *bad_logits("top_k_top_p", k=i64([2, 3]), p=None),
    *bad_logits("softmax", temperature=None),
    *bad_logits("top_k_top_p_sample", k=i64([2, 3]), seed=7),
    *bad_logits("min_p_sample", min_p=f32([0.1, 0.2]), seed=7),
    *bad_logits("gumbel_sample", **GUMBEL),
    *bad_logits("logprobs", sampled=i64([0, 1]), num_logprobs=2),
    *bad_logits("penalties", **PEN),
    *bad_logits("bad_words", **WORDS),
    *bad_logits("logit_bias", allowed_token_ids=i64([[1, -1], [2, 3]])),
    # --- per-row parameters ---
    call("temperature", "temperature negative", "range", temperature=f32([0.5, -1.0]), error=ValueError,
         field="temperature"),
    call("temperature", "temperature NaN", "nan-param", temperature=f32([NAN, 1.0]), error=ValueError,
         field="temperature"),
    call("temperature", "temperature +inf", "nan-param", temperature=f32([INF, 1.0]), error=ValueError,
         field="temperature"),
    call("temperature", "temperature float64", "dtype", temperature=lambda d: torch.ones(B, dtype=torch.float64,
                                                                                       device=d),
         error=TypeError, field="temperature"),
    call("temperature", "temperature [B + 1]", "shape", temperature=f32([1.0, 1.0, 1.0]), error=ValueError,
         field="temperature"),
    call("temperature", "temperature on another device", "device",
         temperature=lambda d: torch.ones(B, device=other_device(d)), error=ValueError, field="temperature"),
    call("temperature", "temperature a list", "non-tensor", temperature=[1.0, 1.0], error=TypeError,
         field="temperature"),
    call("softmax", "softmax temperature 0", "range", temperature=f32([0.0, 1.0]), error=ValueError,
         field="temperature"),
    call("min_p", "min_p above 1", "range", min_p=f32([1.5, 0.1]), error=ValueError, field="min_p"),
    call("min_p", "min_p NaN", "nan-param", min_p=f32([NAN, 0.1]), error=ValueError, field="min_p"),
    call("min_p", "min_p int64", "dtype", min_p=i64([0, 0]), error=TypeError, field="min_p"),
    call("min_p", "min_p 2-D", "rank", min_p=f32([[0.1, 0.1]]), error=ValueError, field="min_p"),
    call("top_k_top_p", "k below -1", "range", k=i64([5, -2]), error=ValueError, field="k"),
    call("top_k_top_p", "k float32", "dtype", k=f32([5.0, 5.0]), error=TypeError, field="k"),
    call("top_k_top_p", "k on another device", "device", k=lambda d: torch.ones(B, dtype=torch.int64,
                                                                               device=other_device(d)),
         error=ValueError, field="k"),
    call("top_k_top_p", "p zero", "range", p=f32([0.0, 0.5]), error=ValueError, field="p"),
    call("top_k_top_p", "p NaN", "nan-param", p=f32([NAN, 0.5]), error=ValueError, field="p"),
    call("top_k_top_p", "p float64", "dtype", p=lambda d: torch.full((B,), 0.5, dtype=torch.float64, device=d),
         error=TypeError, field="p"),
    call("top_k_top_p", "p [B - 1]", "shape", p=f32([0.5]), error=ValueError, field="p"),
    # --- seeds and positions ---
    call("top_k_top_p_sample", "seed a string", "non-tensor", k=i64([2, 3]), seed="7", error=TypeError, field="seed"),
    call("top_k_top_p_sample", "seed 2**64", "seed", k=i64([2, 3]), seed=2**64, error=ValueError, field="seed"),
    call("min_p_sample", "seed below -2**63", "seed", min_p=f32([0.1, 0.1]), seed=-2**63 - 1, error=ValueError,
         field="seed"),
    call("min_p_sample", "seed 2**64 - 1", "seed", min_p=f32([0.1, 0.1]), seed=2**64 - 1, result=ids_in_range),
    call("gumbel_sample", "seeds None", "non-tensor", seeds=None, positions=i64([0, 1]), error=TypeError,
         field="seeds"),
    call("gumbel_sample", "seeds int32", "dtype", **gum(seeds=i64([1, 2], torch.int32)), error=TypeError,
         field="seeds"),
    call("gumbel_sample", "positions negative", "position", **gum(positions=i64([0, -1])), error=ValueError,
         field="positions"),
    call("gumbel_sample", "temperature negative", "range", **gum(temperature=f32([1.0, -0.5])), error=ValueError,
         field="temperature"),
    call("gumbel_sample", "vocab 0", "shape", logits=lambda d: torch.zeros(B, 0, device=d), **GUMBEL,
         error=ValueError, field="logits"),
    call("gumbel_sample", "extreme seeds and positions", "seed",
         **gum(seeds=i64([-2**63, 2**63 - 1]), positions=i64([2**62, 2**63 - 1])), result=ids_in_range),
    # --- logprobs ---
    call("logprobs", "sampled id V", "id-range", sampled=i64([0, V]), num_logprobs=1, error=ValueError,
         field="sampled"),
    call("logprobs", "sampled int32", "dtype", sampled=i64([0, 1], torch.int32), num_logprobs=1, error=TypeError,
         field="sampled"),
    call("logprobs", "num_logprobs above V", "cap", sampled=i64([0, 1]), num_logprobs=V + 1, error=ValueError,
         field="num_logprobs"),
    call("logprobs", "num_logprobs a float", "non-tensor", sampled=i64([0, 1]), num_logprobs=1.5, error=TypeError,
         field="num_logprobs"),
    call("logprobs", "num_logprobs True", "non-tensor", sampled=i64([0, 1]), num_logprobs=True, error=TypeError,
         field="num_logprobs"),
    # --- penalties ---
    call("penalties", "prompt_token_ids None", "non-tensor", **pen(prompt_token_ids=None), error=TypeError,
         field="prompt_token_ids"),
    call("penalties", "output id -2", "id-range", **pen(output_token_ids=i64([[3, -2], [4, 4]])), error=ValueError,
         field="output_token_ids"),
    call("penalties", "prompt id V + 1", "id-range", **pen(prompt_token_ids=i64([[1, V + 1], [2, 8]])),
         error=ValueError, field="prompt_token_ids"),
    call("penalties", "prompt ids float", "dtype", **pen(prompt_token_ids=f32([[1.0], [2.0]])), error=TypeError,
         field="prompt_token_ids"),
    call("penalties", "output ids 1-D", "rank", **pen(output_token_ids=i64([3, 4])), error=ValueError,
         field="output_token_ids"),
    call("penalties", "output ids of another batch", "length", **pen(output_token_ids=i64([[3], [4], [5]])),
         error=ValueError, field="output_token_ids"),
    call("penalties", "repetition NaN", "nan-param", **pen(repetition_penalty=f32([NAN, 1.0])), error=ValueError,
         field="repetition_penalty"),
    call("penalties", "repetition 0", "range", **pen(repetition_penalty=f32([0.0, 1.0])), error=ValueError,
         field="repetition_penalty"),
    call("penalties", "frequency +inf", "nan-param", **pen(frequency_penalty=f32([INF, 0.0])), error=ValueError,
         field="frequency_penalty"),
    call("penalties", "presence 2.5", "range", **pen(presence_penalty=f32([2.5, 0.0])), error=ValueError,
         field="presence_penalty"),
    call("penalties", "-1 in the middle of the output ids", "history",
         **pen(output_token_ids=i64([[3, -1, 5], [4, -1, 4]])), result=penalised_as_if([[3, -1, -1], [4, -1, -1]])),
    # --- bad words ---
    call("bad_words", "bad word id V", "id-range", **words(bad_words=i64([[[1, V]], [[3, -1]]])), error=ValueError,
         field="bad_words"),
    call("bad_words", "id after -1 within a word", "id-range", **words(bad_words=i64([[[1, -1, 2]], [[3, -1, -1]]])),
         error=ValueError, field="bad_words"),
    call("bad_words", "129 words", "cap", **words(bad_words=lambda d: torch.full((B, 129, 1), 1, device=d)),
         error=ValueError, field="bad_words"),
    call("bad_words", "1025 tokens a word", "cap", **words(bad_words=lambda d: torch.full((B, 1, 1025), -1, device=d)),
         error=ValueError, field="bad_words"),
    call("bad_words", "output_token_ids None", "non-tensor", **words(output_token_ids=None), error=TypeError,
         field="output_token_ids"),
    call("bad_words", "bad_words 2-D", "rank", **words(bad_words=i64([[1, 2], [3, 4]])), error=ValueError,
         field="bad_words"),
    call("bad_words", "-1 in the middle of the past", "history",
         **words(bad_words=i64([[[1, 2]], [[2, 3]]]), output_token_ids=i64([[0, -1, 1], [3, -1, 2]])),
         result=unchanged_except([ramp(0), ramp(1)])),
    # --- allowed / bias / min_tokens ---
    call("logit_bias", "allowed id V", "id-range", allowed_token_ids=i64([[1, V], [2, -1]]), error=ValueError,
         field="allowed_token_ids"),
    call("logit_bias", "allowed a list", "non-tensor", allowed_token_ids=[[1], [2]], error=TypeError,
         field="allowed_token_ids"),
    call("logit_bias", "1025 allowed ids", "cap", allowed_token_ids=lambda d: torch.full((B, 1025), -1, device=d),
         error=ValueError, field="allowed_token_ids"),
    call("logit_bias", "bias ids without values", "group", logit_bias_ids=i64([[1], [2]]), error=ValueError,
         field="logit_bias_values"),
    call("logit_bias", "bias values without ids", "group", logit_bias_values=f32([[1.0], [2.0]]), error=ValueError,
         field="logit_bias_ids"),
    call("logit_bias", "bias value NaN", "nan-param", logit_bias_ids=i64([[1], [2]]),
         logit_bias_values=f32([[NAN], [1.0]]), error=ValueError, field="logit_bias_values"),
    call("logit_bias", "bias id repeated", "id-range", logit_bias_ids=i64([[1, 1], [2, -1]]),
         logit_bias_values=f32([[1.0, 1.0], [1.0, 0.0]]), error=ValueError, field="logit_bias_ids"),
    call("logit_bias", "stop ids without min_tokens", "group", stop_token_ids=i64([[1], [2]]),
         output_len=i64([0, 0]), error=ValueError, field="min_tokens"),
    call("logit_bias", "min_tokens negative", "range", stop_token_ids=i64([[1], [2]]), min_tokens=i64([-1, 0]),
         output_len=i64([0, 0]), error=ValueError, field="min_tokens"),
    call("logit_bias", "output_len float", "dtype", stop_token_ids=i64([[1], [2]]), min_tokens=i64([1, 0]),
         output_len=f32([0.0, 0.0]), error=TypeError, field="output_len"),
    call("logit_bias", "129 stop ids", "cap", stop_token_ids=lambda d: torch.full((B, 129), -1, device=d),
         min_tokens=i64([1, 1]), output_len=i64([0, 0]), error=ValueError, field="stop_token_ids"),
    call("logit_bias", "NaN logit with a bias, allowed NaN", "non-finite-row",
         logits=logits_rows(NAN_AT_3, ramp(1)), allowed_token_ids=i64([[3, 4], [-1, -1]]),
         logit_bias_ids=i64([[3, -1], [0, -1]]), logit_bias_values=f32([[1.0, 0.0], [2.0, 0.0]]),
         result=unchanged_except([[NEG, NEG, NEG, NAN, 4.0, NEG, NEG, NEG], [3.0] + ramp(1)[1:]])),
    # --- non-finite rows (documented results) ---
    call("temperature", "NaN and +inf entries", "non-finite-row", logits=logits_rows(NAN_AT_3, TWO_INF),
         temperature=f32([2.0, 2.0]),
         result=unchanged_except([[x / 2 for x in NAN_AT_3], [x / 2 for x in TWO_INF]])),
    call("min_p", "one NaN; an all-NaN row", "non-finite-row", logits=logits_rows(NAN_AT_3, NAN_ROW),
         min_p=f32([0.5, 0.5]), result=unchanged_except([[NEG] * 7 + [7.0], [NEG] * V])),
    call("min_p", "+inf entries; NaN where min-p is off", "non-finite-row", logits=logits_rows(TWO_INF, NAN_AT_3),
         min_p=f32([0.1, 0.0]), result=unchanged_except([[NEG, INF, NEG, NEG, INF, NEG, NEG, NEG], NAN_AT_3])),
    call("min_p", "vocab 1: a NaN row beside a finite one", "non-finite-row",
         logits=lambda d: torch.tensor([[NAN], [2.0]], device=d), min_p=f32([0.5, 0.5]),
         result=unchanged_except([[NEG], [2.0]])),
    call("min_p", "vocab 0", "shape", logits=lambda d: torch.zeros(B, 0, device=d), min_p=f32([0.5, 0.5]),
         result=unchanged_except([[], []])),
    call("top_k_top_p", "top-k 5 with one NaN; all-NaN row", "non-finite-row", logits=logits_rows(NAN_AT_3, NAN_ROW),
         k=i64([5, 5]), result=unchanged_except([[NEG, NEG, 2.0, NEG, 4.0, 5.0, 6.0, 7.0], [NEG] * V])),
    call("top_k_top_p", "top-p with +inf entries; NaN where both are off", "non-finite-row",
         logits=logits_rows(TWO_INF, NAN_AT_3), k=i64([0, 0]), p=f32([0.9, 1.0]),
         result=unchanged_except([[NEG, INF, NEG, NEG, INF, NEG, NEG, NEG], NAN_AT_3])),
    call("top_k_top_p", "all -inf row", "non-finite-row", logits=logits_rows([NEG] * V, ramp()), k=i64([3, 0]),
         p=f32([0.5, 1.0]), result=unchanged_except([[NEG] * V, ramp()])),
    call("gumbel_sample", "all-NaN and all -inf rows", "non-finite-row", logits=logits_rows(NAN_ROW, [NEG] * V),
         **GUMBEL, result=sampled_ids([0, 0])),
    call("gumbel_sample", "+inf entries win, lowest first; NaN never", "non-finite-row",
         logits=logits_rows(TWO_INF, [NAN] * 7 + [0.0]), **GUMBEL, result=sampled_ids([1, 7])),
    call("logprobs", "NaN row and +inf row", "non-finite-row", logits=logits_rows(NAN_AT_3, TWO_INF),
         sampled=i64([0, 1]), num_logprobs=2, result=all_nan_logprobs),
    call("top_k_top_p_sample", "all-NaN row", "non-finite-row", logits=logits_rows(NAN_ROW, ramp()), k=i64([2, 2]),
         seed=3, result=lambda out, a, kw: sampled_ids([0])(out[:1], a, kw)),
    # --- the whole sampler ---
    BadInput("sampling_params", "params a dict", "non-tensor",
             lambda d: ((logits_on(d),), {"params": {"seeds": torch.zeros(B, dtype=torch.int64, device=d)}}),
             TypeError, "params"),
    batch("top_k -2 after a temperature", "range", temperature=f32([0.5, 2.0]), top_k=i64([5, -2]),
          error=ValueError, field="top_k"),
    batch("top_p 1.5", "range", temperature=f32([0.5, 2.0]), top_p=f32([1.5, 0.5]), error=ValueError, field="top_p"),
    batch("top_p NaN", "nan-param", min_p=f32([0.1, 0.1]), top_p=f32([NAN, 0.5]), error=ValueError, field="top_p"),
    batch("top_k float", "dtype", temperature=f32([0.5, 2.0]), top_k=f32([5.0, 5.0]), error=TypeError, field="top_k"),
    batch("seeds int32", "dtype", temperature=f32([0.5, 2.0]), seeds=i64([1, 2], torch.int32), error=TypeError,
          field="seeds"),
    batch("seeds None", "non-tensor", temperature=f32([0.5, 2.0]), seeds=None, error=TypeError, field="seeds"),
    batch("positions -1", "position", temperature=f32([0.5, 2.0]), positions=i64([0, -1]), error=ValueError,
          field="positions"),
    batch("num_logprobs above V", "cap", temperature=f32([0.5, 2.0]), num_logprobs=V + 1, error=ValueError,
          field="num_logprobs"),
    batch("num_logprobs a string", "non-tensor", num_logprobs="5", error=TypeError, field="num_logprobs"),
    batch("logprobs_mode unknown", "non-tensor", num_logprobs=1, logprobs_mode="raw", error=ValueError,
          field="logprobs_mode"),
    batch("temperature NaN", "nan-param", temperature=f32([NAN, 1.0]), error=ValueError, field="temperature"),
    batch("min_p -0.5", "range", temperature=f32([0.5, 2.0]), min_p=f32([-0.5, 0.1]), error=ValueError,
          field="min_p"),
    batch("bias ids without values", "group", logit_bias_ids=i64([[1], [2]]), temperature=f32([0.5, 2.0]),
          error=ValueError, field="logit_bias_values"),
    batch("stop ids without output_len", "group", stop_token_ids=i64([[1], [2]]), min_tokens=i64([1, 1]),
          error=ValueError, field="output_len"),
    batch("frequency 3 with a bias", "range", logit_bias_ids=i64([[1], [2]]), logit_bias_values=f32([[1.0], [1.0]]),
          frequency_penalty=f32([3.0, 0.0]), error=ValueError, field="frequency_penalty"),
    batch("bad word id V after penalties", "id-range", repetition_penalty=f32([1.5, 1.5]),
          bad_words=i64([[[V]], [[1]]]), error=ValueError, field="bad_words"),
    batch("allowed ids of another batch", "length", allowed_token_ids=i64([[1]]), error=ValueError,
          field="allowed_token_ids"),
    batch("logits on meta", "device", logits=lambda d: torch.zeros(B, V, device="meta"), error=ValueError,
          field="logits"),
    batch("an all-NaN row and a row masked whole", "non-finite-row", logits=logits_rows(NAN_ROW, ramp()),
          allowed_token_ids=i64([[-1], [3]]), stop_token_ids=i64([[-1], [3]]), min_tokens=i64([0, 1]),
          output_len=i64([0, 0]), min_p=f32([0.1, 0.1]), result=valid_rows([False, False])),
    batch("frequency penalty alone is applied", "group", frequency_penalty=f32([2.0, 0.0]),
          output_token_ids=i64([[7, -1], [-1, -1]]), temperature=f32([0.0, 0.0]), result=sampled_ids([6, 7])),
    batch("bad words with no history", "group", bad_words=i64([[[7, -1]], [[0, 7]]]), temperature=f32([0.0, 0.0]),
          result=sampled_ids([6, 7])),
]

TABLE: tuple[BadInput, ...] = tuple(ROWS)
