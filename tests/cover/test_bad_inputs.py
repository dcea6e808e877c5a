"""The bad-input table (samplecheck.families.bad_inputs) on every backend of every record,
judged by samplecheck.judging.bad_calls: each entry raises its declared error with a message
naming the caller's argument and its range, or gives its documented result; in every case no
input changes unless the contract writes it (docs/validation.md). Backends we do not ship
(FlashInfer's adapters, plug-ins): error entries only; plug-ins (error_messages=False) by
exception type.
Counts per outcome for a device: `samplecheck badinputs --device D`."""

import pytest

from samplecheck.families.bad_inputs import TABLE
from samplecheck.judging import bad_calls

pytestmark = pytest.mark.interpreter


def pytest_generate_tests(metafunc):
    if "bad_input" not in metafunc.fixturenames:
        return
    from samplecheck.registry.matrix import REGISTRY

    device = metafunc.config.samplecheck_device.type
    metafunc.parametrize("bad_input", [
        pytest.param((entry, backend), id=f"{info.name}-{backend.name}-{entry.description.replace(' ', '_')}")
        for entry, info, backend in bad_calls.cases(TABLE, device, REGISTRY)])


def test_bad_input(bad_input, device):
    entry, backend = bad_input
    outcome = bad_calls.run(entry, backend.resolve(), device.type, messages=backend.error_messages)
    assert outcome.kind in (bad_calls.CLEAR, bad_calls.DOCUMENTED), f"{outcome.kind}: {outcome.detail}"
    assert (outcome.kind == bad_calls.CLEAR) == (entry.error is not None), outcome.detail
