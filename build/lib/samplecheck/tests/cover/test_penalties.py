"""Penalties-specific checks the generic properties cannot express: the oracle's exact fp32
rounding of sums at midpoints (where rounding the fp64 sum would be off by an ulp), and
empty batches and lists (vLLM #20484: a zero-size launch)."""

import pytest
import torch

from samplecheck.oracles.penalties import round_sum_to_fp32
from samplecheck.kernels.penalties import apply_penalties as apply

pytestmark = pytest.mark.interpreter

ULP = 2.0**-23  # fp32 spacing in [1, 2)
MAX32 = torch.finfo(torch.float32).max


@pytest.mark.parametrize("a, b, expected", [
    (1.0, ULP / 2 + 2.0**-60, 1.0 + ULP),          # fp64 sum is the midpoint, exact sum above it
    (1.0, ULP / 2 - 2.0**-60, 1.0),                 # ... below it
    (1.0, ULP / 2, 1.0),                            # an exact tie: to even
    (1.0 + ULP, ULP / 2, 1.0 + 2 * ULP),            # an exact tie: to even (up)
    (-1.0, -(ULP / 2 + 2.0**-60), -1.0 - ULP),      # negative side
    (MAX32, 2.0**103 - 2.0**60, MAX32),             # just below the overflow midpoint
    (MAX32, 2.0**103, float("inf")),                # at it: to even, i.e. inf
    (float("-inf"), 3.0, float("-inf")),
])
def test_round_sum_to_fp32(a, b, expected):
    got = round_sum_to_fp32(torch.tensor([a], dtype=torch.float64), torch.tensor([b], dtype=torch.float64))
    assert got.item() == expected


@pytest.mark.parametrize("batch, prompt, output", [(0, 3, 2), (2, 0, 0), (2, 0, 3), (2, 4, 0)])
def test_empty(device, batch, prompt, output):
    """Empty batches and lists are no-ops (no zero-size launch); a list alone still penalises."""
    logits = torch.linspace(-2, 2, batch * 8, device=device).reshape(batch, 8)
    original = logits.clone()
    ids = [torch.arange(n, device=device).repeat(batch, 1) for n in (prompt, output)]
    ones = torch.ones(batch, device=device)
    out = apply(logits, prompt_token_ids=ids[0], output_token_ids=ids[1], repetition_penalty=2 * ones,
                frequency_penalty=ones, presence_penalty=ones)
    assert out is logits
    touched = max(prompt, output) if batch else 0
    assert torch.equal(out[:, touched:], original[:, touched:])
    assert bool((out[:, :touched] != original[:, :touched]).all())
