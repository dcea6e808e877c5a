"""The bad-input table (tests/cover/bad_input_table.py) on every backend of every record:
each entry raises its declared error with a message naming the caller's field and its
range, or gives its documented result; in every case no input changes unless the contract
writes it (docs/validation.md). Backends we do not ship (FlashInfer's adapters, plug-ins): error
entries only; plug-ins (error_messages=False) by exception type.
Counts per outcome for a device: `samplecheck badinputs --device D`."""

import pytest

from samplecheck.tests.cover import bad_input_outcomes as outcomes

pytestmark = pytest.mark.interpreter


def pytest_generate_tests(metafunc):
    if "bad_input" not in metafunc.fixturenames:
        return
    from samplecheck.registry.matrix import REGISTRY

    device = metafunc.config.samplecheck_device.type
    metafunc.parametrize("bad_input", [
        pytest.param((entry, backend), id=f"{info.name}-{backend.name}-{entry.description.replace(' ', '_')}")
        for entry, info, backend in outcomes.cases(device, REGISTRY)])


def test_bad_input(bad_input, device):
    entry, backend = bad_input
    outcome = outcomes.run(entry, backend.resolve(), device.type, messages=backend.error_messages)
    assert outcome.kind in (outcomes.CLEAR, outcomes.DOCUMENTED), f"{outcome.kind}: {outcome.detail}"
    assert (outcome.kind == outcomes.CLEAR) == (entry.error is not None), outcome.detail
