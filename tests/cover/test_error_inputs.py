"""Bad input raises the declared error, whose message names the parameter and its range."""

import pytest

pytestmark = pytest.mark.interpreter


def test_error_inputs(error_case, device):
    info, backend, error = error_case
    args, kwargs = error.make(device)
    with pytest.raises(error.error, match=error.match):
        backend.resolve()(*args, **kwargs)
