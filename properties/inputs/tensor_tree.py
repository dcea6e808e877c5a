"""Tensors inside a call's arguments: dicts, tuples, named tuples, lists and dataclasses of
tensors and other values (the pipeline's `SamplingBatch`), walked in one fixed order."""

import dataclasses
from collections.abc import Iterator
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


def named_tensors(value, path: str) -> Iterator[tuple[str, torch.Tensor]]:
    """(path, tensor) for every tensor `value` holds, in `map_tensors` order: `path` itself
    for a tensor, then `[i]` for a sequence item, `[key]` for a dict's, `.name` for a
    dataclass field (e.g. "params.top_k")."""
    if isinstance(value, torch.Tensor):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from named_tensors(item, f"{path}[{key!r}]")
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            yield from named_tensors(item, f"{path}[{i}]")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            if f.init:
                yield from named_tensors(getattr(value, f.name), f"{path}.{f.name}")


def tensors_of(value) -> list[torch.Tensor]:
    """The tensors `value` holds, in `map_tensors` order."""
    return [tensor for _, tensor in named_tensors(value, "")]
