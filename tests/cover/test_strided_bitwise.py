"""A strided view gives bitwise the output of its contiguous copy, and its gaps stay untouched."""

import pytest
import torch
from hypothesis import given, strategies as st

from samplecheck.harness.runner import prepare, run
from samplecheck.inputs.drawing import draw_case, with_regression_examples
from samplecheck.registry.checks import assert_bitwise_equal, assert_same_output
from samplecheck.registry.layouts import LAYOUTS

pytestmark = pytest.mark.interpreter


@pytest.mark.matrix(layouts=tuple(layout for layout in LAYOUTS if layout != "contig"))
@with_regression_examples
@given(data=st.data())
def test_strided_bitwise(combo, device, budget, data):
    case = draw_case(data, combo, combo.info.cases(budget))
    placed, args = prepare(combo, case, device)
    contiguous = placed.view.clone(memory_format=torch.contiguous_format)  # a copy even when the view is dense
    gaps_before = placed.gap_bytes().clone()
    expected = run(combo, contiguous, args)
    output = run(combo, placed.view, args)
    assert_same_output(combo.info, output, expected, f"{combo.id}: strided vs contiguous output", case.logits.vocab)
    assert_bitwise_equal(placed.gap_bytes(), gaps_before, f"{combo.id}: gap bytes after the call")
