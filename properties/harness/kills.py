"""The kill table's shared run (`--sc-kills DIR`, with `--sc-mutant=A,B,...`): several mutants
hunted in one pytest run, each stopping at its first kill.

A mutant's first failed test (its call phase; a setup error is no kill) writes the file
DIR/<mutant>: that test's node id on the first line, the epoch second it ended on the second.
A mutant's tests outside its known killer's file (`Mutant.killed_by`) are deselected: the
shared run is the round of the known killers, and a mutant they miss is hunted alone, over
the whole suite, afterwards (samplecheck.tools.killtable).
Before each test of a mutant whose file exists, the test is skipped ("already killed"), in
this process and in every pytest-xdist worker sharing DIR, so a mutant costs the tests up to
its first kill, as a `-x` run of it alone would. Tests are drawn as in any other run (the seed
depends on the test id with the backend left out, samplecheck.harness.seeds), so each mutant
meets the cases it would meet alone.
"""

import os
import tempfile
import time
from pathlib import Path

import pytest

from samplecheck.harness.selection import judged_cells
from samplecheck.mutants import MUTANTS

MUTANT_PREFIX = "mutant-"  # a mutant's backend name (samplecheck.harness.plugins.mutant_backend)


def mutant_of(item) -> str | None:
    """The mutant the collected test `item` judges (None: none)."""
    names = sorted(b.removeprefix(MUTANT_PREFIX) for _, b in judged_cells(item) if b.startswith(MUTANT_PREFIX))
    return names[0] if names else None


def read_kill(folder: Path, name: str) -> tuple[str, float] | None:
    """(killer's node id, epoch second it ended) of mutant `name`, or None if not killed."""
    path = folder / name
    if not path.is_file():
        return None
    nodeid, ended = path.read_text().splitlines()[:2]
    return nodeid, float(ended)


class Kills:
    """The plugin (registered by samplecheck.harness.plugin when `--sc-kills` is given)."""

    def __init__(self, folder: str):
        self.folder = Path(folder)
        self.mutant_by_test: dict[str, str] = {}  # node id -> mutant, for the tests this process set up

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config, items):
        kept, elsewhere = [], []
        for item in items:
            name = mutant_of(item)
            own_file = name is None or item.path.stem == MUTANTS[name].killed_by
            (kept if own_file else elsewhere).append(item)
        if elsewhere:
            config.hook.pytest_deselected(items=elsewhere)
            items[:] = kept

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        name = mutant_of(item)
        if name is None:
            return
        self.mutant_by_test[item.nodeid] = name
        kill = read_kill(self.folder, name)
        if kill is not None:
            pytest.skip(f"mutant {name} already killed by {kill[0]}")

    def pytest_runtest_logreport(self, report):
        name = self.mutant_by_test.get(report.nodeid)
        if name is None or report.when != "call" or not report.failed:
            return
        # Written whole under another name, then linked to DIR/<mutant>: a reader (the kill
        # table polls the folder) never sees the file without both lines, and the link fails
        # where another worker killed the mutant first.
        handle, written = tempfile.mkstemp(dir=self.folder, prefix=f".{name}-")
        with os.fdopen(handle, "w") as out:
            out.write(f"{report.nodeid}\n{time.time():.3f}\n")
        try:
            os.link(written, self.folder / name)
        except FileExistsError:
            pass
        finally:
            os.unlink(written)
