"""Value checks run in modes (docs/validation.md): unchecked (`unchecked_values()`), no value
is checked, and an out-of-range id still never makes a kernel read or write outside its
tensors (the logits' row-stride gaps, and the rows an id >= V would reach, stay bitwise
unchanged); deferred and captured, a bad value makes the call write nothing."""

import pytest
import torch

from samplecheck.harness.runner import reference, run
from samplecheck.kernels.bad_words import apply_bad_words
from samplecheck.kernels.logit_bias import apply_logit_bias
from samplecheck.kernels.temperature import apply_temperature
from samplecheck.kernels.validation import raise_pending, unchecked_values, value_check_mode, values_checked

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
        raise_pending()
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


@pytest.mark.gpu
def test_graph_capture_guards_values(device):
    """Captured, the value checks run on the device (no sync, so the capture succeeds): a
    replay with a negative T writes nothing, and one with valid values equals eager."""
    logits = torch.randn(B, V, device=device)
    good, bad = torch.tensor([2.0, 0.5], device=device), torch.tensor([-2.0, 0.5], device=device)
    expected = apply_temperature(logits.clone(), good)
    static, temperature = logits.clone(), good.clone()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        assert value_check_mode(static.device) == "captured"
        apply_temperature(static, temperature)
    for values, want in ((bad, logits), (good, expected)):
        static.copy_(logits)
        temperature.copy_(values)
        graph.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(static, want, rtol=0, atol=0)


@pytest.mark.matrix(kernel="penalties", guard_flag=True, dtypes=(torch.float32, torch.float16), layouts=("contig",))
@pytest.mark.parametrize("penalty", [0.0, -2.0, float("nan"), float("inf")])
def test_penalties_out_of_range_applied_as_given(combo, device, penalty):
    """Unchecked, penalties outside their ranges are applied as the documented arithmetic
    gives (the oracle's): a repetition penalty of 0 (0 * 0 = 0 at a zero logit, l / 0 = inf
    above it), negative, NaN or inf, beside frequency and presence penalties outside [-2, 2],
    on zero, signed, -inf and finite logits. Not bf16: which NaN a bf16 store keeps is the
    interpreter's conversion (finding F9), not this arithmetic."""
    row = [0.0, -0.0, 1.5, -1.5, float("-inf"), 2.0]
    logits = torch.tensor([row, row], device=device).to(combo.dtype)
    every = torch.arange(len(row), device=device)
    args = {"prompt_token_ids": every.repeat(2, 1), "output_token_ids": ids([[0, 1, 2], [3, 4, 5]], device),
            "repetition_penalty": torch.full((2,), penalty, device=device),
            "frequency_penalty": torch.tensor([0.0, 3.0], device=device),
            "presence_penalty": torch.tensor([-5.0, 0.0], device=device)}
    original = logits.clone()
    with unchecked_values():
        expected = reference(combo, original, args)
        output = run(combo, logits, args)
    combo.info.check(original, output, expected, f"{combo.id}: repetition penalty {penalty}, unchecked")
