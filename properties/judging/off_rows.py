"""The off-encoding property's check, shared by tests/cover/test_off_encodings.py and the
power measurement in tests/quality: each documented "off" value of a record's per-row
parameters, written into one row of a drawn case, against the oracle."""

from collections.abc import Callable

import torch

from samplecheck.harness.runner import prepare, reference, run


def off_row(original: torch.Tensor) -> int:
    """The row with the most finite entries: where a filter wrongly left on shows most."""
    return int(torch.isfinite(original).sum(dim=-1).argmax())


def check_off_encodings(combo, case, device, encodings=None) -> None:
    """Each encoding (default: the record's) in `off_row` of the case, the other rows as
    drawn; AssertionError naming the encoding and the row on the first mismatch."""
    placed, args = prepare(combo, case, device)
    original = placed.view.clone()
    batch, vocab = original.shape
    row = off_row(original)
    for off in combo.info.off_encodings if encodings is None else encodings:
        off_args = off.apply(args, row, batch, vocab, device, add_missing=combo.backend.accepts is None)
        if off_args is None:  # a parameter the case left out: nothing to switch off
            continue
        expected = reference(combo, original, off_args)
        output = run(combo, original.clone(), off_args)
        combo.info.check(original, output, expected, f"{combo.id}: {off.label} in row {row} of {batch}")


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
