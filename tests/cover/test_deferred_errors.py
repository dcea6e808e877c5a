"""Deferred value checks (docs/validation.md) on the run's device (on the CPU they run as on a
GPU when the mode is forced): a bad call writes nothing and its error comes from `raise_pending()` with the
eager message; without `raise_pending()`, it comes from a later call once the flag pool holding
it is shipped (after the pools turn over), with a message naming the parameter when the bad
call is too far back to describe."""

import pytest
import torch

from samplecheck.kernels import value_modes
from samplecheck.kernels.temperature import apply_temperature
from samplecheck.kernels.validation import raise_pending, value_checks

pytestmark = pytest.mark.interpreter

GOOD, BAD = [0.5, 2.0], [0.5, -1.0]


@pytest.fixture
def small_pools(monkeypatch):
    """Pools of 4 flags, the 2 newest calls described; fresh pools for the test."""
    monkeypatch.setattr(value_modes, "POOL_SLOTS", 4)
    monkeypatch.setattr(value_modes, "RECENT", 2)
    monkeypatch.setattr(value_modes, "_POOLS", {})


def _call(values, device):
    logits = torch.arange(8.0, device=device).reshape(2, 4)
    before = logits.clone()
    apply_temperature(logits, torch.tensor(values, device=device))
    return logits, before


def test_raise_pending_raises_the_eager_message_and_nothing_changed(small_pools, device):
    with value_checks("deferred"):
        logits, before = _call(BAD, device)
        assert torch.equal(logits, before)
        with pytest.raises(ValueError, match=r"temperature must be finite and >= 0 .*; got -1.0"):
            raise_pending()
        raise_pending()  # resolved once: nothing left to raise
        logits, before = _call(GOOD, device)
        assert not torch.equal(logits, before)


def test_a_later_call_raises_once_the_pools_turn_over(small_pools, device):
    with value_checks("deferred"):
        _call(BAD, device)
        for _ in range(value_modes.POOL_SLOTS - 1):  # fill the first pool
            _call(GOOD, device)
        # The next call ships the full pool; the one after the second pool fills resolves it.
        with pytest.raises(ValueError, match="value check of temperature failed in a deferred call"):
            for _ in range(2 * value_modes.POOL_SLOTS):
                _call(GOOD, device)
        raise_pending()
