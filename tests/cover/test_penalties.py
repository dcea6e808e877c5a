"""Penalties-specific checks the generic properties cannot express: the oracle's exact fp32
rounding of sums at midpoints (where rounding the fp64 sum would be off by an ulp), empty
id lists (vLLM #20484: a zero-size launch), and the kernel's three paths (pair compares or
keys sorted in the kernel for short lists, keys sorted on the host for long ones) giving the
same bits."""

import pytest
import torch
from hypothesis import given, strategies as st

from samplecheck.families.token_lists import FixedHistory, PenaltiesCase
from samplecheck.harness.runner import prepare, reference, run
from samplecheck.inputs.drawing import draw_case, skip_unless_accepted
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.registry.checks import assert_bitwise_equal

from samplecheck.oracles.penalties import round_sum_to_fp32

pytestmark = pytest.mark.interpreter

ULP = 2.0**-23  # fp32 spacing in [1, 2)
MAX32 = torch.finfo(torch.float32).max


@pytest.mark.parametrize("a, b, expected", [
    (1.0, ULP / 2 + 2.0**-60, 1.0 + ULP),          # fp64 sum is the midpoint, exact sum above it
    (1.0, ULP / 2 - 2.0**-60, 1.0),                 # ... below it
    (1.0, ULP / 2, 1.0),                            # an exact tie: to even
    (1.0 + ULP, ULP / 2, 1.0 + 2 * ULP),            # an exact tie: to even (up)
    (-1.0, -(ULP / 2 + 2.0**-60), -1.0 - ULP),      # negative side
    (MAX32, 2.0**103 - 2.0**60, MAX32),             # just below the overflow midpoint
    (MAX32, 2.0**103, float("inf")),                # at it: to even, i.e. inf
    (float("-inf"), 3.0, float("-inf")),
])
def test_round_sum_to_fp32(a, b, expected):
    got = round_sum_to_fp32(torch.tensor([a], dtype=torch.float64), torch.tensor([b], dtype=torch.float64))
    assert got.item() == expected


@pytest.mark.matrix(kernel="penalties", layouts=("contig",))
@pytest.mark.parametrize("prompt, output", [(0, 0), (0, 3), (4, 0)])
def test_empty_lists(combo, device, prompt, output):
    """An id list of width 0 is a no-op (no zero-size launch), and the other list alone
    still penalises: the oracle's result. Every penalty is on (a backend implementing only
    some of them, by its `accepts`, is skipped)."""
    lists = FixedHistory(prompt=(tuple(range(prompt)),), output=(tuple(range(output)),))
    case = PenaltiesCase(LogitsRecipe(batch=2, vocab=8, scale=2.0, seed=20484), lists, repetition=(2.0,),
                         frequency=(1.0,), presence=(1.0,))
    skip_unless_accepted(combo, case, "every penalty on")
    placed, args = prepare(combo, case, device)
    original = placed.view.clone()
    expected = reference(combo, original, args)
    combo.info.check(original, run(combo, placed.view, args), expected,
                     f"{combo.id}: {prompt} prompt, {output} output ids")


@pytest.mark.matrix(kernel="penalties", knob="pairs_max_work")
@given(data=st.data())
def test_every_path_gives_the_same_bits(combo, device, budget, data):
    """Every list through the pair kernel, the row-sort kernel and the host-sorted path: the
    same logits."""
    case = draw_case(data, combo, combo.info.cases(budget))
    placed, args = prepare(combo, case, device)
    (first, knobs), *others = combo.backend.paths.items()
    expected = run(combo, placed.view.clone(), {**args, **knobs})
    for path, knobs in others:
        assert_bitwise_equal(run(combo, placed.view.clone(), {**args, **knobs}), expected,
                             f"{combo.id}: {path} vs {first}")


@pytest.mark.matrix(kernel="penalties", knob="pairs_max_work", layouts=("contig",))
@pytest.mark.parametrize("knob", ["in_kernel_max_length", "pairs_max_work"])
def test_path_knobs_are_checked(combo, device, knob):
    """A path knob below 0 (or not an int) raises a ValueError naming it; 0 is accepted."""
    logits = torch.zeros(1, 4, dtype=combo.dtype, device=device)
    ids = torch.zeros(1, 1, dtype=torch.int64, device=device)
    one = torch.ones(1, device=device)
    args = {"prompt_token_ids": ids, "output_token_ids": ids, "repetition_penalty": one, "frequency_penalty": one,
            "presence_penalty": one}
    for value in (-1, 1.5):
        with pytest.raises(ValueError, match=knob):
            run(combo, logits.clone(), {**args, knob: value})
    run(combo, logits, {**args, knob: 0})
