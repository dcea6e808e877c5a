"""The one-program kernel's two ways of ranking its candidates (`samplecheck.kernels.cut_search`):
a digit of the cut at a time (`digit_cut`, RANK_ROWS = 0, the GPU's launch config) and every
candidate compared with every other in tiles (`rank_cut`: the interpreter's config, and the split
paths' programs share it) mask every row bitwise the same, top-k, top-p and both, on rows with ties, NaN, +-inf, signed
zeros, an all but -inf row and a flat one, in each logits dtype. A small CAP makes the rows'
brackets overflow it, so both the candidate pass and the full-row search feed the ranking; few
LANES leave most k without the lane bound, so the top-k candidates reach below the k-th entry.
(tests/cover/test_digit_cut.py compares the two functions alone on drawn brackets.)
"""

import pytest
import torch

from samplecheck.kernels import top_k_top_p
from samplecheck.kernels.validation import LOGIT_DTYPES

pytestmark = pytest.mark.interpreter

RANKINGS = {"digits": dict(RANK_ROWS=0, RANK_COLS=0), "tiled": dict(RANK_ROWS=16, RANK_COLS=64)}


def _rows(dtype, device):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(6, 300, generator=gen)
    x[1] = torch.randn(300, generator=gen).round()  # runs of equal keys
    x[2, ::7] = float("nan")
    x[2, 5] = float("inf")
    x[3, ::3] = -0.0
    x[3, 1::3] = 0.0
    x[4, :150] = float("-inf")
    x[5] *= 1e-3  # a flat row
    return x.to(dtype).to(device)


@pytest.mark.parametrize("dtype", LOGIT_DTYPES, ids=str)
def test_digit_and_tiled_rankings_mask_alike(device, dtype, monkeypatch):
    config = top_k_top_p.LAUNCH_CONFIG[device.type]
    monkeypatch.setitem(config, "CAP", 64)
    monkeypatch.setitem(config, "LANES", 32)  # k above it: no lane bound
    for plan in ("split_plan", "chunks_plan", "k_split_plan"):  # the one-program kernel alone
        monkeypatch.setattr(top_k_top_p, plan, lambda *args: None)
    k = torch.tensor([1, 40, 7, 100, 3, 250], device=device)
    p = torch.tensor([0.5, 0.9, 0.3, 0.99, 0.7, 0.95], device=device)
    for k_arg, p_arg in ((k, None), (None, p), (k, p)):
        masked = {}
        for name, ranking in RANKINGS.items():
            for key, value in ranking.items():
                monkeypatch.setitem(config, key, value)
            masked[name] = top_k_top_p.apply_top_k_top_p(_rows(dtype, device), k_arg, p_arg)
        assert masked["digits"].isinf().any(), "nothing was masked"
        torch.testing.assert_close(masked["digits"], masked["tiled"], rtol=0, atol=0, equal_nan=True,
                                   msg=lambda m: f"k={k_arg is not None}, p={p_arg is not None}: {m}")
