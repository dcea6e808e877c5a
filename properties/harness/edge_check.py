"""The edge-value property's check, shared by tests/cover/test_edge_values.py and the tests of
its power: a drawn case with rows holding NaN, +inf or -inf (samplecheck.inputs.edge_rows)
written into it, against the oracle. Every row is judged, but where the backend declares
`nan_policy: row_unspecified` (samplecheck.registry.semantics): there the rows holding NaN
are left out and the others judged alone (the oracle is row-wise). A failure names the edge
rows and the rows judged, which a finding's signature reads back
(samplecheck.judging.edge_values)."""

import torch

from samplecheck.harness.call_inputs import cut_rows
from samplecheck.harness.runner import prepare, reference, run
from samplecheck.inputs.edge_rows import EdgeRow, nan_rows, write_edge_rows
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
