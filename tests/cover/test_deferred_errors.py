"""Deferred value checks (docs/validation.md) on the run's device (on the CPU they run as on a
GPU when the mode is forced): a bad call writes nothing and its error comes from `raise_pending()` with the
eager message; without `raise_pending()`, it comes from a later call once the flag pool holding
it is shipped (after the pools turn over), with a message naming the parameter when the bad
call is too far back to describe. `raise_pending()` resolves every pending call, raising the
first failure's error only; `drop_pending()` resolves them raising none, and each drawn example
starts with it, so an example never raises an earlier one's error. A raised deferred error
holds no reference cycle: once dropped, the catching frame's tensors are freed at once (a
big-buffer test's far batch must leave device memory when its block ends, not when Python's
cyclic collector next runs)."""

import gc
import weakref

import pytest
import torch
from hypothesis import given, settings, strategies as st

from samplecheck.inputs.drawing import draw_case
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


def test_raise_pending_resolves_every_pool(small_pools, device):
    """A failure in each pool (the older call's pool shipped): raise_pending raises the older
    one's error and leaves nothing pending, so no later call raises the newer one."""
    with value_checks("deferred"):
        _call(BAD, device)
        for _ in range(value_modes.POOL_SLOTS - 1):  # fill the first pool
            _call(GOOD, device)
        _call([0.5, -2.0], device)  # ships the full pool; this call's flag is in the second
        # The older call, past the RECENT newest: named without its values.
        with pytest.raises(ValueError, match="value check of temperature failed in a deferred call"):
            raise_pending()
        raise_pending()
        for _ in range(2 * value_modes.POOL_SLOTS):  # the pools turn over twice
            _call(GOOD, device)
        raise_pending()


def test_drop_pending_resolves_without_raising(small_pools, device):
    with value_checks("deferred"):
        _call(BAD, device)
        value_modes.drop_pending()
        raise_pending()
        logits, before = _call(GOOD, device)
        assert not torch.equal(logits, before)


@pytest.mark.matrix(kernel="temperature", dtypes=(torch.float32,), layouts=("contig",))
@settings(max_examples=2, deadline=None)
@given(data=st.data())
def test_an_example_starts_without_earlier_failures(combo, device, budget, data):
    """`draw_case` drops the value errors of deferred calls made before the example's case was
    drawn: an example that failed or was cut short before its `raise_pending()` leaves its
    error to no later example."""
    if combo.backend.name != "triton":
        pytest.skip("the harness's behaviour, shown once, on our backend")
    with value_checks("deferred"):
        _call(BAD, device)
        draw_case(data, combo, combo.info.cases(budget))
        raise_pending()


def _raise_by_pending(device):
    raise_pending()


def _raise_by_a_later_call(device):
    for _ in range(3 * value_modes.POOL_SLOTS):
        _call(GOOD, device)


def _caught(raise_error, device) -> weakref.ref:
    """A bad deferred call's error raised by `raise_error` and caught in this frame, beside a
    tensor of the frame's own; a weak reference to that tensor."""
    held = torch.empty(4, device=device)
    with value_checks("deferred"):
        _call(BAD, device)
        with pytest.raises(ValueError):
            raise_error(device)
        raise_pending()
    return weakref.ref(held)


@pytest.mark.parametrize("raise_error", [_raise_by_pending, _raise_by_a_later_call],
                         ids=["raise_pending", "a_later_call"])
def test_a_caught_deferred_error_keeps_no_frame_alive(small_pools, device, raise_error):
    gc.collect()
    gc.disable()
    try:
        assert _caught(raise_error, device)() is None, "the catching frame's tensor outlived it (a reference cycle)"
    finally:
        gc.enable()
