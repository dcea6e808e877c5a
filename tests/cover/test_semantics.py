"""Declared semantics relax only along their axis (samplecheck.registry.semantics).

For each axis with an oracle branch, a small torch implementation of a declared variant
(a) passes the record's exact check with the variant declared, and fails it undeclared
(the strict default stands); and (b) the same implementation with one bug outside the axis
still fails with the variant declared. Cheap on CPU: plain torch, small drawn cases.
"""

import dataclasses

import pytest
import torch
from hypothesis import given, settings, strategies as st

from samplecheck.harness.runner import prepare, reference
from samplecheck.inputs.strategies import BUDGETS
from samplecheck.kernels.logprobs import Logprobs
from samplecheck.kernels.top_k_top_p_torch import apply_top_k_top_p_torch
from samplecheck.registry.checks import assert_same_output
from samplecheck.registry.matrix import RECORDS, Combo, plug
from samplecheck.registry.records import Backend
from samplecheck.registry.semantics import AXES, describe, validate

EXACTLY_K = {"tie_policy": "exactly_k_lowest_index"}
VLLM_V1_PENALTIES = {"division": "reciprocal", "frequency_rounding": "two", "compute_dtype": "logits_dtype"}


def combo(kernel: str, semantics: dict, dtype=torch.float32) -> Combo:
    return Combo(RECORDS[kernel], Backend("declared", "unused:unused", semantics=semantics), dtype, "contig")


def judge(c: Combo, fn, logits: torch.Tensor, args: dict) -> None:
    """The record's exact check of fn's output (what test_oracle_equivalence asserts)."""
    original = logits.clone()
    c.info.check(original, fn(logits.clone(), **args), reference(c, original, args), c.id)


def exactly_k(logits, k=None, p=None, *, reverse=False, extra=0):
    """Top-k keeping exactly k values, ties by lowest id (highest with reverse), then our
    top-p on the survivors; `extra` keeps that many more (a bug)."""
    if k is not None:
        x = logits.flip(-1) if reverse else logits
        order = x.to(torch.float64).argsort(dim=-1, descending=True, stable=True)
        rank = torch.empty_like(order).scatter_(1, order, torch.arange(x.size(1)).expand_as(order))
        on = (k > 0) & (k < x.size(1))
        drop = (rank >= (k + extra)[:, None]) & on[:, None]
        logits.masked_fill_(drop.flip(-1) if reverse else drop, float("-inf"))
    return apply_top_k_top_p_torch(logits, None, p)


TIES = torch.tensor([[3.0, 2.0, 2.0, 2.0, 1.0, 0.0], [5.0, 5.0, 5.0, -1.0, 4.0, 5.0]])
K2 = {"k": torch.tensor([2, 3]), "p": None}


def test_tie_policy_declared_variant_passes_only_when_declared():
    judge(combo("top_k_top_p", EXACTLY_K), exactly_k, TIES, K2)
    judge(combo("top_k_top_p", {"tie_policy": "exactly_k_any"}), lambda x, **a: exactly_k(x, **a, reverse=True), TIES, K2)
    with pytest.raises(AssertionError, match="kept set differs"):
        judge(combo("top_k_top_p", {}), exactly_k, TIES, K2)
    with pytest.raises(AssertionError, match="kept set differs"):  # lowest index declared, highest kept
        judge(combo("top_k_top_p", EXACTLY_K), lambda x, **a: exactly_k(x, **a, reverse=True), TIES, K2)


def test_tie_policy_still_catches_a_wrong_count_and_a_top_p_bug():
    with pytest.raises(AssertionError, match="keeps exactly"):
        judge(combo("top_k_top_p", {"tie_policy": "exactly_k_any"}), lambda x, **a: exactly_k(x, **a, extra=1), TIES, K2)

    def top_p_drops_the_max(logits, k=None, p=None):
        out = exactly_k(logits, k, p)
        out[:, 0] = float("-inf")
        return out
    with pytest.raises(AssertionError, match="kept set differs"):
        judge(combo("top_k_top_p", EXACTLY_K), top_p_drops_the_max, TIES, {"k": torch.tensor([2, 3]),
                                                                          "p": torch.tensor([0.01, 0.5])})


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_tie_policy_variant_passes_on_drawn_cases(data):
    judge_drawn_case(data, "top_k_top_p", EXACTLY_K, exactly_k)


PROBABILITIES = {"top_k_values": "fp32_probabilities"}


def probability_top_k(logits, k=None, p=None, *, extra=0):
    """Top-k over fp32 softmax probabilities, every entry tied with the k-th probability kept
    (as FlashInfer's *_probs APIs see our softmax), then our top-p on the survivors; `extra`
    ranks the k-th that many places lower (a bug)."""
    if k is not None:
        probs = torch.softmax(logits.float(), dim=-1)
        on = (k > 0) & (k < logits.size(1))
        place = (torch.where(on, k + extra, 1) - 1).clamp(max=logits.size(1) - 1)
        kth = probs.sort(dim=-1, descending=True).values.gather(1, place[:, None].long())
        logits.masked_fill_((probs < kth) & on[:, None], float("-inf"))
    return apply_top_k_top_p_torch(logits, None, p)


# Row 0: 0.5 + 2**-24 and 0.5 get one fp32 probability (0.2350), so the second largest ties
# the third there; row 1: no such tie.
PROBABILITY_TIES = torch.tensor([[1.0, 0.5 + 2**-24, 0.5, 0.0], [3.0, 2.0, 1.0, 0.0]])


# Entries 120 and 130 below the max: both fp32 probabilities underflow to 0, so with k = 3 a
# top-k of probabilities keeps the fourth entry too (it ties the k-th at 0).
PROBABILITY_UNDERFLOW = torch.tensor([[0.0, -1.0, -120.0, -130.0]])


def test_probability_top_k_admits_ties_at_an_underflowing_kth_only_when_declared():
    k3 = {"k": torch.tensor([3]), "p": None}
    judge(combo("top_k_top_p", PROBABILITIES), probability_top_k, PROBABILITY_UNDERFLOW.clone(), k3)
    with pytest.raises(AssertionError, match="kept set differs"):
        judge(combo("top_k_top_p", {}), probability_top_k, PROBABILITY_UNDERFLOW.clone(), k3)


def test_probability_top_k_admits_fp32_probability_ties_only_when_declared():
    k2 = {"k": torch.tensor([2, 2]), "p": None}
    judge(combo("top_k_top_p", PROBABILITIES), probability_top_k, PROBABILITY_TIES, k2)
    with pytest.raises(AssertionError, match="kept set differs"):
        judge(combo("top_k_top_p", {}), probability_top_k, PROBABILITY_TIES, k2)
    with pytest.raises(AssertionError, match="kept set differs"):  # one distinct value too many
        judge(combo("top_k_top_p", PROBABILITIES), lambda x, **a: probability_top_k(x, **a, extra=1),
              PROBABILITY_TIES, k2)
    with pytest.raises(ValueError, match="keep_all_ties' only"):
        validate("top_k_top_p", {**PROBABILITIES, "tie_policy": "exactly_k_any"})


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_probability_top_k_passes_on_drawn_cases(data):
    judge_drawn_case(data, "top_k_top_p", PROBABILITIES, probability_top_k)


def judge_drawn_case(data, kernel: str, semantics: dict, implementation) -> None:
    """`implementation`, declaring `semantics`, judged on a case of the record drawn in fp32 or bf16."""
    c = combo(kernel, semantics, dtype=data.draw(st.sampled_from([torch.float32, torch.bfloat16])))
    case = data.draw(c.info.cases(BUDGETS["cpu"]))
    placed, args = prepare(c, case, torch.device("cpu"))
    judge(c, implementation, placed.view.clone(), args)


def vllm_v1_penalties(logits, *, prompt_token_ids, output_token_ids, repetition_penalty, frequency_penalty,
                      presence_penalty, prompt_counts_too=False):
    """vLLM V1's arithmetic (reciprocal, two roundings, in place in the logits' dtype), our
    implementation; `prompt_counts_too` counts prompt tokens for frequency (a bug)."""
    vocab = logits.size(1)

    def counts(ids):
        valid = (ids >= 0) & (ids < vocab)
        index = torch.where(valid, ids, vocab).long()
        return torch.zeros(ids.size(0), vocab + 1).scatter_add_(1, index, torch.ones_like(index, dtype=torch.float32))[:, :vocab]
    out, prompt = counts(output_token_ids), counts(prompt_token_ids)
    scale = torch.where((out + prompt) > 0, repetition_penalty[:, None], 1.0)
    logits *= torch.where(logits > 0, 1.0 / scale, scale)
    logits -= frequency_penalty[:, None] * (out + prompt if prompt_counts_too else out)
    logits -= presence_penalty[:, None] * (out > 0)
    return logits


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_penalties_arithmetic_model_passes_when_declared(data):
    judge_drawn_case(data, "penalties", VLLM_V1_PENALTIES, vllm_v1_penalties)


def _penalty_case():
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(4, 64, generator=gen) * 3
    ids = torch.randint(0, 64, (4, 12), generator=gen)
    return logits, {"prompt_token_ids": ids[:, :6], "output_token_ids": ids[:, 6:],
                    "repetition_penalty": torch.tensor([1.3, 0.7, 1.1, 2.9]),
                    "frequency_penalty": torch.tensor([0.3, -1.7, 0.9, 1.3]),
                    "presence_penalty": torch.tensor([0.1, 0.3, -0.7, 1.9])}


def test_penalties_model_differs_from_the_contract_and_a_counting_bug_is_caught():
    logits, args = _penalty_case()
    with pytest.raises(AssertionError):
        judge(combo("penalties", {}), vllm_v1_penalties, logits, args)
    with pytest.raises(AssertionError):
        judge(combo("penalties", VLLM_V1_PENALTIES), lambda x, **a: vllm_v1_penalties(x, **a, prompt_counts_too=True),
              logits, args)
    judge(combo("penalties", VLLM_V1_PENALTIES), vllm_v1_penalties, logits, args)


def test_approximate_division_admits_a_reciprocal_and_not_a_wrong_row():
    gen = torch.Generator().manual_seed(1)
    logits = torch.randn(3, 4096, generator=gen) * 7
    args = {"temperature": torch.tensor([0.3, 1.7, 0.0])}

    def reciprocal(x, temperature):
        return x.mul_(torch.where(temperature == 0, 1.0, 1.0 / temperature)[:, None])
    with pytest.raises(AssertionError, match="differ from the oracle"):
        judge(combo("temperature", {}), reciprocal, logits, args)
    judge(combo("temperature", {"division": "approximate"}), reciprocal, logits, args)

    def greedy_row_scaled(x, temperature):
        return x.mul_(1.0 / temperature.clamp(min=0.5)[:, None])
    with pytest.raises(AssertionError, match="differ from the oracle"):
        judge(combo("temperature", {"division": "approximate"}), greedy_row_scaled, logits, args)


def own_stream_gumbel(logits, *, seeds, positions, temperature=None, floor_neg_inf=False):
    """Gumbel-max with torch's generator keyed by (seed, position): another random stream.
    `floor_neg_inf` gives -inf entries a finite score (a bug: they can be drawn)."""
    x = logits.to(torch.float32)
    t = torch.ones(x.size(0)) if temperature is None else temperature
    ids = []
    for row in range(x.size(0)):
        s = x[row] / (t[row] if t[row] != 0 else 1.0)
        s = torch.where(s.isnan(), float("-inf"), s)
        if floor_neg_inf:
            s = s.clamp(min=-1e4)
        if t[row] != 0:
            gen = torch.Generator().manual_seed((int(seeds[row]) * 1000003 + int(positions[row])) % 2**63)
            u = torch.rand(x.size(1), generator=gen).clamp(min=2**-24)
            s = s + (-(-u.log()).log())
        ids.append(int(s.argmax()))
    return torch.tensor(ids, dtype=torch.int64)


def test_own_random_stream_is_judged_by_the_non_finite_and_greedy_rules():
    logits = torch.full((4, 50), float("-inf"))
    logits[:, 7] = -3.0
    logits[1, :20] = torch.linspace(-1, 1, 20)
    logits[2, 30:] = 2.0
    args = {"seeds": torch.tensor([1, 2, 3, 4]), "positions": torch.tensor([0, 5, 9, 2]),
            "temperature": torch.tensor([1e-5, 1.0, 0.0, 0.7])}
    with pytest.raises(AssertionError, match="does not admit"):
        judge(combo("gumbel_sample", {}), own_stream_gumbel, logits, args)
    judge(combo("gumbel_sample", {"random_stream": "own"}), own_stream_gumbel, logits, args)
    with pytest.raises(AssertionError, match="does not admit"):
        judge(combo("gumbel_sample", {"random_stream": "own"}),
              lambda x, **a: own_stream_gumbel(x, **a, floor_neg_inf=True), logits, args)


def test_declarations_are_validated_and_printed():
    with pytest.raises(ValueError, match="allowed values are keep_all_ties"):
        validate("top_k_top_p", {"tie_policy": "first_k"})
    with pytest.raises(ValueError, match="applies to"):
        validate("min_p", {"tie_policy": "exactly_k_any"})
    with pytest.raises(ValueError, match="unknown"):
        validate("top_k_top_p", {"ties": "exactly_k_any"})
    assert describe({"tie_policy": "keep_all_ties", "random_stream": "own"}) == "random_stream=own"
    assert all(axis.default == axis.values[0] for axis in AXES.values())
    # The default declaration gives back the record itself: strict behaviour unchanged.
    assert combo("top_k_top_p", {}).info is RECORDS["top_k_top_p"]
    assert combo("top_k_top_p", {"tie_policy": "keep_all_ties"}).info is RECORDS["top_k_top_p"]


def test_plug_rejects_a_bad_declaration(monkeypatch):
    monkeypatch.setattr("samplecheck.registry.matrix.REGISTRY", dict(RECORDS))
    bad = dataclasses.replace(Backend("x", "unused:unused"), semantics={"division": "reciprocal"})
    with pytest.raises(ValueError, match="applies to temperature, penalties"):
        plug([("min_p", bad)], only=False)


def test_summation_order_admits_last_place_drift_across_layouts_and_nothing_else():
    gen = torch.Generator().manual_seed(3)
    values = torch.randn(4, 6, generator=gen) - 5
    same = Logprobs(torch.arange(24).view(4, 6), values, torch.tensor([1, 2, 3, 4]))
    drift = same._replace(logprobs=torch.nextafter(values, torch.zeros_like(values)))
    declared = combo("logprobs", {"layout_invariance": "summation_order"})
    assert_same_output(declared.info, drift, same, "1 ulp", vocab=151936)
    with pytest.raises(AssertionError, match="differ bitwise"):
        assert_same_output(combo("logprobs", {}).info, drift, same, "1 ulp, undeclared", vocab=151936)
    for bug in (same._replace(logprobs=values + 1e-4), same._replace(ranks=same.ranks + 1),
                same._replace(token_ids=same.token_ids.flip(-1))):
        with pytest.raises(AssertionError):
            assert_same_output(declared.info, bug, same, "a bug outside the axis", vocab=151936)
