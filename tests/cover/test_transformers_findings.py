"""Minimal regression cases of the defects the transformers pack found in transformers' logits
processors (docs/findings-transformers.md, T1 to T6), each a strict xfail that turns red when
transformers changes the behaviour; the conventions the pack declares, each shown on a case
where the strict contract and transformers differ; and the pack's entry point itself. Each
case is hand-sized and calls the pack's adapter; skipped without transformers 5.24 or a later 5.x
(samplecheck.backends.transformers.unavailable)."""

import dataclasses

import pytest
import torch

from samplecheck.backends import transformers, transformers_calls as hf
from samplecheck.harness.runner import reference, run
from samplecheck.registry.matrix import RECORDS, Combo
from samplecheck.registry.records import PackUnavailable
from samplecheck.registry.semantics import validate

pytestmark = pytest.mark.skipif(transformers.unavailable() is not None, reason=str(transformers.unavailable()))
INF = float("inf")


def tensor(values, device, dtype=torch.float32):
    return torch.tensor(values, dtype=dtype, device=device)


def ids(values, device):
    return torch.tensor(values, dtype=torch.int64, device=device)


@pytest.mark.xfail(strict=True, reason="finding T1: PrefixConstrainedLogitsProcessor sets an all -inf allowlist to 0")
def test_t1_an_all_neg_inf_row_with_an_allowlist_stays_neg_inf(device):
    """Every logit -inf, ids 1 and 2 allowed: nothing to draw, the row unchanged (transformers: 0 at 1 and 2)."""
    out = hf.logit_bias(tensor([[-INF] * 4], device), allowed_token_ids=ids([[1, 2]], device))
    assert torch.equal(out, tensor([[-INF] * 4], device))


@pytest.mark.xfail(strict=True, reason="finding T1: PrefixConstrainedLogitsProcessor un-masks a stop id that "
                                       "min_new_tokens masked when it is the only allowed id")
def test_t1_a_stop_id_stays_masked_while_min_tokens_is_not_reached(device):
    """Id 2 is the only allowed id and a stop id, with 0 of 1 required new tokens: masked."""
    out = hf.logit_bias(tensor([[0.0, 1.0, 2.0]], device), allowed_token_ids=ids([[2]], device),
                        stop_token_ids=ids([[2]], device), min_tokens=ids([1], device), output_len=ids([0], device))
    assert bool(out.isneginf().all()), out.tolist()


@pytest.mark.xfail(strict=True, reason="finding T2: NoBadWordsLogitsProcessor adds -inf to a banned +inf logit: NaN")
def test_t2_a_banned_pos_inf_logit_becomes_neg_inf(device):
    out = hf.bad_words(tensor([[0.0, INF, 1.0]], device), bad_words=ids([[[1]]], device),
                       output_token_ids=ids([[-1]], device))
    assert out.tolist() == [[0.0, -INF, 1.0]]


@pytest.mark.xfail(strict=True, reason="finding T2: PrefixConstrainedLogitsProcessor adds -inf to a +inf logit "
                                       "outside the allowlist: NaN")
def test_t2_a_pos_inf_logit_outside_the_allowlist_becomes_neg_inf(device):
    out = hf.logit_bias(tensor([[0.0, INF, 1.0]], device), allowed_token_ids=ids([[0, 2]], device))
    assert out.tolist() == [[0.0, -INF, 1.0]]


T3_CALLS = {
    "generate top-p": lambda x, device: hf.top_k_top_p(x, None, tensor([0.5], device)),
    "continuous batching top-p": lambda x, device: hf.cb_top_k_top_p(x, None, tensor([0.5], device)),
    "generate min-p": lambda x, device: hf.min_p(x, tensor([0.5], device)),
}


@pytest.mark.parametrize("call", T3_CALLS)
@pytest.mark.xfail(strict=True, reason="finding T3: transformers' top-p and min-p mask nothing in a row holding +inf")
def test_t3_a_row_holding_pos_inf_keeps_only_its_pos_inf_entries(device, call):
    """+inf holds all the mass: top-p (any p) and min-p (any min_p > 0) keep exactly the +inf entries."""
    out = T3_CALLS[call](tensor([[INF, 0.0, 1.0]], device), device)
    assert out.tolist() == [[INF, -INF, -INF]]


@pytest.mark.xfail(strict=True, reason="finding T4: generate's softmax + torch.multinomial raises on a row with no "
                                       "finite distribution")
def test_t4_sampling_a_batch_with_an_all_neg_inf_row(device):
    """Row 0 has nothing to draw (the samplers give id 0 there), row 1 draws one of its ids."""
    if device.type == "cuda":
        pytest.skip("on CUDA torch.multinomial's device-side assert poisons the context; the generic properties' "
                    "pins (test_row_isolation, test_edge_values) see it there under fault isolation")
    out = hf.sample(tensor([[-INF, -INF, -INF], [0.0, 1.0, 2.0]], device), seed=0)
    assert out[0] == 0 and 0 <= out[1] < 3


@pytest.mark.xfail(strict=True, reason="finding T5: continuous batching's top-p masks the underflowing tokens of a "
                                       "top_p = 1 row beside a top-p row")
def test_t5_top_p_off_row_is_unchanged_beside_a_top_p_row(device):
    """Row 0 has p = 1 (off): it comes back bitwise unchanged, -200 included."""
    logits = tensor([[0.0, 1.0, -200.0], [0.0, 1.0, 2.0]], device)
    out = hf.cb_top_k_top_p(logits.clone(), None, tensor([1.0, 0.5], device))
    assert torch.equal(out[0], logits[0])


@pytest.mark.xfail(strict=True, reason="finding T6: on CUDA transformers multiplies by the fp32 reciprocal of a "
                                       "Python float temperature or penalty, which overflows below 2.9e-39")
def test_t6_a_tiny_temperature_or_penalty_gives_finite_logits(device):
    """T = 1e-40: 0 / T = 0 and 1e-3 / T = 1e37 (finite in fp32); r = 1e-40 on a 0 logit: 0."""
    if device.type != "cuda":
        pytest.skip("torch divides (IEEE) on CPU; the reciprocal is its CUDA kernel's")
    scaled = hf.temperature(tensor([[0.0, 1e-3]], device), tensor([1e-40], device))
    zeros = torch.zeros(1, device=device)
    penalised = hf.repetition_penalty(tensor([[0.0, 1.0]], device), prompt_token_ids=ids([[0]], device),
                                      output_token_ids=ids([[-1]], device), repetition_penalty=tensor([1e-40], device),
                                      frequency_penalty=zeros, presence_penalty=zeros)
    assert scaled[0, 0] == 0 and torch.isfinite(scaled).all() and penalised[0, 0] == 0, (scaled, penalised)


def judged(kernel: str, name: str, logits: torch.Tensor, args: dict, *, declared: bool) -> None:
    """The record's exact check of the pack's backend `name`, with its declarations or without
    them (the strict contract)."""
    backend = next(b for k, b in transformers.PACK if b.name == name)
    backend = backend if declared else dataclasses.replace(backend, semantics={})
    combo = Combo(RECORDS[kernel], backend, logits.dtype, "contig")
    combo.info.check(logits, run(combo, logits.clone(), args), reference(combo, logits, args), combo.id)


CONVENTIONS = {
    # min_p = 1 keeps the maximum's ties; exp(-2**-26) rounds to 1 in fp32, a probability tie.
    "min_p_softmax=fp32": ("min_p", "transformers_min_p", [[0.0, -(2.0**-26), -1.0]], {"min_p": [1.0]}),
    # Mass above the tied 1s is 0.53 < 0.6: both kept by value; the ascending cumsum keeps one.
    "top_p_boundary=strict_by_position": ("top_k_top_p", "transformers_top_k_top_p", [[2.0, 1.0, 1.0, 0.0]],
                                          {"k": None, "p": [0.6]}),
}


@pytest.mark.parametrize("convention", CONVENTIONS)
def test_a_declared_convention_is_what_transformers_does(device, convention):
    kernel, name, values, params = CONVENTIONS[convention]
    args = {key: None if value is None else tensor(value, device) for key, value in params.items()}
    judged(kernel, name, tensor(values, device), args, declared=True)
    with pytest.raises(AssertionError, match="kept set differs"):
        judged(kernel, name, tensor(values, device), args, declared=False)


def test_the_pack_declares_valid_backends_of_registered_records():
    pairs = transformers.pack()
    assert len({backend.name for _, backend in pairs}) == len(pairs)
    for kernel, backend in pairs:
        assert kernel in RECORDS
        validate(kernel, backend.semantics)
        assert callable(backend.resolve())


def test_the_pack_is_unavailable_without_transformers(monkeypatch):
    monkeypatch.setattr(transformers.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(PackUnavailable, match="transformers is not installed"):
        transformers.pack()


@pytest.mark.parametrize("version", ["5.17.0", "6.0.0", "4.57.1"])
def test_the_pack_is_unavailable_with_another_release(monkeypatch, version):
    monkeypatch.setattr(transformers.importlib.metadata, "version", lambda name: version)
    with pytest.raises(PackUnavailable, match=f"transformers {version} is installed"):
        transformers.pack()
