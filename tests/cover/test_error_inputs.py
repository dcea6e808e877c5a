"""Bad input raises the declared error, whose message names the parameter and its range
(plugged-in backends: the declared exception type, whatever the wording), and changes
nothing: in each value-check mode that raises (docs/validation.md). "eager" raises in the
call; "deferred" checks on the device, writes nothing, and raises from `raise_pending()`
(a layout error still raises in the call)."""

import pytest

from samplecheck.kernels.validation import raise_pending, value_checks
from samplecheck.tests.cover.bad_input_outcomes import changed, snapshot

pytestmark = pytest.mark.interpreter


@pytest.mark.parametrize("mode", ["eager", "deferred"])
def test_error_inputs(error_case, device, mode):
    info, backend, error = error_case
    args, kwargs = error.make(device)
    before = snapshot(args, kwargs)
    with value_checks(mode), pytest.raises(error.error, match=error.match if backend.error_messages else None):
        backend.resolve()(*args, **kwargs)
        raise_pending()
    assert not changed(before, args, kwargs), f"{mode}: the call changed its inputs before raising"
