"""A cut's bracket never reaches down to -inf (`samplecheck.kernels.top_k_top_p`'s module
docstring): a row with fewer than k entries above -inf (a row after min_p, or one that a logit
mask left short) keeps them all from its first candidate pass. A bracket down to -inf would hold
every -inf entry, overflow the scratch and take full-row search steps (on an H100, 600 µs for
such a row of 151936 columns against 158 µs for the others, docs/benchmarks-2026-12-06.md, session 41).

Under the interpreter each full-row search step of the one-program kernel is a call of
`cut_search.tally_above`, counted here; the masks are checked against the sort-based fallback.
(tests/cover/test_top_k_split.py reads the k-split path's bracket.)"""

import pytest
import torch

from samplecheck.kernels import cut_search, top_k_top_p
from samplecheck.kernels.top_k_top_p_torch import apply_top_k_top_p_torch
from samplecheck.kernels.validation import LOGIT_DTYPES

pytestmark = pytest.mark.interpreter

VOCAB = 3000  # past the interpreter's CAP (256) and below its BLOCK (4096): most lanes have no column


def _short_rows(dtype, device, finite=(20, 1, 45), k=50):
    """Rows with `finite` entries above -inf each (at random columns; the second row's one entry
    beside NaN), the rest -inf; every count below k."""
    assert max(finite) < k
    gen = torch.Generator().manual_seed(7)
    x = torch.full((len(finite), VOCAB), float("-inf"))
    for row, count in enumerate(finite):
        columns = torch.randperm(VOCAB, generator=gen)[:count]
        x[row, columns] = torch.randn(count, generator=gen) * 3
    every_500th = torch.arange(VOCAB) % 500 == 0
    x[1, every_500th & x[1].isneginf()] = float("nan")
    return x.to(dtype).to(device)


@pytest.fixture
def search_steps(device, monkeypatch):
    """The one-program kernel alone (no split path), its full-row search steps counted."""
    if device.type != "cpu":
        pytest.skip("counts the interpreter's calls of a jitted function")
    for plan in ("split_plan", "chunks_plan", "k_split_plan"):
        monkeypatch.setattr(top_k_top_p, plan, lambda *args: None)
    calls = []
    tally = cut_search.tally_above
    monkeypatch.setattr(cut_search, "tally_above", lambda *args: calls.append(1) or tally(*args))
    return calls


@pytest.mark.parametrize("dtype", LOGIT_DTYPES, ids=str)
@pytest.mark.parametrize("with_p", [False, True], ids=["k", "k+p"])
def test_rows_short_of_k_take_no_search_step(dtype, with_p, device, search_steps):
    logits = _short_rows(dtype, device)
    batch = logits.shape[0]
    k = torch.full((batch,), 50, device=device)
    p = torch.full((batch,), 0.9, device=device) if with_p else None
    expected = apply_top_k_top_p_torch(logits.clone(), k, p)
    assert top_k_top_p.LAUNCH_CONFIG[device.type]["LANES"] >= 50, "k past the lanes: no lane bound to test"
    masked = top_k_top_p.apply_top_k_top_p(logits.clone(), k, p)
    torch.testing.assert_close(masked, expected, rtol=0, atol=0, equal_nan=True)
    assert not search_steps, f"{len(search_steps)} full-row search steps on rows with fewer than k entries above -inf"


def test_a_row_of_neg_inf_and_nan_takes_no_search_step(device, search_steps):
    logits = torch.full((2, VOCAB), float("-inf"), device=device)
    logits[1, ::3] = float("nan")
    masked = top_k_top_p.apply_top_k_top_p(logits.clone(), torch.tensor([5, 5], device=device),
                                           torch.tensor([0.5, 0.5], device=device))
    assert masked.isneginf().all(), "NaN is dropped, -inf stays"
    assert not search_steps

