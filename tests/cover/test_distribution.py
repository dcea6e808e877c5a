"""Sampling from a backend's output on bf16 and fp32 logits follows the oracle's law, computed
in fp64 from the same logits.

Per example and row, at alpha / rows (`samplecheck.judging.stats.SamplingPlan`): an exact support
check (no sample outside the oracle's kept set, ambiguous entries admitted), reachability
(every token above the plan's mass floor drawn at least once), and a G-test (remainder
bucket, <= 20 single-token bins) with the sample count planned for power >= 0.99 against
0.5% of the law's mass vanishing. Where the oracle admits several kept sets (ties cut by
position, a boundary band), the law is the one of the set the backend chose (`given_kept`). The generator seed derives from the test id and the case,
so a failure reproduces exactly. Rows where the oracle claims no law (NaN: a sampler's noise
that does not resolve at huge scores, `samplecheck.oracles.gumbel.noise_resolves`) are not checked; the exact
checks cover them.
"""

import functools

import pytest
import torch
from hypothesis import given, strategies as st

from samplecheck.inputs.drawing import draw_case, with_regression_examples
from samplecheck.harness.runner import prepare, reference, run
from samplecheck.judging.laws import condition_on_kept
from samplecheck.judging.stats import SamplingPlan, check_samples, seed_from_id

pytestmark = pytest.mark.interpreter

MAX_ROWS = 4


@pytest.mark.matrix(dtypes=(torch.bfloat16, torch.float32), layouts=("contig", "padded64"), sampled=True)
@with_regression_examples
@given(data=st.data())
def test_distribution(combo, device, budget, stat_alpha, request, data):
    case = draw_case(data, combo, combo.info.distribution_cases(budget))
    placed, args = prepare(combo, case, device)
    original = placed.view.clone()
    expected = reference(combo, original, args)
    law, support, required = combo.info.law(original, expected, **args)

    rows = min(original.size(0), MAX_ROWS)
    plan = SamplingPlan(alpha=stat_alpha / rows)
    seed = seed_from_id(f"{request.node.nodeid}/{case.logits.seed}")
    samples, output = draw_samples(combo, placed.view, args, rows, plan.samples, seed)
    for row in torch.isfinite(law[:rows]).all(dim=-1).nonzero().flatten().tolist():
        counts = torch.bincount(samples[row], minlength=original.size(1))
        row_law, rates = given_kept(law[row], support[row], required[row], counts,
                                    None if output is None else output[row], plan)
        verdict = check_samples(counts, row_law, support[row], required[row], plan, rates=rates)
        assert not verdict.rejected, f"{combo.id} row {row} (seed {seed}, n {plan.samples}): {verdict.describe()}"


def given_kept(law, support, required, counts, output, plan: SamplingPlan) -> tuple[torch.Tensor, bool]:
    """The row's law given the admissible kept set the backend chose, and whether its rates
    are determined. A masking kernel shows its choice in its output (kept: not -inf). A
    sampler shows it only through its draws: an ambiguous id of mass >= the plan's
    reachability floor is kept iff drawn (at the stated error rate); when the ambiguous ids
    below that floor hold more than the plan's `missing_mass`, the law is left undetermined
    and only support and reachability are tested."""
    if output is not None:
        return condition_on_kept(law, support, required, output > float("-inf")), True
    open_ids = support & ~required
    unresolved = float(law[open_ids & (law < plan.reach_floor)].sum())
    return condition_on_kept(law, support, required, counts > 0), unresolved <= plan.missing_mass


def draw_samples(combo, logits, args, rows: int, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """n draws per row and the output they were drawn from: the record's own sampler (output
    None), or multinomial over softmax(output)."""
    call = functools.partial(run, combo)
    if combo.info.sample is not None:
        return combo.info.sample(call, logits, args, rows, n, seed), None
    output = call(logits, args)
    sampled_law = torch.softmax(output[:rows].double(), dim=-1)
    bad_rows = (~torch.isfinite(sampled_law).all(dim=-1)).nonzero().flatten().tolist()
    assert not bad_rows, f"{combo.id}: rows {bad_rows} of the output give no valid distribution (NaN or all -inf)"
    gen = torch.Generator(device=logits.device).manual_seed(seed)
    return torch.multinomial(sampled_law, n, replacement=True, generator=gen), output
