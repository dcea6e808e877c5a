"""The edge-value property's check, shared by tests/cover/test_edge_values.py and the tests of
its power: a drawn case with rows holding NaN, +inf or -inf (samplecheck.inputs.edge_rows)
written into it, against the oracle. Every row is judged, but where the backend declares
`nan_policy: row_unspecified` (samplecheck.registry.semantics): there the rows holding NaN
are left out and the others judged alone (the oracle is row-wise)."""

import re

import torch

from samplecheck.harness.runner import prepare, reference, run
from samplecheck.inputs.call_inputs import cut_rows
from samplecheck.inputs.edge_rows import EDGE_VALUES, EdgeRow, nan_rows, write_edge_rows
from samplecheck.registry.checks import output_rows
from samplecheck.registry.semantics import nan_rows_unspecified


def check_edge_rows(combo, case, edges: tuple[EdgeRow, ...], device) -> dict[int, EdgeRow]:
    """Call the combo's backend on `case` with `edges` written into its rows and check the
    judged rows against the oracle (AssertionError naming the edge rows); returns the rows
    written, {row: EdgeRow}."""
    placed, args = prepare(combo, case, device)
    written = write_edge_rows(placed.view, edges, args)
    original = placed.view.clone()
    output = run(combo, placed.view, args)
    batch = original.size(0)
    unjudged = nan_rows(written) if nan_rows_unspecified(combo.info) else []
    judged = [row for row in range(batch) if row not in unjudged]
    what = f"{combo.id}: edge rows {sorted(written.items())}"
    if len(judged) == batch:
        combo.info.check(original, output, reference(combo, original, args), what)
    elif judged:
        rows = torch.tensor(judged, device=original.device)
        kept_args = cut_rows(args, rows, batch)
        combo.info.check(original[rows], output_rows(output, judged), reference(combo, original[rows], kept_args),
                         f"{what}, rows {judged} (NaN rows unspecified: nan_policy=row_unspecified)")
    return written


_EDGE = re.compile(r"\((\d+), EdgeRow\(row=-?\d+, value='([^']+)'")
_JUDGED = re.compile(r", rows \[([\d, ]*)\] \(NaN rows unspecified")
_KEPT_SET = re.compile(r"kept set differs from the oracle at \d+ entries \(rows \[([\d, ]*)\]\)")
_DREW_MASKED = re.compile(r"rows drew an id the oracle masks; rows \[([\d, ]*)\]")


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def _failing_rows(failure: str, pattern: re.Pattern) -> set[int]:
    """The batch rows a check's message names (empty: not that check's message); the rows of
    a check that saw the judged rows alone are renumbered back."""
    found = pattern.search(failure)
    if found is None:
        return set()
    rows = set(_ints(found.group(1)))
    judged = _JUDGED.search(failure)
    if judged is not None:
        order = _ints(judged.group(1))
        rows = {order[r] for r in rows if r < len(order)}
    return rows


def _rows_holding(failure: str, values) -> set[int]:
    return {int(row) for row, value in _EDGE.findall(failure) if value in values}


def kept_set_differs_in_rows_holding(*values: str):
    """A finding's signature (registry.Mark.witness) in this property: the kept set differs
    from the oracle, and only in rows where an edge row of one of `values` (keys of
    EDGE_VALUES) was written; a difference in any other row is another defect."""
    def witness(failure: str) -> bool:
        rows = _failing_rows(failure, _KEPT_SET)
        return bool(rows) and rows <= _rows_holding(failure, values)
    return witness


def drew_masked_ids_in_finite_rows(failure: str) -> bool:
    """A finding's signature for a sampler in this property: ids the oracle masks drawn only
    in rows where no edge value was written (a finding of finite rows, such as a
    half-precision softmax); a wrong draw in an edge row is another defect."""
    rows = _failing_rows(failure, _DREW_MASKED)
    return bool(rows) and not rows & _rows_holding(failure, EDGE_VALUES)
