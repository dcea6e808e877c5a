"""Token-id lists placed far apart: a case's rows behind filler rows, so that each row's list
starts past entry `far` of its list tensor (2**31 on a GPU: a kernel that computes the
offset row * width in int32 wraps there).

A record declares its per-row id-list arguments as data (`KernelInfo.id_lists`, an `IdLists`):
each list's caps per dimension and the arguments shaped like it (bias values beside bias
ids). `far_args` builds, from a case's arguments, a batch of F filler rows followed by the
case's rows, where one list (the far one) is right-padded with -1 towards its caps, and F is
such that row F starts at entry >= far (F >= 2, so that the row width stays below far / 2
and fits int32: only the product row * width overflows). Filler rows hold every list as -1
padding and every other per-row parameter at its documented off value
(`KernelInfo.off_encodings`), so the kernel writes nothing there. The functions here are
pure and work at any `far`: tests/cover/test_large_list_offsets.py runs them at 2**31 on a
GPU and at a small `far` under the interpreter.
"""

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable

import torch

from samplecheck.inputs.off_encodings import PAD, per_param
from samplecheck.inputs.strategies import Budget, within_vocab


@dataclass(frozen=True)
class IdList:
    """A per-row id-list argument [B, *dims], right-padded with -1 (for a list of lists, each
    inner list too). `caps`: the most entries per dimension the kernel accepts (None:
    uncapped). `parallel`: (argument, padding) pairs of arguments shaped like it, padded
    alongside."""

    param: str
    caps: tuple[int | None, ...]
    parallel: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class IdLists:
    """A record's id-list arguments. `knobs`: {launch knob: value(args)} that select the
    kernel's other path for lists, for a backend that declares them: passed with far lists,
    where the default launch would allocate scratch over every list entry (a backend without
    them is not tested with far lists); test_ids_beyond_int32 runs both launches."""

    lists: tuple[IdList, ...]
    knobs: dict[str, Callable[[dict], object]] = dataclasses.field(default_factory=dict, hash=False)


@dataclass(frozen=True)
class Scale:
    """How far apart: `far` list entries; an uncapped dimension padded to `open_width`;
    logits of at most `logits_bytes` (so the vocabulary is small when fillers are many) and
    vocabularies of at most `max_vocab`."""

    far: int
    open_width: int
    logits_bytes: int
    max_vocab: int


def far_dims(real: tuple[int, ...], caps: tuple[int | None, ...], far: int, open_width: int) -> tuple[int, ...]:
    """The per-row dims of the far list: each at least its real size, widened, the last
    first, towards its cap (an uncapped one towards `open_width`) until a row holds at least
    far / 2 entries or every dim is at its cap."""
    dims = list(real)
    target = -(-far // 2)
    for i in reversed(range(len(dims))):
        if math.prod(dims) >= target:
            break
        others = math.prod(max(d, 1) for j, d in enumerate(dims) if j != i)
        cap = open_width if caps[i] is None else caps[i]
        dims[i] = max(dims[i], min(cap, -(-target // others)))
    return tuple(dims)


def filler_rows(dims: tuple[int, ...], far: int) -> int:
    """Rows before the case's rows, so that the first of them starts at entry >= far: at
    least 2 (a single filler row would need a width >= far)."""
    return max(2, -(-far // max(math.prod(dims), 1)))


def most_fillers(lists: IdLists, scale: Scale) -> int:
    """The filler rows of the record's list with the smallest capped row (the largest batch)."""
    return max(filler_rows(far_dims((1,) * len(l.caps), l.caps, scale.far, scale.open_width), scale.far)
               for l in lists.lists)


def far_budget(budget: Budget, lists: IdLists, scale: Scale, itemsize: int) -> Budget:
    """`budget` with vocabularies small enough that the logits of the largest far batch
    (fillers plus the budget's largest batch) fit `scale.logits_bytes`."""
    rows = most_fillers(lists, scale) + budget.max_batch
    return within_vocab(budget, min(scale.max_vocab, scale.logits_bytes // (rows * itemsize)))


def given_lists(lists: IdLists, args: dict) -> bool:
    """Whether the case gives every declared list (a list of width 0 is given: its row is
    widened like any other)."""
    return all(args.get(l.param) is not None for l in lists.lists)


def far_layout(lists: IdLists, args: dict, name: str, scale: Scale) -> tuple[int, dict]:
    """(F, {argument: (shape, dtype)}) of `far_args` for the case's per-row arguments
    (tensors whose first dimension is the batch): list `name` (int32, the cheapest tensor that
    reaches `far` entries) and its parallel arguments widened to `far_dims`, the others at
    their own row shape, all with F more rows."""
    target = next(l for l in lists.lists if l.param == name)
    batch = args[name].size(0)
    dims = far_dims(tuple(args[name].shape[1:]), target.caps, scale.far, scale.open_width)
    fillers = filler_rows(dims, scale.far)
    widened = {name, *(p for p, _ in target.parallel)}
    shapes = {}
    for key, value in args.items():
        if isinstance(value, torch.Tensor) and value.dim() >= 1 and value.size(0) == batch:
            shapes[key] = ((fillers + batch, *(dims if key in widened else value.shape[1:])),
                           torch.int32 if key == name else value.dtype)
    return fillers, shapes


def far_bytes(lists: IdLists, args: dict, name: str, scale: Scale) -> int:
    """The bytes of `far_args`' per-row tensors, without building them."""
    _, shapes = far_layout(lists, args, name, scale)
    return sum(math.prod(shape) * dtype.itemsize for shape, dtype in shapes.values())


def far_args(lists: IdLists, off_encodings, args: dict, name: str, vocab: int, scale: Scale) -> tuple[dict, int]:
    """(arguments, F): the case's per-row arguments behind F filler rows, in `far_layout`'s
    shapes (module docstring): lists and their parallel arguments padded, other per-row
    numbers at their off value; every other argument as given."""
    fillers, shapes = far_layout(lists, args, name, scale)
    pads = {l.param: PAD for l in lists.lists} | {p: pad for l in lists.lists for p, pad in l.parallel}
    off = {e.param: e.off_value(vocab) for e in per_param(off_encodings) if not e.dims and e.within is None}
    placed = dict(args)
    for key, (shape, dtype) in shapes.items():
        value = args[key]
        if key in pads:
            new = right_padded(value, shape, pads[key], dtype, first_row=fillers)
        elif key in off:
            new = torch.cat((torch.full((fillers, *value.shape[1:]), off[key], dtype=dtype, device=value.device),
                             value))
        else:  # a per-row number with no off value (output_len): the first row's, acting on nothing
            new = torch.cat((value[:1].expand(fillers, *value.shape[1:]), value))
        placed[key] = new
    return placed, fillers


def right_padded(value: torch.Tensor, shape: tuple[int, ...], pad, dtype: torch.dtype, first_row: int = 0):
    """A new tensor of `shape` and `dtype` filled with `pad`, holding `value` from row
    `first_row` on, each other dimension from index 0."""
    new = torch.full(shape, pad, dtype=dtype, device=value.device)
    new[(slice(first_row, first_row + value.size(0)), *(slice(0, n) for n in value.shape[1:]))] = value
    return new


def at_caps(lists: IdLists, args: dict, name: str) -> tuple[dict, tuple[int, ...]]:
    """(`args` with list `name` and its parallel arguments right-padded to the list's caps in
    every capped dimension, uncapped ones as they are; the padded shape). The list pads
    with -1, its parallel arguments with their declared pads: the same calls as `args`."""
    target = next(l for l in lists.lists if l.param == name)
    value = args[name]
    shape = (value.size(0), *(n if cap is None else max(n, cap) for n, cap in zip(value.shape[1:], target.caps)))
    padded = dict(args)
    for key, pad in ((name, PAD), *target.parallel):
        padded[key] = right_padded(args[key], shape, pad, args[key].dtype)
    return padded, shape


def with_bad_id(lists: IdLists, args: dict, name: str, bad: int) -> dict:
    """`args` with one entry of list `name`'s last row set to `bad`: its last entry, or for a
    list of lists, the first entry of its last inner list (so that the rule of no id after a
    -1 within an inner list still holds); its parallel arguments' entry there set to 0. Only
    the id is wrong. In place."""
    index = (-1,) * (args[name].dim() - 1) + ((0,) if args[name].dim() > 2 else (-1,))
    args[name][index] = bad
    target = next(l for l in lists.lists if l.param == name)
    for param, _ in target.parallel:
        args[param][index] = 0
    return args


def far_logits(values: torch.Tensor, fillers: int) -> torch.Tensor:
    """[F + B, V]: zero filler rows, then `values`."""
    return torch.cat((values.new_zeros(fillers, values.size(1)), values))
