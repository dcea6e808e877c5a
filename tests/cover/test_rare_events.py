"""Rare events (issue 18): a sampler's draws of one row in large numbers, for faults that show
in a small fraction of draws (a rounding in a random-number path that draws a masked id, or
favours one id, at rates around 1e-7 to 1e-5 per draw). Row 0 of a drawn case of the record
(its filters as drawn, vocab <= min(MAX_VOCAB, RARE_ELEMENTS / draws), at least a quarter of
the entries -inf) is drawn
`rare_draws` times (per profile, samplecheck.harness.profiles.RARE_DRAWS: 2**20 under gate,
2**24 nightly): no draw outside the support, and no token far above its rate
(samplecheck.judging.rare_events states both checks and their power; docs/nightly.md the
rates each profile reaches). GPU only, in every profile: an example reads at most
RARE_ELEMENTS logits, about 3 s on one H200 (nightly run 31: 72 s for the 22 examples of the
11 passing combos), so the gate's 2**20 draws cost it a few seconds on 16 workers."""

import dataclasses
import functools

import pytest
import torch
from hypothesis import assume, given, settings, strategies as st

from samplecheck.harness.profiles import RARE_ELEMENTS
from samplecheck.harness.runner import prepare, reference, run
from samplecheck.inputs.drawing import draw_case, with_regression_examples
from samplecheck.inputs.strategies import within_vocab
from samplecheck.judging.rare_events import check_rare_events
from samplecheck.judging.stats import seed_from_id

pytestmark = pytest.mark.gpu

MAX_VOCAB = 2**15
NEG_INF_FRACTION = 0.25


def with_masked_entries(case):
    recipe = case.logits
    return dataclasses.replace(case, logits=dataclasses.replace(
        recipe, neg_inf_fraction=max(recipe.neg_inf_fraction, NEG_INF_FRACTION)))


@pytest.mark.matrix(dtypes=(torch.bfloat16,), layouts=("contig",), own_sampler=True)
@settings(max_examples=2)
@with_regression_examples
@given(data=st.data())
def test_rare_events(combo, device, budget, stat_alpha, rare_draws, request, data):
    cases = combo.info.cases(within_vocab(budget, min(MAX_VOCAB, RARE_ELEMENTS // rare_draws)))
    cases = cases.map(with_masked_entries)
    case = draw_case(data, combo, cases)
    placed, args = prepare(combo, case, device)
    original = placed.view.clone()
    law, support, required = combo.info.law(original, reference(combo, original, args), **args)
    assume(bool(torch.isfinite(law[0]).all()))  # no law claimed for this row (unresolved noise)
    seed = seed_from_id(f"{request.node.nodeid}/{case.logits.seed}")
    ids = combo.info.sample(functools.partial(run, combo), placed.view, args, 1, rare_draws, seed)[0]
    vocab = original.size(1)
    beyond = ids[(ids < 0) | (ids >= vocab)]
    assert beyond.numel() == 0, f"{combo.id} (seed {seed}): ids outside [0, {vocab}) drawn: {beyond[:10].tolist()}"
    verdict = check_rare_events(torch.bincount(ids, minlength=vocab), law[0], support[0], required[0], stat_alpha)
    assert not verdict.rejected, f"{combo.id} row 0 (seed {seed}): {verdict.describe()}"
