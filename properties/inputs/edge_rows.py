"""Rows holding the edge values of logits that docs/backends.md ("Edge values") gives a
meaning: NaN, +inf and -inf, each as a whole row or as one entry of an otherwise finite row.

Hypothesis draws `EdgeRow`s (which row, which value, whole or one entry, and where the entry
goes), never tensors; `write_edge_rows` writes them into a drawn case's logits. A single
entry goes where a filter or an id list of the row acts on it: at one of the ids the row's
id lists name (a banned word, an allowed or biased id, a penalised id: `listed_ids`), at the
row's maximum (what top-k, top-p and min-p keep first), or at any id.
"""

from dataclasses import dataclass

import torch
from hypothesis import strategies as st

from samplecheck.inputs.tensor_tree import tensors_of

EDGE_VALUES = {"nan": float("nan"), "+inf": float("inf"), "-inf": float("-inf")}
SPOTS = ("listed", "max", "any")  # where a single entry goes (module docstring)
MAX_EDGE_ROWS = 3


@dataclass(frozen=True)
class EdgeRow:
    """`value` (a key of EDGE_VALUES) in row `row` (modulo the batch): the whole row, or one
    entry at `spot`, the `index`-th (modulo their count) of the spot's candidate ids (listed:
    the row's listed ids in order, then any id where it lists none; max: the row's maxima;
    any: every id)."""

    row: int
    value: str
    whole: bool
    spot: str = "any"
    index: int = 0

    @property
    def label(self) -> str:
        return f"{self.value} " + ("row" if self.whole else f"entry ({self.spot})")


def edge_rows() -> st.SearchStrategy[tuple[EdgeRow, ...]]:
    """1 to MAX_EDGE_ROWS edge rows (their rows taken modulo the batch; a row drawn twice
    keeps its first)."""
    row = st.builds(EdgeRow, st.integers(0, 1023), st.sampled_from(tuple(EDGE_VALUES)), st.booleans(),
                    st.sampled_from(SPOTS), st.integers(0, 2**16))
    return st.lists(row, min_size=1, max_size=MAX_EDGE_ROWS).map(tuple)


def listed_ids(args: dict, batch: int, vocab: int) -> list[list[int]]:
    """Per row, the ids in [0, V) its id lists name (every integer argument of shape [B, ...]
    with two dimensions or more, fields of a batch argument included), in argument order."""
    rows: list[list[int]] = [[] for _ in range(batch)]
    for t in tensors_of(args):
        if t.dim() >= 2 and t.size(0) == batch and not t.is_floating_point():
            for r, ids in enumerate(t.reshape(batch, -1).tolist()):
                rows[r] += [i for i in ids if 0 <= i < vocab]
    return rows


def write_edge_rows(logits: torch.Tensor, edges: tuple[EdgeRow, ...], args: dict) -> dict[int, EdgeRow]:
    """Write `edges` into `logits` (in place; an entry's spot chosen among the row's values
    and listed ids as given) and return {row: EdgeRow} of the rows written."""
    batch, vocab = logits.shape
    placed: dict[int, EdgeRow] = {}
    for edge in edges if batch else ():
        placed.setdefault(edge.row % batch, edge)
    listed = listed_ids(args, batch, vocab)
    for row, edge in placed.items():
        value = EDGE_VALUES[edge.value]
        if edge.whole:
            logits[row] = value
            continue
        if edge.spot == "listed" and listed[row]:
            candidates = listed[row]
        elif edge.spot == "max":
            candidates = (logits[row] == logits[row].max()).nonzero().flatten().tolist()
        else:
            candidates = range(vocab)
        logits[row, candidates[edge.index % len(candidates)]] = value
    return placed


def nan_rows(placed: dict[int, EdgeRow]) -> list[int]:
    """The rows of `placed` that hold NaN."""
    return sorted(row for row, edge in placed.items() if edge.value == "nan")
