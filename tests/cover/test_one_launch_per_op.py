"""Value checks cost no launch of their own (issue 31: one launch per op; docs/validation.md).
Deferred (a GPU's default mode), a call of each op launches its own kernels and nothing else:
the same launches as a call with value checks off, so one for every single-kernel op. An op
with id lists checks them in its own kernel up to INLINE_CHECK_IDS ids and launches its fused
check first beyond: on both paths, an error input gives the eager error (a value error from
`raise_pending()`, after a call that wrote nothing). A guard's range checks take one launch
of the range kernel between them (more only beyond its slots of a dtype), each on its own bit."""

import collections
import inspect
import math

import pytest
import torch
import triton.language as tl
from triton.runtime.jit import KernelInterface

import samplecheck.infos  # noqa: F401  (registers the records whose error inputs are tried)
from samplecheck.families.errors import call, floats, ids
from samplecheck.judging.bad_calls import CHECK_PATHS, changed, snapshot
from samplecheck.kernels.bad_words import apply_bad_words
from samplecheck.kernels.guard import (FLOAT32_MAX, INLINE_CHECK_IDS, RANGE_SLOTS, RangeCheck, ValueGuard,
                                       _ranges_guard_kernel)
from samplecheck.kernels.gumbel import gumbel_sample
from samplecheck.kernels.logit_bias import apply_logit_bias
from samplecheck.kernels.logprobs import compute_logprobs
from samplecheck.kernels.min_p import apply_min_p
from samplecheck.kernels.penalties import apply_penalties
from samplecheck.kernels.sampling_params import SamplingBatch, apply_sampling_params
from samplecheck.kernels.temperature import apply_temperature
from samplecheck.kernels.top_k_top_p import apply_top_k_top_p
from samplecheck.kernels.validation import guard_range, raise_pending, unchecked_values, value_checks
from samplecheck.registry.matrix import RECORDS
from samplecheck.registry.records import zeros_on

pytestmark = pytest.mark.interpreter

PENALTIES = dict(prompt_token_ids=ids([[1, 2, -1], [3, 8, -1]]), output_token_ids=ids([[1, -1], [-1, 8]]),
                 repetition_penalty=floats([1.2, 1.0]), frequency_penalty=floats([0.5, 0.0]),
                 presence_penalty=floats([0.0, -1.0]))


def logit_bias_args(dtype=torch.int64) -> dict:
    """Every list and count of apply_logit_bias, its ids and counts of `dtype`."""
    return dict(allowed_token_ids=ids([[1, 2], [-1, -1]], dtype), logit_bias_ids=ids([[1], [2]], dtype),
                logit_bias_values=floats([[1.0], [-1.0]]), stop_token_ids=ids([[3], [4]], dtype),
                min_tokens=ids([2, 2], dtype), output_len=ids([0, 3], dtype))


LOGIT_BIAS = logit_bias_args()
# (entry point, make(device) of a valid call): every op, each kernel path of min_p and penalties.
CALLS = {
    "temperature": (apply_temperature, call(temperature=floats([0.5, 2.0]))),
    "min_p": (apply_min_p, call(min_p=floats([0.1, 0.0]))),
    "min_p-split": (apply_min_p, call(zeros_on(1, 9000), min_p=floats([0.1]))),
    "penalties-row-sort": (apply_penalties, call(**PENALTIES, pairs_max_work=0)),
    "penalties-pairs": (apply_penalties, call(**PENALTIES, pairs_max_work=2**62)),
    "penalties-host-sorted": (apply_penalties, call(**PENALTIES, in_kernel_max_length=0)),
    "logit_bias": (apply_logit_bias, call(**LOGIT_BIAS)),
    "logit_bias-int32": (apply_logit_bias, call(**logit_bias_args(torch.int32))),
    "bad_words": (apply_bad_words, call(bad_words=ids([[[1, 2]], [[3, -1]]]), output_token_ids=ids([[1, -1], [0, 4]]))),
    "gumbel_sample": (gumbel_sample, call(seeds=ids([1, 2]), positions=ids([0, 3]), temperature=floats([1.0, 0.0]))),
    "logprobs": (compute_logprobs, call(sampled=ids([1, 2]), num_logprobs=2)),
    "top_k_top_p": (apply_top_k_top_p, call(k=ids([2, 0]), p=floats([0.9, 1.0]))),
    "top_k_top_p-split": (apply_top_k_top_p, call(zeros_on(1, 65536), p=floats([0.9]))),
}
# Ops whose call is several kernels of their own: min_p's split path (two), logprobs (three),
# top-p's split path (four).
MULTI_KERNEL = ("min_p-split", "logprobs", "top_k_top_p-split")
# The records whose error inputs are tried on both check paths, and their entry points.
LIST_OPS = {"penalties": apply_penalties, "logit_bias": apply_logit_bias, "bad_words": apply_bad_words}


@pytest.fixture
def launches(monkeypatch):
    """Counts the Triton launches (`kernel[grid](...)`, compiled or interpreted) by kernel name."""
    counted = collections.Counter()
    launch = KernelInterface.__getitem__

    def counting(kernel, grid):
        counted[kernel.__name__] += 1
        return launch(kernel, grid)
    monkeypatch.setattr(KernelInterface, "__getitem__", counting)
    return counted


def launched(launches, mode, entry, make, device) -> collections.Counter:
    """The launches of one call made by `make` in value-check `mode` ("off": unchecked)."""
    args, kwargs = make(device)
    launches.clear()
    with unchecked_values() if mode == "off" else value_checks(mode):
        entry(*args, **kwargs)
        raise_pending()
    return collections.Counter(launches)


@pytest.mark.parametrize("op", CALLS)
def test_value_checks_add_no_launch(op, launches, device):
    entry, make = CALLS[op]
    deferred, unchecked = (launched(launches, mode, entry, make, device) for mode in ("deferred", "off"))
    assert deferred == unchecked, f"{op}: deferred {dict(deferred)}, unchecked {dict(unchecked)}"
    if op not in MULTI_KERNEL:
        assert sum(deferred.values()) == 1, f"{op}: {dict(deferred)}"


# Calls whose kernel does not run (an empty vocabulary, no logprobs asked), with a bad value.
NO_KERNEL = {
    "temperature": (apply_temperature, call(zeros_on(2, 0), temperature=floats([0.5, -1.0]))),
    "min_p": (apply_min_p, call(zeros_on(2, 0), min_p=floats([0.1, 2.0]))),
    "penalties": (apply_penalties, call(zeros_on(2, 0), **{**PENALTIES, "output_token_ids": ids([[3], [-1]])})),
    "logprobs": (compute_logprobs, call(sampled=ids([1, 8]), num_logprobs=None)),
}


@pytest.mark.parametrize("op", NO_KERNEL)
def test_checks_run_without_the_kernel(op, device):
    entry, make = NO_KERNEL[op]
    args, kwargs = make(device)
    with value_checks("eager"), pytest.raises(ValueError) as eager:
        entry(*args, **kwargs)
    with value_checks("deferred"), pytest.raises(ValueError) as deferred:
        entry(*args, **kwargs)
        raise_pending()
    assert str(deferred.value) == str(eager.value)


def _error_params():
    return [pytest.param(entry, error, path, id=f"{name}-{error.description.replace(' ', '_')}-{path}")
            for name, entry in LIST_OPS.items() for error in RECORDS[name].error_inputs for path in CHECK_PATHS]


@pytest.mark.parametrize("entry, error, path", _error_params())
def test_both_check_paths_give_the_eager_error(entry, error, path, launches, device, monkeypatch):
    monkeypatch.setitem(INLINE_CHECK_IDS, torch.device(device).type, CHECK_PATHS[path])
    args, kwargs = error.make(device)
    with value_checks("eager"), pytest.raises(error.error, match=error.match) as eager:
        entry(*args, **kwargs)
    before = snapshot(args, kwargs)
    launches.clear()
    with value_checks("deferred"):
        try:
            entry(*args, **kwargs)
        except error.error as raised:  # a layout error: raised in the call
            deferred = raised
        else:
            with pytest.raises(error.error) as pending:
                raise_pending()
            deferred = pending.value
            guard_launched = any(name.endswith("_guard_kernel") for name in launches)
            assert guard_launched == (path == "launched-first"), dict(launches)
    assert not changed(before, args, kwargs), "the deferred call wrote"
    assert str(deferred) == str(eager.value)


@pytest.mark.parametrize("k_dtype", (torch.int32, torch.int64))
def test_sampler_launches_its_range_checks_at_once(k_dtype, launches, device):
    """The sampler's five range checks (temperature, min_p, top_k, top_p, positions) take one
    launch of the range kernel; its id lists' fused check stays a launch of its own."""
    def make(device):
        params = SamplingBatch(
            seeds=ids([1, 2])(device), positions=ids([0, 3])(device), temperature=floats([0.5, 1.0])(device),
            min_p=floats([0.1, 0.0])(device), top_k=ids([2, 0], k_dtype)(device), top_p=floats([0.9, 1.0])(device),
            allowed_token_ids=ids([[1, 2], [-1, -1]])(device))
        return (torch.zeros(2, 8, device=device), params), {}
    deferred, unchecked = (launched(launches, mode, apply_sampling_params, make, device)
                           for mode in ("deferred", "off"))
    checks = collections.Counter({"_ranges_guard_kernel": 1, "_logit_bias_guard_kernel": 1})
    assert deferred == unchecked + checks, f"deferred {dict(deferred)}, unchecked {dict(unchecked)}"


# (name, values in range, lo, hi, lo_open, hi_open, a value out of range): each end open and
# closed, NaN, and the extreme int64 bounds, which only an exact comparison tells apart.
RANGES = {
    "top_p": (floats([0.5, 1.0]), 0.0, 1.0, True, False, 0.0),
    "min_p": (floats([0.0, 1.0]), 0.0, 1.0, False, False, math.nan),
    "temperature": (floats([1e-30, FLOAT32_MAX]), 0.0, FLOAT32_MAX, True, False, math.inf),
    "half_open": (floats([-2.0, 1.5]), -2.0, 2.0, False, True, 2.0),
    "top_k": (ids([-1, 2**31 - 1], torch.int32), -1, 2**31 - 1, False, False, -2),
    "positions": (ids([0, 2**63 - 1]), 0, 2**63 - 1, False, False, -1),
    "below_max": (ids([-2**63, 2**63 - 2]), -2**63, 2**63 - 2, False, False, 2**63 - 1),
    "open_ints": (ids([0, 5]), -1, 6, True, True, 6),
}
FIVE = ("top_p", "min_p", "temperature", "top_k", "positions")  # the sampler's dtypes: one launch
# Every range (four fp32 checks, one int32, three int64): the fourth fp32 and the third int64
# check are beyond the kernel's slots, and take a second launch.
GUARDS = {"five": (FIVE, 1), "eight": (tuple(RANGES), 2)}


def _range_guard(names, bad, device) -> ValueGuard:
    """A guard with the range check of each of `names`, its values in range but for `bad`'s."""
    guard = ValueGuard(torch.device(device), "ranges")
    for name in names:
        make, lo, hi, lo_open, hi_open, out = RANGES[name]
        values = make(device)
        if name == bad:
            values[1] = out
        guard_range(guard, name, values, "in range", lo, hi, lo_open=lo_open, hi_open=hi_open)
    return guard


@pytest.mark.parametrize("guard, bad", [(guard, bad) for guard, (names, _) in GUARDS.items()
                                        for bad in (None,) + names])
def test_range_checks_set_their_own_bits(guard, bad, launches, device):
    """Deferred, the range checks' launches set exactly the failing check's bit (none if `bad`
    is None), and `raise_pending()` raises that check's eager error."""
    names, expected_launches = GUARDS[guard]
    checks = _range_guard(names, bad, device)
    launches.clear()
    with value_checks("deferred"):
        flag = checks.settle()
        assert int(flag.item()) == (0 if bad is None else 1 << names.index(bad))
        if bad is None:
            raise_pending()
        else:
            with pytest.raises(ValueError, match=f"^{bad} must be in range"):
                raise_pending()
    assert launches == {"_ranges_guard_kernel": expected_launches}, dict(launches)


def test_empty_range_checks_launch_nothing(launches, device):
    """A range check of no values fails nothing, and a guard with no other check launches nothing."""
    guard = ValueGuard(torch.device(device), "empty")
    guard.check("empty", lambda: None, RangeCheck(torch.empty(0, device=device), 0.0, 1.0))
    launches.clear()
    with value_checks("deferred"):
        assert int(guard.settle().item()) == 0
        raise_pending()
    assert not launches


def test_range_checks_refuse_a_dtype_without_slots(device):
    guard = ValueGuard(torch.device(device), "fp16")
    guard_range(guard, "half", floats([0.5], torch.float16)(device), "in [0, 1]", 0.0, 1.0)
    with value_checks("deferred"), pytest.raises(TypeError, match="half are torch.float16"):
        guard.settle()


def test_range_kernel_slots_follow_their_dtypes():
    """Slot i of the range kernel takes RANGE_SLOTS[i]'s bounds: fp32 for float values, int64 for
    integers (annotations, which only a GPU compile reads)."""
    params = inspect.signature(_ranges_guard_kernel.fn).parameters
    slots = [(f"x{i}", f"n{i}", f"lo{i}", f"hi{i}", f"how{i}") for i in range(len(RANGE_SLOTS))]
    assert list(params) == ["flag_ptr", *(name for slot in slots for name in slot), "BLOCK"]
    for i, dtype in enumerate(RANGE_SLOTS):
        bound = tl.float32 if dtype.is_floating_point else tl.int64
        assert params[f"lo{i}"].annotation == params[f"hi{i}"].annotation == bound, f"slot {i}"
