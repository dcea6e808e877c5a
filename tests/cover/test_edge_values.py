"""The edge values of logits on every backend of every record (docs/backends.md, "Edge
values"): rows holding NaN, +inf or -inf, each a whole row or one entry of an otherwise finite
row (placed at an id the row's lists name, at the row's maximum, or anywhere:
samplecheck.inputs.edge_rows), written into up to three rows of a drawn case, against the
oracle (samplecheck.harness.edge_check). Drawn cases never hold NaN or +inf, and -inf only as
a share of the entries: each shape here is drawn on purpose. A backend that declares
`nan_policy: row_unspecified` has its rows holding NaN left unjudged (its other rows are
judged). tests/cover/test_edge_values_power.py shows what it catches."""

import pytest
from hypothesis import event, given, strategies as st

from samplecheck.harness.edge_check import check_edge_rows
from samplecheck.inputs.drawing import draw_case
from samplecheck.inputs.edge_rows import edge_rows

pytestmark = pytest.mark.interpreter


def finite_cases(combo, budget):
    """The record's cases with no drawn -inf share: an edge entry's row is otherwise finite."""
    return combo.info.cases(budget).filter(lambda c: c.logits.neg_inf_fraction == 0)


@pytest.mark.matrix(layouts=("contig",))
@given(data=st.data())
def test_edge_values(combo, device, budget, data):
    case = draw_case(data, combo, finite_cases(combo, budget))
    for edge in check_edge_rows(combo, case, data.draw(edge_rows(), label="edge rows"), device).values():
        event(f"edge: {edge.label}")
