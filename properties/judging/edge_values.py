"""The edge-value property's failures read back: the signatures (`Mark.witness`) of findings
in it. Its check (samplecheck.harness.edge_check) names the edge rows written into a case
(samplecheck.inputs.edge_rows) and, where the backend declares `nan_policy: row_unspecified`
(samplecheck.registry.semantics), the rows it judged; a signature reads them back to tell a
finding's failure from any other defect."""

import re
from collections.abc import Callable

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


class RowSignature:
    """A finding's signature (registry.Mark.witness) in this property, read row by row: the
    failure is one `check`'s message (a compiled pattern whose group lists the failing batch
    rows), and `explains(failure)` gives the rows the finding accounts for. A failure shows
    the signature when that check failed and every row it names is accounted for; any other
    row is another defect. `any_signature` joins several by row."""

    __slots__ = ("check", "explains")

    def __init__(self, check: re.Pattern, explains: Callable[[str], set[int]]):
        self.check = check  # the message pattern of the check whose failure this finding causes
        self.explains = explains  # failure -> the batch rows this finding accounts for

    def __call__(self, failure: str) -> bool:
        return any_signature(self)(failure)


def kept_set_differs_in_rows_holding(*values: str) -> RowSignature:
    """The kept set differs from the oracle, and only in rows where an edge row of one of
    `values` (keys of EDGE_VALUES) was written."""
    return RowSignature(_KEPT_SET, lambda failure: _rows_holding(failure, values))


def _finite_rows(failure: str) -> set[int]:
    """The rows a failing check names that hold no edge value (the finite rows), or none."""
    named = _failing_rows(failure, _KEPT_SET) | _failing_rows(failure, _DREW_MASKED)
    return named - _rows_holding(failure, EDGE_VALUES)


# A sampler: ids the oracle masks drawn only in rows where no edge value was written (a finding
# of finite rows, such as a half-precision softmax); a wrong draw in an edge row is another defect.
drew_masked_ids_in_finite_rows = RowSignature(_DREW_MASKED, _finite_rows)
# A masking backend: the kept set differs in rows where no edge value was written, only by
# entries the backend dropped (no listed entry is one the oracle masks).
dropped_kept_ids_in_finite_rows = RowSignature(
    _KEPT_SET, lambda failure: set() if _ORACLE_MASKS in failure else _finite_rows(failure))


def any_signature(*signatures: RowSignature):
    """A signature for a cell with several pinned findings (pytest reads one `finding` marker
    per test): a failure shows it when the checks of `signatures` that failed name only rows
    that one of the findings of that check accounts for (one finding in some rows, another in
    the others is still the pinned findings)."""
    def witness(failure: str) -> bool:
        named, explained = set(), set()
        for signature in signatures:
            rows = _failing_rows(failure, signature.check)
            named |= rows
            explained |= rows & signature.explains(failure)
        return bool(named) and named <= explained
    return witness
