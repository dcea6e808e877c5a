"""Per-row parameters: how a case stores one (a pool: row r takes pool[r % len(pool)]) and
how a record turns the pool into the kernel's [B] tensor.

Every record draws pools of at most MAX_POOL values, so a batch mixes edge values with
typical ones; the sampling tests sample at most SAMPLED_ROWS rows, so a distribution case
must put its interesting value among them.
"""

import dataclasses

import torch
from hypothesis import strategies as st

from samplecheck.inputs.strategies import expand_pool

MAX_POOL = 4
SAMPLED_ROWS = 4  # tests/cover/test_distribution.py samples at most the first 4 rows


def pools(values: st.SearchStrategy) -> st.SearchStrategy[tuple]:
    """A pool of 1 to MAX_POOL per-row values."""
    return st.lists(values, min_size=1, max_size=MAX_POOL).map(tuple)


def sampled_rows(pool: tuple, batch: int) -> list:
    """The values of the rows a sampling test samples."""
    return expand_pool(pool, min(batch, SAMPLED_ROWS))


def row_tensor(pool: tuple | None, logits: torch.Tensor, dtype=torch.float32) -> torch.Tensor | None:
    """The [B] tensor of a pool on the logits' device (None: the argument is absent)."""
    if pool is None:
        return None
    return torch.tensor(expand_pool(pool, logits.size(0)), dtype=dtype, device=logits.device)


def pool_of(t: torch.Tensor | None) -> tuple | None:
    """The pool whose rows are `t`'s rows (one value per row; None: the argument is absent)."""
    return None if t is None else tuple(t.tolist())


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
