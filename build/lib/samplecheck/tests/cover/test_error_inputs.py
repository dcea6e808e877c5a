"""Bad input raises the declared error, whose message names the parameter and its range
(plugged-in backends: the declared exception type, whatever the wording)."""

import pytest

pytestmark = pytest.mark.interpreter


def test_error_inputs(error_case, device):
    info, backend, error = error_case
    args, kwargs = error.make(device)
    with pytest.raises(error.error, match=error.match if backend.error_messages else None):
        backend.resolve()(*args, **kwargs)
