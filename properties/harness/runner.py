"""Building a combo's inputs and calling its backend: the steps every generic property shares."""

import torch

from samplecheck.inputs.recipes import materialize
from samplecheck.inputs.tensor_tree import named_tensors
from samplecheck.registry.checks import assert_bitwise_equal, output_tensors
from samplecheck.registry.layouts import Placed, place
from samplecheck.registry.matrix import Combo

POISONS = (float("nan"), float("inf"), 3e38)


def poison_for(case, dtype: torch.dtype) -> float:
    """A gap value chosen by the case seed: NaN, +inf, or the dtype's largest finite value
    (which wins any argmax, so it catches reads that a NaN-tolerant max would skip)."""
    value = POISONS[case.logits.seed % len(POISONS)]
    return min(value, torch.finfo(dtype).max) if value == 3e38 else value


def prepare(combo: Combo, case, device) -> tuple[Placed, dict]:
    """The case's logits placed in the combo's layout (poisoned gaps), and its parameters."""
    values = materialize(case.logits, combo.dtype, device)
    placed = place(values, combo.layout, poison_for(case, combo.dtype))
    return placed, combo.info.make_args(case, placed.view)


def run(combo: Combo, logits: torch.Tensor, args: dict):
    """Call the backend and check the record's in-place contract: an in-place kernel returns
    its input (alone, or among the tensors of its output); any other kernel leaves its input
    bitwise unchanged; no kernel writes a tensor of its parameters (ids, k, p, penalties, ...:
    an engine reuses them across steps and ops)."""
    before = None if combo.info.in_place else logits.clone()
    parameters = [(path, t, t.clone()) for name, value in args.items() for path, t in named_tensors(value, name)]
    output = combo.backend.resolve()(logits, **args)
    if before is not None:
        assert_bitwise_equal(logits, before, f"{combo.id}: the record declares not in-place, but the input changed")
    for path, tensor, copy in parameters:
        assert_bitwise_equal(tensor, copy, f"{combo.id}: the call wrote its parameter {path}")
    if combo.info.in_place:
        assert any(t is logits or (t.data_ptr() == logits.data_ptr() and t.stride() == logits.stride())
                   for t in output_tensors(output)), (
            f"{combo.id}: the record declares in-place, but the backend did not return its input")
    return output


def reference(combo: Combo, original: torch.Tensor, args: dict):
    """The oracle's verdict for this combo, at its dtype's tolerance. `combo.info` is the record
    as the combo's backend is judged: the backend's declared semantics merged over the record's
    and, for a declared variant, that axis's oracle branch
    (`samplecheck.registry.semantics.declared_record`)."""
    return combo.info.verdict(original, args, combo.dtype)
