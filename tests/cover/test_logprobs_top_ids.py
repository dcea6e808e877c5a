"""Our logprobs kernels' own choice of the top-k ids (`samplecheck.kernels.logprobs`).

For 1 <= k <= TOP_IDS_MAX and at most MERGE_TILES[-1] candidates a row, the kernels choose
the ids (k codes per chunk, merged per row); other calls take torch.topk. Checked here:
- the routing (`merge_tile`) at its edges;
- the ids: their values are torch.topk's, in its order (NaN above +inf, then +inf, ...; -0.0
  tied with +0.0), distinct, ties resolved to the lowest ids, and the rest of the output
  (logprobs, ranks) bitwise that of the torch.topk path wherever the ids agree; over every
  logits dtype, rows whose top entries all lie in one chunk, chunks shorter than k, tie-heavy,
  all -inf and NaN rows;
- the oracle's k-th largest value ranks NaN first on every device (finding F17).
"""

import pytest
import torch

from samplecheck.kernels import logprobs
from samplecheck.kernels.validation import LOGIT_DTYPES
from samplecheck.oracles.logprobs import kth_largest

pytestmark = pytest.mark.interpreter

CHUNK = logprobs.CHUNK


@pytest.mark.parametrize("vocab, k, tile", [
    (17, 1, 256), (17, 17, 256), (CHUNK * 3 + 1, 64, 256), (CHUNK * 5, 64, 1024),
    (CHUNK * 64, 64, 4096), (CHUNK * 64 + 1, 64, 0), (CHUNK * 64 + 1, 63, 4096), (CHUNK, 65, 0),
    (CHUNK, 0, 0), (CHUNK, -1, 0)])
def test_merge_tile_routing(vocab, k, tile):
    assert logprobs.merge_tile(vocab, k) == tile


def _rows(kind: str, batch: int, vocab: int, gen: torch.Generator) -> torch.Tensor:
    x = torch.randn(batch, vocab, generator=gen, dtype=torch.float64) * 3
    if kind == "ties":
        x = x.round()
    elif kind == "one_chunk":  # every large value in the last chunk, past column 0 of it
        x[:, -min(vocab, 300):] += 100
    elif kind == "edges":
        x[:, ::5] = float("-inf")
        x[0, :6] = torch.tensor([float("nan"), float("inf"), 0.0, -0.0, float("-inf"), float("nan")])
        x[-1] = float("-inf")
    elif kind == "zeros":
        x[:] = 0.0
        x[:, 1::2] = -0.0
    return x


def _value_order(values: torch.Tensor) -> torch.Tensor:
    """fp64 values of fp32-representable logits in torch.topk's order: NaN above +inf, which
    is above every finite value (-0.0 equal to +0.0, as IEEE compares them)."""
    return values.nan_to_num(nan=4e38, posinf=3.9e38, neginf=-3.9e38)


@pytest.mark.parametrize("dtype", LOGIT_DTYPES, ids=str)
@pytest.mark.parametrize("kind", ["randn", "ties", "one_chunk", "edges", "zeros"])
@pytest.mark.parametrize("vocab, k", [(7, 7), (CHUNK + 3, 20), (2 * CHUNK + 5, 64), (300, 1)])
def test_kernel_ids_are_topk(dtype, kind, vocab, k, device, monkeypatch):
    gen = torch.Generator().manual_seed(vocab * 7 + k)
    logits = _rows(kind, 3, vocab, gen).to(dtype).to(device)
    sampled = torch.randint(0, vocab, (3,), generator=gen).to(device)
    assert logprobs.merge_tile(vocab, k)
    ours = logprobs.compute_logprobs(logits, sampled=sampled, num_logprobs=k)
    monkeypatch.setattr(logprobs, "TOP_IDS_MAX", 0)
    by_torch = logprobs.compute_logprobs(logits, sampled=sampled, num_logprobs=k)

    ids = ours.token_ids[:, 1:].cpu()
    assert torch.equal(ours.token_ids[:, 0], sampled)
    assert all(len(set(row.tolist())) == k for row in ids), f"repeated ids: {ids}"
    # The expected order is torch.topk's on the CPU (NaN first, the module docstring), wherever
    # the kernels ran.
    x = logits.double().cpu()
    expected = torch.topk(x, k, dim=-1).values
    torch.testing.assert_close(_value_order(x.gather(1, ids)), _value_order(expected), rtol=0, atol=0)
    # The chosen set is every entry above the k-th value, then the lowest ids at it, in order.
    key = _value_order(x)
    for row in range(3):
        chosen = ids[row].tolist()
        kth = key[row, chosen[-1]]
        above = (key[row] > kth).nonzero().flatten()
        at = (key[row] == kth).nonzero().flatten()[:k - len(above)]
        assert sorted(chosen) == sorted(above.tolist() + at.tolist()), row
        for a, b in zip(chosen, chosen[1:]):
            assert key[row, a] > key[row, b] or (key[row, a] == key[row, b] and a < b), (row, a, b)

    same = (ours.token_ids == by_torch.token_ids).all(dim=1)
    assert torch.equal(ours.ranks, by_torch.ranks)
    assert torch.equal(ours.logprobs[same].view(torch.int32), by_torch.logprobs[same].view(torch.int32))


def test_oracle_kth_ranks_nan_first(device):
    """The logprobs oracle's k-th largest value on the test's device is torch.topk's on the CPU:
    on the row of finding F17 (docs/findings.md), where torch.topk on CUDA leaves NaN out at
    k = 64."""
    vocab, k = 2 * CHUNK + 5, 64
    x = _rows("edges", 3, vocab, torch.Generator().manual_seed(vocab * 7 + k)).to(torch.bfloat16).double()
    expected = x.topk(k, dim=-1).values[:, -1]
    torch.testing.assert_close(kth_largest(x.to(device), k).cpu(), expected, rtol=0, atol=0, equal_nan=True)
