"""Value checks are switchable (docs/validation.md): inside `unchecked_values()` (and during
CUDA graph capture) no value is read back, and an out-of-range id still never makes a kernel
read or write outside its tensors: the logits' row-stride gaps, and the rows an id >= V
would reach, stay bitwise unchanged."""

import pytest
import torch

from samplecheck.kernels.bad_words import apply_bad_words
from samplecheck.kernels.logit_bias import apply_logit_bias
from samplecheck.kernels.logprobs import compute_logprobs
from samplecheck.kernels.temperature import apply_temperature
from samplecheck.kernels.validation import unchecked_values, values_checked

pytestmark = pytest.mark.interpreter

B, V, GAP = 2, 8, 8


def padded(device):
    """[B, V] logits 0..V-1 inside a [B, V + GAP] buffer whose gaps hold 99."""
    storage = torch.full((B, V + GAP), 99.0, device=device)
    storage[:, :V] = torch.arange(V, dtype=torch.float32, device=device)
    return storage, storage[:, :V]


def ids(values, device):
    return torch.tensor(values, dtype=torch.int64, device=device)


def test_switch():
    assert values_checked()
    with unchecked_values():
        assert not values_checked()
    assert values_checked()


def test_checked_by_default_unchecked_inside(device):
    logits = torch.zeros(B, V, device=device)
    bad = torch.tensor([-1.0, 1.0], device=device)
    with pytest.raises(ValueError, match="temperature must be finite and >= 0"):
        apply_temperature(logits, bad)
    with unchecked_values():
        apply_temperature(logits, bad)  # documented: divided as given


@pytest.mark.parametrize("call", ["allowed", "bias", "stop", "bad_words"])
def test_out_of_range_ids_touch_nothing_outside(call, device):
    storage, logits = padded(device)
    before = storage.clone()
    out_of_range = ids([[V, V + 3], [-5, V + GAP]], device)
    with unchecked_values():
        if call == "allowed":
            apply_logit_bias(logits, allowed_token_ids=out_of_range)
        elif call == "bias":
            apply_logit_bias(logits, logit_bias_ids=out_of_range,
                             logit_bias_values=torch.ones(B, 2, device=device))
        elif call == "stop":
            apply_logit_bias(logits, stop_token_ids=out_of_range, min_tokens=ids([5, 5], device),
                             output_len=ids([0, 0], device))
        else:
            apply_bad_words(logits, bad_words=out_of_range[:, :, None], output_token_ids=ids([[-1], [-1]], device))
    torch.testing.assert_close(storage[:, V:], before[:, V:], rtol=0, atol=0)
    if call != "allowed":  # an allowlist of no valid id: the row is unspecified, inside the row
        torch.testing.assert_close(storage, before, rtol=0, atol=0)


def test_sampled_out_of_range_is_never_read(device):
    storage, logits = padded(device)
    with unchecked_values():
        result = compute_logprobs(logits, sampled=ids([V, -1], device), num_logprobs=1)
    assert result.logprobs[:, 0].isnan().all() and result.ranks.tolist() == [0, 0]


@pytest.mark.gpu
def test_graph_capture_runs_no_value_check(device):
    """A negative T would raise eagerly; captured, no value is read back, so the capture
    succeeds, and its replay equals an unchecked eager call."""
    logits = torch.randn(B, V, device=device)
    temperature = torch.tensor([-2.0, 0.5], device=device)
    with unchecked_values():
        expected = apply_temperature(logits.clone(), temperature)
    apply_temperature(logits.clone(), torch.ones(B, device=device))  # compile outside the capture
    static = logits.clone()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        assert not values_checked()
        apply_temperature(static, temperature)
    static.copy_(logits)
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(static, expected, rtol=0, atol=0)
