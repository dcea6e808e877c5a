"""Without sampling: the law a kernel's output induces against the oracle's law, both in fp64.

For every record with a law that its output shows (the softmax of a masking or value
kernel's output; a sampler's `induced_law`, e.g. the pipeline's Gumbel law of the processed
logits it returns), per row: no probability on an id outside the oracle's support, none
missing on an id it requires, and total variation and max |dp| within the bound the
oracle's own ambiguity implies: both laws agree up to normalisation on the required ids,
so TV <= p(open) + q(open), the two laws' mass on the ids that may but need not be kept
(0 for exact kernels), plus 1e-12 for fp64 rounding, plus the slack of values the oracle
admits within a stated distance (a declared approximate division:
`samplecheck.judging.laws.value_error_slack`). The tolerances behind those ambiguity
bands are per dtype in each record. Rows where the oracle claims no law (NaN: +inf or NaN
values or all -inf where the record states no sampler contract, or Gumbel scores beyond
`samplecheck.oracles.gumbel.LAW_MAX_SCORE`) are left to the exact value checks.
"""

import pytest
import torch
from hypothesis import given, strategies as st

from samplecheck.inputs.drawing import draw_case, with_regression_examples
from samplecheck.harness.runner import prepare, reference, run
from samplecheck.judging.laws import value_error_slack

pytestmark = pytest.mark.interpreter

FP64_SLACK = 1e-12


@pytest.mark.matrix(layouts=("contig",), output_law=True)
@with_regression_examples
@given(data=st.data())
def test_exact_distribution(combo, device, budget, data):
    case = draw_case(data, combo, combo.info.cases(budget))
    placed, args = prepare(combo, case, device)
    original = placed.view.clone()
    expected = reference(combo, original, args)
    law, support, required = combo.info.law(original, expected, **args)
    output = run(combo, placed.view, args)
    if combo.info.induced_law is not None:
        produced = combo.info.induced_law(output, args)
    else:
        produced = torch.softmax(output.to(torch.float64), dim=-1)
    rows = torch.isfinite(law).all(dim=-1)
    open_ids = support & ~required
    bound = (produced * open_ids).sum(dim=-1) + (law * open_ids).sum(dim=-1) + FP64_SLACK + value_error_slack(expected)
    no_law = (rows & ~torch.isfinite(produced).all(dim=-1)).nonzero().flatten().tolist()
    assert not no_law, (f"{combo.id} rows {no_law}: the output gives no distribution (NaN, +inf or all -inf) "
                        f"where the oracle has one")
    outside = (produced > 0) & ~support
    missing = (produced == 0) & required & (law > 0)
    differ = (rows & (outside | missing).any(dim=-1)).nonzero().flatten().tolist()
    if differ:
        row = differ[0]
        raise AssertionError(
            f"{combo.id} row {row} (of rows {differ}): kept set differs from the oracle: mass on ids "
            f"{outside[row].nonzero().flatten()[:5].tolist()} outside its support, none on required ids "
            f"{missing[row].nonzero().flatten()[:5].tolist()}")
    tv = 0.5 * (produced - law).abs().sum(dim=-1)
    max_dp = (produced - law).abs().amax(dim=-1)
    over = (rows & ((tv > bound) | (max_dp > bound))).nonzero().flatten().tolist()
    assert not over, (f"{combo.id} rows {over}: TV {tv[over].tolist()}, max|dp| {max_dp[over].tolist()} > bound "
                      f"{bound[over].tolist()}")
