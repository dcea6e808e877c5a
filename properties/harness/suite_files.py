"""Where samplecheck's property suite is installed, and the pytest configuration every run of it
reads.

The suite is the package `samplecheck.tests` (tests/ in a checkout), so the same files run
from a checkout and from an installed wheel. It is located by its package's spec, not
imported: the machinery only needs its folder. Every run of it uses samplecheck's own
configuration (`config_args`), never that of the project it is run in.
"""

import importlib.util
from pathlib import Path

CONFIG = Path(__file__).with_name("suite.ini")
SUITE_PACKAGE = "samplecheck.tests"


def suite_path(folder: str = "cover") -> Path:
    """The folder of the installed property tests (`cover`: the fast suite)."""
    return Path(importlib.util.find_spec(SUITE_PACKAGE).submodule_search_locations[0]) / folder


def suite_root() -> Path:
    """The folder holding the suite's `tests` package: the installed samplecheck package, or
    the checkout's root for an editable install (node ids stay `tests/cover/...`)."""
    return suite_path().parents[1]


def config_args() -> list[str]:
    """pytest arguments that make a run read samplecheck's configuration (suite.ini) alone:
    no ini file of the working directory or its parents, and no conftest.py above the suite."""
    root = str(suite_root())
    return ["-c", str(CONFIG), "--rootdir", root, "--confcutdir", root]
