"""The min_p_softmax axis (samplecheck.registry.semantics): a probability-space min-p passes
only where it is declared, at the softmax dtype declared, and a bug outside the axis still
fails with it declared.

The implementations are plain torch, written here: drop p < min_p * max(p), p the row's
softmax computed in fp32 and stored in fp32 or in the logits' dtype. Cheap on CPU.
"""

import pytest
import torch
from hypothesis import given, settings, strategies as st

from samplecheck.harness.runner import prepare, reference
from samplecheck.inputs.strategies import BUDGETS
from samplecheck.registry.matrix import RECORDS, Combo
from samplecheck.registry.records import Backend
from samplecheck.registry.semantics import validate

FP32 = {"min_p_softmax": "fp32"}
LOGITS_DTYPE = {"min_p_softmax": "logits_dtype"}


def combo(semantics: dict, dtype=torch.float32, kernel="min_p") -> Combo:
    return Combo(RECORDS[kernel], Backend("declared", "unused:unused", semantics=semantics), dtype, "contig")


def judge(c: Combo, fn, logits: torch.Tensor, args: dict) -> None:
    """The record's exact check of fn's output (what test_oracle_equivalence asserts)."""
    original = logits.clone()
    c.info.check(original, fn(logits.clone(), **args), reference(c, original, args), c.id)


def probability_min_p(logits, min_p=None, *, store=None, drop_ties_at_one=False):
    """Min-p on probabilities: an fp32 softmax rounded to `store` (default fp32), then the
    product min_p * max(p) in that dtype; `drop_ties_at_one` compares with <= (a bug: at
    min_p = 1 it drops the row maximum). NaN and +inf follow the contract (NaN reads as -inf;
    a +inf row keeps its +inf entries), so only the comparison differs from it."""
    if min_p is None:
        return logits
    x = logits.float().nan_to_num(nan=float("-inf"), posinf=float("inf"))
    x = torch.where(x.isposinf().any(dim=-1, keepdim=True), torch.where(x.isposinf(), 0.0, float("-inf")), x)
    probs = torch.softmax(x, dim=-1).to(store or torch.float32)
    threshold = (min_p.to(probs.dtype)[:, None] * probs.amax(dim=-1, keepdim=True)).to(probs.dtype)
    drop = probs <= threshold if drop_ties_at_one else probs < threshold
    drop = (drop | logits.isnan()) & (min_p > 0)[:, None]
    return logits.masked_fill_(drop, float("-inf"))


def logits_dtype_min_p(logits, min_p=None):
    return probability_min_p(logits, min_p, store=logits.dtype)


# fp32: exp(-2**-26) rounds to 1, so the second entry's probability equals the maximum's.
# bf16: the two largest entries' probabilities (0.5005, 0.4995) both round to 0.5.
FP32_PROBABILITY_TIE = torch.tensor([[0.0, -(2.0**-26), -1.0], [0.0, -(2.0**-26), -1.0]])
BF16_PROBABILITY_TIE = torch.tensor([[0.0, -(2.0**-9), -8.0]], dtype=torch.bfloat16)
AT_ONE = {"min_p": torch.tensor([1.0, 1.0])}


def test_fp32_softmax_passes_only_when_declared():
    judge(combo(FP32), probability_min_p, FP32_PROBABILITY_TIE, AT_ONE)
    with pytest.raises(AssertionError, match="kept set differs"):
        judge(combo({}), probability_min_p, FP32_PROBABILITY_TIE, AT_ONE)


def test_half_softmax_passes_only_at_its_own_dtype():
    at_one = {"min_p": torch.tensor([1.0])}
    judge(combo(LOGITS_DTYPE, torch.bfloat16), logits_dtype_min_p, BF16_PROBABILITY_TIE, at_one)
    for undeclared in ({}, FP32):
        with pytest.raises(AssertionError, match="kept set differs"):
            judge(combo(undeclared, torch.bfloat16), logits_dtype_min_p, BF16_PROBABILITY_TIE, at_one)


def test_a_bug_outside_the_axis_still_fails():
    """Dropping the row maximum at min_p = 1 (a <= comparison) is no rounding of the softmax."""
    ties = torch.tensor([[2.0, 2.0, 1.0, 0.0], [0.5, 0.0, 0.5, -3.0]])
    with pytest.raises(AssertionError, match="kept set differs"):
        judge(combo(FP32), lambda x, **a: probability_min_p(x, **a, drop_ties_at_one=True), ties, AT_ONE)


def test_the_sampler_record_takes_the_axis():
    c = combo(FP32, kernel="min_p_sample")
    verdict = reference(c, FP32_PROBABILITY_TIE, {**AT_ONE, "seed": 0})
    assert verdict.ambiguous[:, 1].all() and not verdict.ambiguous[:, 2].any()


def test_declarations_are_validated():
    validate("min_p", LOGITS_DTYPE)
    with pytest.raises(ValueError, match="allowed values"):
        validate("min_p", {"min_p_softmax": "bf16"})
    with pytest.raises(ValueError, match="applies to min_p, min_p_sample"):
        validate("top_k_top_p", FP32)


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_probability_space_passes_on_drawn_cases(data):
    """Each variant, declared, on drawn cases of the record (thresholds from 1e-45 to 1, rows
    widened by temperature, half dtypes whose softmax underflows)."""
    dtype = data.draw(st.sampled_from([torch.float32, torch.bfloat16, torch.float16]))
    semantics, fn = data.draw(st.sampled_from([(FP32, probability_min_p), (LOGITS_DTYPE, logits_dtype_min_p)]))
    c = combo(semantics, dtype)
    placed, args = prepare(c, data.draw(c.info.cases(BUDGETS["cpu"])), torch.device("cpu"))
    judge(c, fn, placed.view.clone(), args)
