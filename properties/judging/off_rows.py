"""The off-encoding property's check, shared by tests/cover/test_off_encodings.py and the
power measurement in tests/quality: each documented "off" value of a record's per-row
parameters, written into rows of a drawn case, against the oracle. Each encoding goes into
the row with the most finite entries, that row's other parameters and values as drawn (how
it interacts with them), and into a row where it alone decides (`OffEncoding.alone`: the
record's other parameters off there, those it acts with armed) on distinct values, so that
neither another filter of the row nor a tie hides what it does."""

from collections.abc import Callable
from dataclasses import replace

import torch

from samplecheck.harness.runner import prepare, reference, run
from samplecheck.inputs.recipes import materialize

# Families whose rows tie (flat: all equal; ties: 4 levels): a filter at its binding neighbour
# (k = V - 1 at a tied minimum, a repetition penalty on equal 0 logits) changes nothing there.
TIED_FAMILIES = ("flat", "ties")


def off_rows(original: torch.Tensor) -> list[int]:
    """Rows by their count of finite entries, most first: where a filter wrongly left on
    shows most."""
    return torch.isfinite(original).sum(dim=-1).argsort(descending=True, stable=True).tolist()


def per_param(encodings) -> tuple:
    """The first encoding of each parameter: how `OffEncoding.alone` switches the others off."""
    first = {}
    for off in encodings:
        first.setdefault(off.param, off)
    return tuple(first.values())


def distinct_values(combo, case, original: torch.Tensor, device) -> torch.Tensor:
    """The case's logits, a tied family's drawn as randn (same shape, scale, -inf fraction
    and seed)."""
    recipe = case.logits
    if recipe.family not in TIED_FAMILIES:
        return original
    return materialize(replace(recipe, family="randn"), combo.dtype, device)


def calls(off, original, distinct, args, device, record, add_missing) -> list[tuple[str, torch.Tensor, dict]]:
    """The calls that judge `off`: (what, logits, arguments). The row as drawn (the first of
    `off_rows`) and the row alone (the second, its values from `distinct`) share one call; a
    batch of one row gets a call for each."""
    batch, vocab = original.shape
    rows = off_rows(original)
    drawn = off.apply(args, rows[0], batch, vocab, device, add_missing=add_missing)
    if drawn is not None and batch >= 2:
        return [(f"in row {rows[0]} (as drawn) and row {rows[1]} (alone) of {batch}", _with_row(original, distinct, rows[1]),
                 off.alone(drawn, rows[1], batch, vocab, device, record, add_missing=add_missing))]
    alone = off.alone(args, rows[0], batch, vocab, device, record, add_missing=add_missing)
    return [(f"in row {rows[0]} ({how}) of {batch}", logits, off_args)
            for how, logits, off_args in (("as drawn", original, drawn),
                                          ("alone", _with_row(original, distinct, rows[0]), alone))
            if off_args is not None]


def _with_row(original: torch.Tensor, distinct: torch.Tensor, row: int) -> torch.Tensor:
    logits = original.clone()
    logits[row] = distinct[row]
    return logits


def check_off_encodings(combo, case, device, encodings=None) -> None:
    """Each encoding (default: the record's) in the case as `calls` writes it; AssertionError
    naming the encoding and the rows on the first mismatch."""
    placed, args = prepare(combo, case, device)
    original = placed.view.clone()
    distinct = distinct_values(combo, case, original, device)
    record = per_param(combo.info.off_encodings)
    add_missing = combo.backend.accepts is None
    for off in combo.info.off_encodings if encodings is None else encodings:
        for what, logits, off_args in calls(off, original, distinct, args, device, record, add_missing):
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
