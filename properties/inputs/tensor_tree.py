"""Tensors inside a call's arguments: dicts, tuples, named tuples, lists and dataclasses of
tensors and other values (the pipeline's `SamplingBatch`), walked in one fixed order."""

import dataclasses
from typing import Callable

import torch


def map_tensors(fn: Callable, value):
    """`value` with `fn(tensor)` in place of every tensor it holds (in dicts, tuples,
    named tuples, lists and dataclass fields); every other value kept as it is."""
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, dict):
        return {key: map_tensors(fn, item) for key, item in value.items()}
    if isinstance(value, tuple):
        items = [map_tensors(fn, item) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, list):
        return [map_tensors(fn, item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.replace(value, **{f.name: map_tensors(fn, getattr(value, f.name))
                                             for f in dataclasses.fields(value) if f.init})
    return value


def tensors_of(value) -> list[torch.Tensor]:
    """The tensors `value` holds, in `map_tensors` order."""
    found = []
    map_tensors(lambda t: found.append(t) or t, value)
    return found
