"""The checkout's pytest configuration: none of its own. Options, fixtures, profiles, markers
and the registry parametrization come from samplecheck's pytest plugin
(`samplecheck.harness.plugin`, entry point `pytest11`), which `bash scripts/setup.sh`
installs (`pip install -e .`) exactly as `pip install samplecheck` does in another repo."""

import pytest


def pytest_configure(config):
    if not config.pluginmanager.has_plugin("samplecheck"):
        raise pytest.UsageError("samplecheck's pytest plugin is not loaded: install the checkout first "
                                "(bash scripts/setup.sh, or pip install -e .)")
