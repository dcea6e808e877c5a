"""A row's output depends only on its own logits and parameters: poisoning one row (NaN,
+inf, all -inf or the dtype's max) leaves every other row bitwise unchanged, and the call
is deterministic (two runs on the same input agree bitwise)."""

import pytest
import torch
from hypothesis import given, strategies as st

from samplecheck.judging.checks import assert_outputs_bitwise, assert_same_output, output_rows
from samplecheck.inputs.drawing import draw_case
from samplecheck.harness.runner import prepare, run

pytestmark = pytest.mark.interpreter

POISON_ROWS = ("nan", "+inf", "-inf", "max")


def poison_row(logits: torch.Tensor, row: int, kind: str) -> None:
    value = {"nan": float("nan"), "+inf": float("inf"), "-inf": float("-inf"),
             "max": torch.finfo(logits.dtype).max}[kind]
    logits[row].fill_(value)


@pytest.mark.matrix(layouts=("contig", "padded64"))
@given(data=st.data())
def test_row_isolation(combo, device, budget, data):
    case = draw_case(data, combo, combo.info.cases(budget).filter(lambda c: c.logits.batch >= 2))
    row = case.logits.seed % case.logits.batch
    kind = POISON_ROWS[(case.logits.seed // case.logits.batch) % len(POISON_ROWS)]
    placed, args = prepare(combo, case, device)
    poisoned = placed.view.clone()
    poison_row(poisoned, row, kind)
    clean = run(combo, placed.view, args)
    dirty = run(combo, poisoned, args)
    others = [r for r in range(case.logits.batch) if r != row]
    assert_same_output(combo.info, output_rows(dirty, others), output_rows(clean, others),
                       f"{combo.id}: rows {others} (positions below index this list) beside a {kind} row {row}",
                       case.logits.vocab)


@pytest.mark.matrix(layouts=("contig",))
@given(data=st.data())
def test_deterministic(combo, device, budget, data):
    case = draw_case(data, combo, combo.info.cases(budget))
    placed, args = prepare(combo, case, device)
    again = placed.view.clone()
    first = run(combo, placed.view, args)
    second = run(combo, again, args)
    assert_outputs_bitwise(second, first, f"{combo.id}: second run on the same input")
