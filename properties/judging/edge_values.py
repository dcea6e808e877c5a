"""The edge-value property's failures read back: the signatures (`Mark.witness`) of findings
in it. Its check (samplecheck.harness.edge_check) names the edge rows written into a case
(samplecheck.inputs.edge_rows) and, where the backend declares `nan_policy: row_unspecified`
(samplecheck.registry.semantics), the rows it judged; a signature reads them back to tell a
finding's failure from any other defect."""

import re

from samplecheck.inputs.edge_rows import EDGE_VALUES

_EDGE = re.compile(r"\((\d+), EdgeRow\(row=-?\d+, value='([^']+)'")
_JUDGED = re.compile(r", rows \[([\d, ]*)\] \(NaN rows unspecified")
_KEPT_SET = re.compile(r"kept set differs from the oracle at \d+ entries \(rows \[([\d, ]*)\]\)")
_DREW_MASKED = re.compile(r"rows drew an id the oracle masks; rows \[([\d, ]*)\]")
_ORACLE_MASKS = "oracle masks"  # a listed entry the backend kept where the oracle masks it


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


def dropped_kept_ids_in_finite_rows(failure: str) -> bool:
    """A finding's signature for a masking backend: the kept set differs only in rows where no
    edge value was written, and only by entries the backend dropped (no listed entry is one
    the oracle masks); a difference in an edge row, or a kept entry the oracle masks, is
    another defect."""
    rows = _failing_rows(failure, _KEPT_SET)
    return bool(rows) and not rows & _rows_holding(failure, EDGE_VALUES) and _ORACLE_MASKS not in failure


def any_signature(*witnesses):
    """A signature that accepts a failure any of `witnesses` accepts (one cell, several pinned
    findings: pytest reads one `finding` marker per test)."""
    def witness(failure: str) -> bool:
        return any(one(failure) for one in witnesses)
    return witness
