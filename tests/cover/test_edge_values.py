"""The edge values of logits on every backend of every record (docs/backends.md, "Edge
values"): rows holding NaN, +inf or -inf, each a whole row or one entry of an otherwise finite
row (placed at an id the row's lists name, at the row's maximum, or anywhere:
samplecheck.inputs.edge_rows), written into up to three rows of a drawn case, against the
oracle (samplecheck.harness.edge_check). Drawn cases never hold NaN or +inf, and -inf only as
a share of the entries: each shape here is drawn on purpose. The record's regression examples
that name this property (a regime a few drawn examples may miss) also take fixed edge rows:
each edge value as one entry at a row's maximum (what top-k, top-p and min-p rank first) and
anywhere, and as whole rows. The drawn edge rows also run at each launch path a backend
declares (`test_edge_values_on_each_launch_path`). A backend that declares
`nan_policy: row_unspecified` has its rows holding NaN left unjudged (its other rows are
judged). tests/cover/test_edge_values_power.py shows what it catches."""

import pytest
from hypothesis import event, given, strategies as st

from samplecheck.harness.edge_check import check_edge_rows
from samplecheck.inputs.drawing import accepted, draw_case
from samplecheck.inputs.edge_rows import EdgeRow, edge_rows
from samplecheck.registry import catalog
from samplecheck.tests.cover.launch_paths import on_each_path

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


@pytest.mark.matrix(layouts=("contig",), launch_paths=True)
@given(data=st.data())
def test_edge_values_on_each_launch_path(combo, device, budget, data):
    """The drawn edge rows in the drawn case moved to each launch path the backend declares on
    this device (`Backend.path_shapes`, given `Backend.path_parameters`; the path taken is
    asserted first): drawn shapes reach a GPU's split paths only by chance."""
    case = draw_case(data, combo, finite_cases(combo, budget))
    edges = data.draw(edge_rows(), label="edge rows")
    for _, at_path in on_each_path(combo, case, device):
        check_edge_rows(combo, at_path, edges, device)


# Rows 0, 1 and 2 (modulo the batch) of the regression examples that name this property.
FIXED_EDGES = {
    "entries at the max": (EdgeRow(0, "nan", False, "max"), EdgeRow(1, "+inf", False, "max"),
                           EdgeRow(2, "-inf", False, "max")),
    "entries anywhere, NaN row": (EdgeRow(0, "-inf", False, "any", 5), EdgeRow(1, "nan", False, "any", 7),
                                  EdgeRow(2, "nan", True)),
    "infinite rows": (EdgeRow(0, "+inf", True), EdgeRow(1, "-inf", True), EdgeRow(2, "nan", False, "max")),
}


@pytest.mark.matrix(layouts=("contig",))
@pytest.mark.parametrize("edges", list(FIXED_EDGES.values()), ids=list(FIXED_EDGES))
def test_edge_values_on_regression_examples(combo, device, budget, edges):
    examples = [r for r in combo.info.examples
                if catalog.EDGE_VALUES in r.tests and combo.dtype in r.dtypes
                and (r.backends is None or combo.backend.name in r.backends)
                and r.case.logits.batch * r.case.logits.vocab <= budget.max_elements and accepted(combo, r.case)]
    if not examples:
        pytest.skip("no regression example of this record names the edge-value property here")
    for example in examples:
        check_edge_rows(combo, example.case, edges, device)
