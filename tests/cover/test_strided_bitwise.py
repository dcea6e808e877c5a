"""A strided view gives bitwise the output of its contiguous copy, and its gaps stay untouched:
on the drawn logits, and on the same logits with each row's maximum moved to an end of the row
(`maxima_at_row_ends`), where a kernel that reads a row at a wrong offset or stride (a window
shifted by the gaps of the rows before) misses the row's maximum or takes the row before's."""

import pytest
import torch
from hypothesis import given, strategies as st

from samplecheck.harness.runner import prepare, run
from samplecheck.inputs.drawing import draw_case, with_regression_examples
from samplecheck.registry.checks import assert_bitwise_equal, assert_same_output
from samplecheck.registry.layouts import LAYOUTS

pytestmark = pytest.mark.interpreter

STRIDED = tuple(layout for layout in LAYOUTS if layout != "contig")


def maxima_at_row_ends(values: torch.Tensor) -> torch.Tensor:
    """`values` with each row's first maximum (NaN counting as the largest) swapped with its
    last entry in even rows and its first entry in odd rows: each row keeps its values, and
    a row's maximum sits next to the row before's, across the gap between them."""
    batch, vocab = values.shape
    if not values.numel():
        return values.clone()
    rows = torch.arange(batch, device=values.device)[:, None]
    ends = torch.where(rows % 2 == 0, vocab - 1, 0)
    top = values.float().argmax(dim=1, keepdim=True)
    moved = values.clone()
    moved.scatter_(1, ends, values.gather(1, top))
    moved.scatter_(1, top, values.gather(1, ends))
    return moved


def check_strided(combo, case, placed, args) -> None:
    contiguous = placed.view.clone(memory_format=torch.contiguous_format)  # a copy even when the view is dense
    gaps_before = placed.gap_bytes().clone()
    expected = run(combo, contiguous, args)
    output = run(combo, placed.view, args)
    assert_same_output(combo.info, output, expected, f"{combo.id}: strided vs contiguous output", case.logits.vocab)
    assert_bitwise_equal(placed.gap_bytes(), gaps_before, f"{combo.id}: gap bytes after the call")


@pytest.mark.matrix(layouts=STRIDED)
@with_regression_examples
@given(data=st.data())
def test_strided_bitwise(combo, device, budget, data):
    case = draw_case(data, combo, combo.info.cases(budget))
    placed, args = prepare(combo, case, device)
    check_strided(combo, case, placed, args)


@pytest.mark.matrix(layouts=STRIDED)
@given(data=st.data())
def test_strided_bitwise_maxima_at_row_ends(combo, device, budget, data):
    case = draw_case(data, combo, combo.info.cases(budget))
    placed, args = prepare(combo, case, device)
    placed.view.copy_(maxima_at_row_ends(placed.view))
    check_strided(combo, case, placed, args)
