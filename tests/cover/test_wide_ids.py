"""Unchecked, a token id is out of range by its whole int64 value (docs/validation.md: ids
outside [0, V) are skipped, never addressed, and match no id of [0, V)). For every record
that declares id lists (`KernelInfo.id_lists`), each list in turn is given as int64 with
some of its valid ids replaced by ids whose low 32 bits are valid ids (y + 2**32 and
y - 2**32): a kernel (or its host code) that narrows a loaded id to int32 before its range
test reads them as y. The output must equal, bitwise, the output with the same entries
replaced by V instead (out of range and narrow). Two choices of y: the replaced id itself
(a misread restores the drawn case, which differs wherever the entry mattered) and an id
absent from every list of the row (a misread adds a token the row never had). Each row
keeps its first valid id, so an allowlist keeps a valid id and the replaced entries sit
between real ones. Both calls are unchecked (`unchecked_values()`): checked calls reject
such ids (test_error_inputs). samplecheck's unchecked mode is its own kernels' (their value
checks are `samplecheck.kernels.validation`'s), which docs/backends.md does not ask of a
plug-in: the property runs on the backends that declare `guard_flag` (they take part in
those modes: our Triton kernels and their mutants) and on no other."""

import pytest
import torch
from hypothesis import given, settings, strategies as st

from samplecheck.harness.runner import run
from samplecheck.inputs.drawing import draw_case
from samplecheck.inputs.recipes import materialize
from samplecheck.kernels.validation import unchecked_values
from samplecheck.registry.checks import assert_same_output

pytestmark = pytest.mark.interpreter

SHIFT = 2**32


def replaced(ids: torch.Tensor, vocab: int, low: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(wide, narrow): `ids` as int64 with the valid ids ranked 1, 2 (mod 3) among their
    row's valid ids replaced by y + 2**32 and y - 2**32 (y: the id itself, or the row's
    `low` where that is >= 0), and by V. None when no id is replaced."""
    ids = ids.to(torch.int64)
    flat = ids.reshape(ids.size(0), -1)
    valid = (flat >= 0) & (flat < vocab)
    rank = (valid.cumsum(dim=1) - 1) % 3
    up, down = valid & (rank == 1), valid & (rank == 2)
    if not bool((up | down).any()):
        return None
    y = flat if low is None else torch.where(low[:, None] >= 0, low[:, None], flat)
    wide = torch.where(up, y + SHIFT, torch.where(down, y - SHIFT, flat))
    return wide.reshape(ids.shape), flat.masked_fill(up | down, vocab).reshape(ids.shape)


def absent_ids(args: dict, lists, batch: int, vocab: int) -> torch.Tensor:
    """Per row, the smallest id in [0, V) that none of the row's lists holds (-1: none)."""
    present = torch.zeros(batch, vocab + 1, dtype=torch.bool)
    for listed in lists.lists:
        if args.get(listed.param) is not None:
            flat = args[listed.param].reshape(batch, -1).to(torch.int64).cpu()
            present.scatter_(1, torch.where((flat >= 0) & (flat < vocab), flat, vocab), True)
    free = ~present[:, :vocab]
    return torch.where(free.any(dim=1), free.to(torch.int8).argmax(dim=1), -1)


@pytest.mark.matrix(dtypes=(torch.float32,), layouts=("contig",), id_lists=True, guard_flag=True)
@settings(max_examples=4)
@given(data=st.data())
def test_ids_beyond_int32(combo, device, budget, data):
    case = draw_case(data, combo, combo.info.cases(budget))
    values = materialize(case.logits, combo.dtype, device)
    vocab = values.size(1)
    args = combo.info.make_args(case, values)
    lists = combo.info.id_lists
    absent = absent_ids(args, lists, values.size(0), vocab).to(device)
    for listed in lists.lists:
        for low, which in ((None, "the replaced id"), (absent, "an id absent from the row")):
            pair = None if args.get(listed.param) is None else replaced(args[listed.param], vocab, low)
            for knobs in (() if pair is None else launches(combo, args)):
                with unchecked_values():
                    expected = run(combo, values.clone(), {**args, listed.param: pair[1], **knobs})
                    output = run(combo, values.clone(), {**args, listed.param: pair[0], **knobs})
                assert_same_output(combo.info, output, expected, f"{combo.id}: {listed.param} holding y +- 2**32 "
                                   f"(y {which}) vs V in their place, launch knobs {knobs}", vocab)


def launches(combo, args: dict) -> list[dict]:
    """The default launch, and the record's list knobs (the kernel's other path for lists)
    where the backend declares them."""
    knobs = combo.info.id_lists.knobs
    if not knobs or any(knob not in combo.backend.knobs for knob in knobs):
        return [{}]
    return [{}, {knob: value(args) for knob, value in knobs.items()}]
