"""samplecheck's suite: its fixtures (here, so they exist for its tests alone) and, when the
suite is collected in a way the entry point did not foresee, the activation of its machinery
(samplecheck.harness.options)."""

import pytest

from samplecheck.harness.options import activate


def pytest_configure(config):
    activate(config)


@pytest.fixture(scope="session")
def device(pytestconfig):
    """The torch device the kernels run on (`--sc-device`)."""
    return pytestconfig.samplecheck_device


@pytest.fixture(scope="session")
def stat_alpha(pytestconfig) -> float:
    """Per-test false-alarm rate of statistical tests (`--sc-stat-alpha`, else the profile's)."""
    from samplecheck.harness.profiles import ALPHA, profile_name

    return pytestconfig.getoption("--sc-stat-alpha") or ALPHA[profile_name(pytestconfig)]


@pytest.fixture(scope="session")
def rare_draws(pytestconfig) -> int:
    """Draws per example of the rare-events property, by profile."""
    from samplecheck.harness.profiles import RARE_DRAWS, profile_name

    return RARE_DRAWS[profile_name(pytestconfig)]


@pytest.fixture(scope="session")
def budget(device):
    """The strategies' size budget for the device (samplecheck.inputs.strategies.BUDGETS)."""
    from samplecheck.inputs.strategies import BUDGETS

    return BUDGETS[device.type]


@pytest.fixture(autouse=True)
def deferred_value_errors():
    """A deferred value check's error (docs/validation.md) surfaces in the test whose call
    failed it, at that test's teardown, never in a later test."""
    yield
    from samplecheck.kernels.value_modes import raise_pending

    raise_pending()
