"""samplecheck's property suite as a command: where its tests are installed, the pytest
configuration they run under, and the pytest run of `samplecheck test`, `gate` and `nightly`.

The suite is the package `samplecheck.tests` (tests/ in a checkout), so the same files run
from a checkout and from an installed wheel; the entry point `pytest11` and the suite's
conftest provide everything they need. Every run of it uses samplecheck's own configuration
(`config_args`), never that of the project it is run in.
"""

import subprocess
import sys
from pathlib import Path

from samplecheck.tools.flags import SuiteFlags

CONFIG = Path(__file__).with_name("suite.ini")


def suite_path(folder: str = "cover") -> Path:
    """The folder of the installed property tests (`cover`: the fast suite)."""
    import samplecheck.tests

    return Path(samplecheck.tests.__path__[0]) / folder


def suite_root() -> Path:
    """The folder holding the suite's `tests` package: the installed samplecheck package, or
    the checkout's root for an editable install (node ids stay `tests/cover/...`)."""
    return suite_path().parents[1]


def config_args() -> list[str]:
    """pytest arguments that make a run read samplecheck's configuration (suite.ini) alone:
    no ini file of the working directory or its parents, and no conftest.py above the suite."""
    root = str(suite_root())
    return ["-c", str(CONFIG), "--rootdir", root, "--confcutdir", root]


def compile_sources() -> None:
    """Byte-compile samplecheck's installed sources (package, kernels, oracles, suite) where
    they are writable, once, so the many pytest processes of a run read the byte-code instead
    of each compiling the sources it imports (under PYTHONDONTWRITEBYTECODE=1 an import never
    keeps what it compiled). A folder that cannot be written is left as it is."""
    import compileall
    import importlib

    for package in ("samplecheck", "samplecheck.kernels", "samplecheck.oracles", "samplecheck.tests"):
        for folder in importlib.import_module(package).__path__:
            compileall.compile_dir(folder, quiet=2, workers=0)


def pytest_command(flags: SuiteFlags, pytest_args: list[str], *, workers: str = "auto",
                   folder: str = "cover") -> list[str]:
    """`python -m pytest` over the installed suite under samplecheck's configuration with the
    command's shared flags as pytest options; `pytest_args` come last, so they override the
    options and add to the selection. Workers steal queued tests from each other (`--dist
    worksteal`): one long test (a large kernel's first compile) holds its own worker only, not
    the tests queued behind it."""
    command = [sys.executable, "-m", "pytest", str(suite_path(folder)), *config_args(), "-p", "no:cacheprovider",
               *flags.pytest_options()]
    if workers != "0":
        command += ["-n", workers, "--dist", "worksteal"]
    return command + pytest_args


def run_pytest(command: list[str], log: Path | None = None, env: dict[str, str] | None = None) -> int:
    """Run `command` (in `env`, default this process's environment), echoing its output (and
    writing it to `log` when given); its exit status."""
    if log is None:
        return subprocess.run(command, env=env).returncode
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        for line in process.stdout:
            out.write(line)
            sys.stdout.write(line)
        return process.wait()
