"""One call's inputs as a unit, for properties that replay a call on new values: copies that
keep every tensor's layout, and fresh inputs of the same structure drawn for the same case.

A call's inputs are the logits placed in the combo's layout (`Placed`: the whole buffer,
row-stride gaps included) and the record's keyword arguments: tensors, None, Python scalars,
and dicts, tuples or dataclasses of them (the pipeline's `SamplingBatch`). Two inputs have
the same `signature` when every tensor has the same shape, strides, dtype and device and every
other value is equal: values of one can then be copied into the other's tensors (`copy_inputs`),
which is how a captured CUDA graph is given new inputs.
"""

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

import torch
from hypothesis import assume, event, strategies as st

from samplecheck.harness.runner import poison_for
from samplecheck.inputs.drawing import accepted, accepted_cases
from samplecheck.inputs.recipes import materialize
from samplecheck.inputs.tensor_tree import map_tensors, tensors_of
from samplecheck.registry.layouts import Placed, place
from samplecheck.registry.matrix import Combo

SEEDS = st.integers(0, 2**63 - 1)


@dataclass
class CallInputs:
    """The logits placed in a layout (their view is the call's first argument) and the
    keyword arguments of the call."""

    placed: Placed
    args: dict


class TensorLayout(NamedTuple):
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: torch.dtype
    device: torch.device


def signature(value):
    """`value` with each tensor replaced by its TensorLayout: equal signatures mean the same
    structure, tensor layouts and Python values."""
    return map_tensors(lambda t: TensorLayout(tuple(t.shape), t.stride(), t.dtype, t.device), value)


def _like(template: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """A new tensor with `template`'s shape, strides, dtype and device, holding `values`."""
    return torch.empty_strided(template.shape, template.stride(), dtype=template.dtype,
                               device=template.device).copy_(values)


def clone_inputs(inputs: CallInputs) -> CallInputs:
    """A copy sharing no memory with `inputs`, every tensor in the same layout (the logits
    buffer whole, gaps included, and its view at the same strides and offset)."""
    view = inputs.placed.view
    buffer = inputs.placed.buffer.clone()
    placed = Placed(view=buffer.as_strided(view.shape, view.stride(), view.storage_offset()), buffer=buffer,
                    gaps=inputs.placed.gaps)
    return CallInputs(placed, map_tensors(lambda t: _like(t, t), inputs.args))


def copy_inputs(source: CallInputs, target: CallInputs) -> None:
    """Copy every byte of `source`'s logits buffer (gaps included) and every tensor argument
    into `target`'s, in place; the two must have the same signature."""
    if signature(source.args) != signature(target.args) or source.placed.buffer.shape != target.placed.buffer.shape:
        raise ValueError("copy_inputs: source and target inputs differ in structure or tensor layouts")
    target.placed.buffer.copy_(source.placed.buffer)
    for src, dst in zip(tensors_of(source.args), tensors_of(target.args)):
        dst.copy_(src)


def per_row(t: torch.Tensor, batch: int) -> bool:
    """Whether `t` is a per-row argument of a call on `batch` rows: its first dimension."""
    return t.dim() >= 1 and t.size(0) == batch


def cut_rows(value, rows: slice | torch.Tensor, batch: int):
    """`value` with every per-row tensor it holds cut to `rows` (a slice, or int64 row
    indices), as a copy; other tensors as they are."""
    return map_tensors(lambda t: t[rows].clone() if per_row(t, batch) else t, value)


def resample_rows(args: dict, rows: torch.Tensor, batch: int) -> dict:
    """`args` with every per-row tensor (first dimension `batch`) taken at `rows` (int64 [batch],
    the same rows for every argument, so a row's parameters stay together), each in its own
    layout; other tensors copied unchanged."""
    def take(t: torch.Tensor) -> torch.Tensor:
        return _like(t, t[rows.to(t.device)] if per_row(t, batch) else t)
    return map_tensors(take, args)


def draw_fresh_inputs(data, combo: Combo, case, strategy, device, count: int = 1) -> list[CallInputs]:
    """`count` new inputs with the signature of `case`'s: each the same logits recipe under a
    newly drawn seed (new values and gap poison, the same shape), and the parameters of a
    second case drawn from `strategy` when it shares the logits recipe (strategies share one
    per example) and gives arguments of the same signature; otherwise `case`'s own parameters
    with its rows resampled (drawn with replacement), which keeps every row valid (an example
    whose resampled call the backend does not implement, by its `accepts`, is rejected).
    The choices of all `count` are drawn before any of them is built (samplecheck.inputs.drawing):
    an example calls this after its other draws and before it builds its other inputs."""
    drawn = [(data.draw(SEEDS, label="fresh logits seed"), data.draw(accepted_cases(combo, strategy),
                                                                      label="fresh parameters"))
             for _ in range(count)]
    return [_fresh_inputs(combo, case, seed, other, device) for seed, other in drawn]


def _fresh_inputs(combo: Combo, case, seed: int, other, device) -> CallInputs:
    """The inputs `draw_fresh_inputs` describes, for one drawn seed and second case."""
    recipe = dataclasses.replace(case.logits, seed=seed)
    values = materialize(recipe, combo.dtype, device)
    placed = place(values, combo.layout, poison_for(dataclasses.replace(case, logits=recipe), combo.dtype))
    args = combo.info.make_args(case, placed.view)
    if other.logits == case.logits:
        candidate = combo.info.make_args(other, placed.view)
        if signature(candidate) == signature(args):
            event("fresh inputs: parameters of a second case")
            return CallInputs(placed, candidate)
    event("fresh inputs: the case's rows resampled")
    batch = case.logits.batch
    rows = torch.randint(0, batch, (batch,), generator=torch.Generator().manual_seed(seed))
    resampled = resample_rows(args, rows, batch)
    assume(accepted(combo, case, placed.view, resampled))
    return CallInputs(placed, resampled)
