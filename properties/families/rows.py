"""How a record of per-row parameters turns its case's pools (samplecheck.inputs.pools) into
a call's arguments, and back."""

import dataclasses

import torch

from samplecheck.inputs.pools import pool_of, row_tensor


def with_batch(case, logits: torch.Tensor):
    """`case` with its logits recipe at the shape of `logits` (a property's call on other rows)."""
    return dataclasses.replace(case, logits=dataclasses.replace(case.logits, batch=logits.size(0),
                                                                vocab=logits.size(1)))


def row_args(**columns):
    """make_args(case, logits) for a record whose arguments are per-row pools: each keyword
    names the argument, its value is (the case's field, the tensor's dtype). Its `case_of(case,
    logits, args)` is the case whose arguments are `args` (each pool one value per row), for
    asking a backend's `accepts` about a call a property altered
    (`samplecheck.inputs.drawing.accepted`)."""
    def make_args(case, logits: torch.Tensor) -> dict:
        return {arg: row_tensor(getattr(case, field), logits, dtype) for arg, (field, dtype) in columns.items()}

    def case_of(case, logits: torch.Tensor, args: dict):
        return dataclasses.replace(with_batch(case, logits),
                                   **{field: pool_of(args.get(arg)) for arg, (field, _) in columns.items()})
    make_args.case_of = case_of
    return make_args
