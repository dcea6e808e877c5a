"""A batch of no rows (vLLM #20484: a zero-size grid is an invalid launch): a drawn case with
every per-row tensor of its arguments cut to 0 rows. The call returns (no launch error, no
division by the batch, no reduction over an empty tensor), keeps the record's in-place
contract, returns no rows, and agrees with the oracle on the same empty input (where the
backend implements the case at 0 rows: its `accepts`)."""

import dataclasses

import pytest
from hypothesis import given, settings, strategies as st

from samplecheck.harness.call_inputs import cut_rows
from samplecheck.harness.runner import prepare, reference, run
from samplecheck.inputs.drawing import draw_case, skip_unless_accepted
from samplecheck.registry.checks import output_tensors

pytestmark = pytest.mark.interpreter


@pytest.mark.matrix(layouts=("contig", "padded64"))
@settings(max_examples=2)
@given(data=st.data())
def test_empty_batch(combo, device, budget, data):
    case = draw_case(data, combo, combo.info.cases(budget))
    skip_unless_accepted(combo, dataclasses.replace(case, logits=dataclasses.replace(case.logits, batch=0)),
                         "a case of 0 rows")
    placed, args = prepare(combo, case, device)
    empty = placed.view[:0]
    empty_args = cut_rows(args, slice(0, 0), case.logits.batch)
    expected = reference(combo, empty.clone(), empty_args)
    output = run(combo, empty, empty_args)
    rows = [t.size(0) for t in output_tensors(output) if t.dim() >= 1]
    assert rows == [0] * len(rows), f"{combo.id}: a call on 0 rows returned tensors of {rows} rows"
    combo.info.check(empty.clone(), output, expected, f"{combo.id}: 0 rows")
