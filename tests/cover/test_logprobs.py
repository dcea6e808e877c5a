"""Logprobs-specific properties the generic templates cannot express.

- Ranks under ties: on tie-heavy rows with the sampled token at a tied value, the rank is
  exactly count(x >= x_sampled), so every tie counts against the sampled token.
- num_logprobs = -1 is the whole log_softmax: columns 1..V are ids 0..V-1 and their values
  are the fp64 log_softmax within `samplecheck.oracles.logprobs.error_bound` (also at V = 262144, the
  vllm#46746 size, on a strided bf16 row).
- Gather-step invariance: `gather_block` 1024 and 256 give bitwise the same outputs. Only
  the gather step is a parameter: the sum's block sets the fp32 summation order, so it may
  change the last bits legitimately.
- Log-sum-exp consistency: the exp of the whole-vocab output sums to 1 within the
  softmax-weighted error bound.
- All -inf rows: NaN in every column and rank V, neighbours as the oracle says.
- Unchecked, a sampled id outside [0, V) is never read: its column is NaN and its rank 0,
  whatever the memory beside the row holds (docs/validation.md); on the backends declaring
  `guard_flag`, which take part in samplecheck's unchecked mode (a plug-in is not asked to).

The tests that write their case out run where the backend implements it (its `accepts`).

Parametrized over the logprobs record's combos (contiguous layout) of whatever backend is
registered or plugged (`--sc-mutant`, `--sc-backend`); skipped when the record is absent.
"""

import dataclasses

import pytest
import torch
from hypothesis import given, strategies as st

from samplecheck.families.logprobs import LogprobsCase, logprobs_cases
from samplecheck.harness.runner import prepare, reference, run
from samplecheck.inputs.drawing import draw_case, skip_unless_accepted
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.inputs.strategies import logits_recipes
from samplecheck.judging.memory import peak_extra_bytes, stated_bound
from samplecheck.kernels.validation import unchecked_values
from samplecheck.oracles.logprobs import error_bound
from samplecheck.registry.checks import assert_outputs_bitwise
from samplecheck.registry.layouts import place

pytestmark = [pytest.mark.interpreter, pytest.mark.matrix(kernel="logprobs", layouts=("contig",))]


def _scaled_assert(actual: torch.Tensor, expected: torch.Tensor, bound: torch.Tensor, what: str) -> None:
    """|actual - expected| <= bound elementwise (NaN matches NaN, infinities must be equal)."""
    torch.testing.assert_close(actual.double() / bound, expected / bound, rtol=0, atol=1, equal_nan=True,
                               msg=lambda m: f"{what} (values divided by the admissible error):\n{m}")


@given(data=st.data())
def test_ranks_under_ties(combo, device, budget, data):
    # Four levels and V >= 5: every row has a value held by several entries (pigeonhole),
    # which "tie" picks (row 0 and every row cycling back to it).
    recipes = logits_recipes(budget).filter(lambda r: r.vocab >= 5).map(
        lambda r: dataclasses.replace(r, family="ties", neg_inf_fraction=0.0))
    picks = st.lists(st.sampled_from(("tie", "max", "min")), max_size=3).map(lambda p: ("tie", *p))
    case = draw_case(data, combo, st.builds(LogprobsCase, recipes, st.just(0), picks))
    placed, args = prepare(combo, case, device)
    x = placed.view.to(torch.float64)
    chosen = x.gather(1, args["sampled"][:, None])
    tie_rows = torch.arange(x.size(0), device=x.device) % len(case.picks) == 0
    assert bool(((x == chosen).sum(dim=1) >= 2)[tie_rows].all()), "test setup: 'tie' rows must sample a tied value"
    output = run(combo, placed.view, args)
    torch.testing.assert_close(output.ranks, (x >= chosen).sum(dim=1), rtol=0, atol=0,
                               msg=lambda m: f"{combo.id}: ranks on tied rows are not count(x >= x_sampled): {m}")


def _assert_whole_log_softmax(combo, case, device) -> None:
    placed, args = prepare(combo, case, device)
    original = placed.view.clone()
    output = run(combo, placed.view, args)
    expected = reference(combo, original, args)
    batch, vocab = original.shape
    assert tuple(output.logprobs.shape) == (batch, vocab + 1), f"{combo.id}: shape {tuple(output.logprobs.shape)}"
    assert torch.equal(output.token_ids[:, 1:], torch.arange(vocab, device=device).expand(batch, vocab)), (
        f"{combo.id}: num_logprobs=-1 columns 1..V are not ids 0..V-1")
    _scaled_assert(output.logprobs[:, 1:], expected.log_probs, error_bound(expected, expected.log_probs),
                   f"{combo.id}: num_logprobs=-1 vs the fp64 log_softmax")


@given(data=st.data())
def test_whole_vocab_is_log_softmax(combo, device, budget, data):
    case = draw_case(data, combo, logprobs_cases(budget).map(lambda c: dataclasses.replace(c, num_logprobs=-1)))
    _assert_whole_log_softmax(combo, case, device)


@pytest.mark.matrix(dtypes=(torch.bfloat16,))
def test_whole_vocab_at_262144(combo, device):
    """vllm#46746: n = V = 262144 on a strided row (a next_pow2(n + 1) tile is 524288 lanes)."""
    case = LogprobsCase(LogitsRecipe(batch=1, vocab=262144, family="randn", scale=3.0, seed=46746), -1, (0.5,))
    skip_unless_accepted(combo, case, "num_logprobs = V = 262144")
    _assert_whole_log_softmax(dataclasses.replace(combo, layout="stride+37"), case, device)


@pytest.mark.gpu
@pytest.mark.matrix(dtypes=(torch.bfloat16,))
def test_whole_vocab_memory_b64_v262144(combo, device):
    """The issue's size: num_logprobs = -1 at B = 64, V = 262144 completes, and allocates no
    more than the stated bound (the [64, 262145] fp32 + int64 outputs, ~201 MB, the ranks and
    the vocab arange; no [B, V] scratch besides the output)."""

    case = LogprobsCase(LogitsRecipe(batch=64, vocab=262144, family="randn", scale=3.0, seed=46746), -1, (0.5,))
    skip_unless_accepted(combo, case, "num_logprobs = V = 262144")
    placed, args = prepare(combo, case, device)
    call = combo.backend.resolve()
    call(placed.view, **args)  # compile outside the measurement
    result, extra = peak_extra_bytes(lambda: call(placed.view, **args))
    assert result.logprobs.shape == (64, 262145)
    bound = stated_bound(combo, placed.view, args)
    assert extra <= bound, f"{combo.id}: allocated {extra} bytes, stated bound {bound}"


@pytest.mark.matrix(dtypes=(torch.float32, torch.bfloat16), knob="gather_block")
@given(data=st.data())
def test_gather_block_invariance(combo, device, budget, data):
    cases = logprobs_cases(budget, max_vocab=2048).map(
        lambda c: c if c.num_logprobs is not None else dataclasses.replace(c, num_logprobs=-1))
    case = draw_case(data, combo, cases)
    placed, args = prepare(combo, case, device)
    wide = run(combo, placed.view, {**args, "gather_block": 1024})
    narrow = run(combo, placed.view, {**args, "gather_block": 256})
    assert_outputs_bitwise(narrow, wide, f"{combo.id}: gather_block 256 vs 1024")


@given(data=st.data())
def test_whole_vocab_sums_to_one(combo, device, budget, data):
    case = draw_case(data, combo, logprobs_cases(budget).map(lambda c: dataclasses.replace(c, num_logprobs=-1)))
    placed, args = prepare(combo, case, device)
    original = placed.view.clone()
    output = run(combo, placed.view, args)
    expected = reference(combo, original, args)
    total = output.logprobs[:, 1:].double().exp().sum(dim=1)
    # |sum exp(lp) - 1| <= sum p_i (e^{bound_i} - 1): each entry within its bound (fp64 sum).
    slack = (expected.log_probs.exp() * torch.expm1(error_bound(expected, expected.log_probs))).sum(dim=1)
    _scaled_assert(total, torch.ones_like(total), slack, f"{combo.id}: sum of exp(logprobs) over the vocab")


@pytest.mark.parametrize("num_logprobs", [0, 4, -1])
def test_all_neg_inf_row(combo, device, num_logprobs):
    """An all -inf row (between two ordinary ones, over two sum blocks): NaN in every column,
    rank V; the other rows match the oracle."""
    case = LogprobsCase(LogitsRecipe(batch=3, vocab=1500, family="randn", scale=3.0, seed=7), num_logprobs,
                        ("max", 0.5, "min"))
    skip_unless_accepted(combo, case, f"num_logprobs = {num_logprobs}")
    placed, args = prepare(combo, case, device)
    placed.view[1] = float("-inf")
    original = placed.view.clone()
    output = run(combo, placed.view, args)
    assert bool(output.logprobs[1].isnan().all()), f"{combo.id}: all -inf row logprobs {output.logprobs[1]}"
    assert int(output.ranks[1]) == 1500, f"{combo.id}: all -inf row rank {int(output.ranks[1])}, expected V"
    combo.info.check(original, output, reference(combo, original, args), combo.id)


@pytest.mark.matrix(guard_flag=True)
def test_sampled_outside_the_vocab_is_never_read(combo, device):
    """Rows of 0..7 in a padded64 buffer whose gaps hold -99 (below every entry, so a misread
    counts the whole row in the rank); sampled ids V, -1 (row 1: the previous row's gap lies
    before it) and V + 8 (inside the gap)."""
    values = torch.arange(8, device=device).expand(3, 8).to(combo.dtype)
    logits = place(values, "padded64", -99.0).view
    with unchecked_values():
        output = run(combo, logits, {"sampled": torch.tensor([8, -1, 16], device=device), "num_logprobs": 1})
    assert bool(output.logprobs[:, 0].isnan().all()), f"{combo.id}: sampled logprobs {output.logprobs[:, 0].tolist()}"
    assert output.ranks.tolist() == [0, 0, 0], f"{combo.id}: ranks {output.ranks.tolist()}, expected 0"
