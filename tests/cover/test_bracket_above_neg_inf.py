"""A cut's bracket never reaches down to -inf (`samplecheck.kernels.top_k_top_p`'s module
docstring): a row with fewer than k entries above -inf (a row after min_p, or one that a logit
mask left short) keeps them all from its first candidate pass. A bracket down to -inf would hold
every -inf entry, overflow the scratch and take full-row search steps (on an H100, 600 µs for
such a row of 151936 columns against 158 µs for the others, docs/benchmarks.md, session 41).

Under the interpreter each full-row search step is a call of `cut_search.tally_above`, counted
here; the masks are checked against the sort-based fallback. The k-split path's bracket is read
from its state buffer."""

import pytest
import torch
from triton.runtime.jit import KernelInterface

from samplecheck.kernels import cut_search, top_k_split, top_k_top_p
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


def test_the_k_split_bracket_starts_above_neg_inf(device, monkeypatch):
    """The k-split path's lo (its `_bound_kernel` state) is the row's smallest key above -inf
    where fewer than k lane maxima are above -inf."""
    config = top_k_split.K_SPLIT_CONFIG[device.type]
    for key, value in (("MIN_VOCAB", 1), ("MIN_ROWS", 1)):
        monkeypatch.setitem(config, key, value)
    monkeypatch.setattr(top_k_top_p, "chunks_plan", lambda *args: None)
    seen = {}
    launch = KernelInterface.__getitem__

    def recording(kernel, grid):
        run = launch(kernel, grid)
        return lambda *args, **kwargs: seen.__setitem__(kernel.__name__, args) or run(*args, **kwargs)

    monkeypatch.setattr(KernelInterface, "__getitem__", recording)
    logits = _short_rows(torch.float32, device)
    assert top_k_split.k_split_plan(*logits.shape, device.type, True, False), "the call must take the k-split path"
    k = torch.full((logits.shape[0],), 50, device=device)
    expected = apply_top_k_top_p_torch(logits.clone(), k, None)
    masked = top_k_top_p.apply_top_k_top_p(logits.clone(), k, None)
    torch.testing.assert_close(masked, expected, rtol=0, atol=0, equal_nan=True)
    state = seen["_bound_kernel"][3].view(logits.shape[0], top_k_split.STATE.value).cpu()
    rows = logits.cpu()
    smallest = torch.where(rows.isnan() | rows.isneginf(), float("inf"), rows).min(dim=1).values
    keys = smallest.view(torch.int32)
    keys = torch.where(keys < 0, keys ^ 0x7FFFFFFF, keys)  # `order_key` on the host
    assert state[:, top_k_split.LO.value].tolist() == keys.tolist()
