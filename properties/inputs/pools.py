"""Per-row parameters as pools: a case stores each per-row parameter as a pool of values, row r
taking pool[r % len(pool)], so a batch mixes edge values with typical ones. This module is the
one place pools are drawn, expanded to rows, made into a kernel's [B] tensor and read back.

The sampling tests sample at most SAMPLED_ROWS rows, so a distribution case must put its
interesting value among them.
"""

import torch
from hypothesis import strategies as st

MAX_POOL = 4  # values in a pool at most
SAMPLED_ROWS = 4  # tests/cover/test_distribution.py samples at most the first 4 rows


def pools(values: st.SearchStrategy) -> st.SearchStrategy[tuple]:
    """A pool of 1 to MAX_POOL per-row values."""
    return st.lists(values, min_size=1, max_size=MAX_POOL).map(tuple)


def row_pools(values: st.SearchStrategy) -> st.SearchStrategy:
    """None (the parameter absent for the whole batch) or a pool of per-row values."""
    return st.none() | pools(values)


def expand_pool(pool: tuple, batch: int) -> list:
    """The values of the `batch` rows of `pool`."""
    return [pool[r % len(pool)] for r in range(batch)]


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
