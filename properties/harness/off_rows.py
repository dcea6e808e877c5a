"""The off-encoding property's check, shared by tests/cover/test_off_encodings.py and the
power measurement in tests/quality: each documented "off" value of a record's per-row
parameters, written into rows of a drawn case, against the oracle. Each encoding goes into
the row with the most finite entries, that row's other parameters and values as drawn (how
it interacts with them), and in the same call into rows where it alone decides
(`OffEncoding.alone`: the record's other parameters off there, those it acts with armed), on
distinct, tied and fp32-underflowing values, so that neither another filter of the row nor
its values hide what it does."""

from collections.abc import Callable
from dataclasses import replace

import torch
from hypothesis import event

from samplecheck.harness.runner import prepare, reference, run
from samplecheck.inputs.drawing import accepted
from samplecheck.inputs.off_encodings import per_param
from samplecheck.inputs.recipes import materialize

# The values of the rows where an encoding alone decides, each from the case's recipe (its
# shape, -inf fraction and seed): distinct and wide (randn or peaked, the scale at least
# WIDE: a tie hides a filter's binding neighbour, k = V - 1 at a tied minimum, a repetition
# penalty on equal 0 logits, and a small min_p binds only on a row spanning more than
# log(1 / min_p)), then tied (4 levels, or all equal: there a greedy row's lowest argmax and
# a sample differ most); the drawn family where it is one of the pair. Then, where the batch
# has a fourth row, a peaked row of scale UNDERFLOW: one logit about 12 * UNDERFLOW above the
# rest, so most of its probabilities lie below fp32's range (exp(-104)): an off value must
# leave them as they are, not read a probability of 0 as a reason to mask.
ALONE_FAMILIES = (("randn", "peaked"), ("ties", "flat"))
WIDE = 3.0
UNDERFLOW = 10.0


def off_rows(original: torch.Tensor) -> list[int]:
    """Rows by their count of finite entries, most first: where a filter wrongly left on
    shows most."""
    return torch.isfinite(original).sum(dim=-1).argsort(descending=True, stable=True).tolist()


def alone_values(combo, case, original: torch.Tensor, device) -> list[torch.Tensor]:
    """The logits for the rows alone, as ALONE_FAMILIES says, each where the backend's
    declared cases (`accepts`) take its values: a probability-space adapter that declares
    no fp32 underflow is not judged on the underflowing row."""
    recipe = case.logits
    wide = replace(recipe, scale=max(recipe.scale, WIDE))
    distinct = replace(wide, family=recipe.family if recipe.family in ALONE_FAMILIES[0] else ALONE_FAMILIES[0][0])
    tied = replace(recipe, family=recipe.family if recipe.family in ALONE_FAMILIES[1] else ALONE_FAMILIES[1][0])
    underflowing = replace(recipe, family="peaked", scale=max(recipe.scale, UNDERFLOW))
    return [original if alone == recipe else materialize(alone, combo.dtype, device)
            for alone in (distinct, tied, underflowing) if accepted(combo, replace(case, logits=alone))]


def calls(off, original, values, args, device, record) -> list[tuple[str, torch.Tensor, dict]]:
    """The calls that judge `off`: (what, logits, arguments). One call holds the row as drawn
    (the first of `off_rows`) and after it the rows alone, one per `values` as far as the
    batch reaches; a case that leaves the parameter out (as drawn: nothing to judge) has its
    rows alone from the first; a batch of one row gets a call as drawn and one alone."""
    batch, vocab = original.shape
    rows = off_rows(original)
    drawn = off.apply(args, rows[0], batch, vocab, device)
    if drawn is None:
        return [call for call in (_alone(off, original, values, args, rows, device, record),) if call]
    if batch == 1:
        return [(f"in row {rows[0]} (as drawn) of 1", original, drawn),
                _alone(off, original, values, args, rows, device, record)]
    what, logits, alone_args = _alone(off, original, values, drawn, rows[1:], device, record)
    return [(f"in row {rows[0]} (as drawn) and {what}", logits, alone_args)]


def _alone(off, original, values, args, rows, device, record) -> tuple[str, torch.Tensor, dict] | None:
    """(what, logits, arguments) with `off` alone in `rows`, row i on `values[i]` (as many as
    both hold); None when the parameter cannot be given."""
    batch, vocab = original.shape
    logits = original.clone()
    placed = list(zip(rows, values))
    for row, row_values in placed:
        args = off.alone(args, row, batch, vocab, device, record)
        if args is None:
            return None
        logits[row] = row_values[row]
    return f"rows {[row for row, _ in placed]} (alone) of {batch}", logits, args


def check_off_encodings(combo, case, device, encodings=None) -> None:
    """Each encoding (default: the record's) in the case as `calls` writes it; AssertionError
    naming the encoding and the rows on the first mismatch. A call the backend does not
    implement (its `accepts` rejects the case it describes: an arm or a fill it declares it
    does not take) is left out, as an event."""
    placed, args = prepare(combo, case, device)
    original = placed.view.clone()
    values = alone_values(combo, case, original, device)
    record = per_param(combo.info.off_encodings)
    for off in combo.info.off_encodings if encodings is None else encodings:
        for what, logits, off_args in calls(off, original, values, args, device, record):
            if not accepted(combo, case, logits, off_args):
                event(f"off encoding {off.label}: a call outside the backend's accepted cases left out")
                continue
            expected = reference(combo, logits, off_args)
            output = run(combo, logits.clone(), off_args)
            combo.info.check(logits, output, expected, f"{combo.id}: {off.label} {what}")


def misreading(fn: Callable, off) -> Callable:
    """`fn` with a synthetic defect: wherever the parameter holds `off`'s value, the call sees
    its binding neighbour `off.near` instead (e.g. k = V read as V - 1, a -1 pad as id 0)."""
    def faulty(logits, **args):
        vocab = logits.size(1)
        current = off.read(args)
        if current is None:
            return fn(logits, **args)
        near = torch.as_tensor(off.near_value(vocab), dtype=current.dtype, device=current.device)
        return fn(logits, **off.written(args, torch.where(current == off.off_value(vocab), near, current)))
    return faulty
