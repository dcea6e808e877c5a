"""samplecheck's property suite as a command: the pytest run of `samplecheck test`, `gate` and
`nightly`, over the installed suite (samplecheck.harness.suite_files) under samplecheck's own
configuration; the entry point `pytest11` and the suite's conftest provide everything the
tests need.
"""

import subprocess
import sys
from pathlib import Path

from samplecheck.harness.suite_files import config_args, suite_path
from samplecheck.tools.flags import SuiteFlags

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
