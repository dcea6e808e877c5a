"""samplecheck's property suite as a command: the pytest run of `samplecheck test`, `gate` and
`nightly`, over the installed suite (samplecheck.harness.suite_files) under samplecheck's own
configuration; the entry point `pytest11` and the suite's conftest provide everything the
tests need.
"""

import os
import subprocess
import sys
from pathlib import Path

from samplecheck.harness.mps import SHARING_PROCESSES
from samplecheck.harness.suite_files import config_args, suite_path
from samplecheck.tools import bytecode
from samplecheck.tools.flags import SuiteFlags


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


# Triton's cache manager for the processes samplecheck starts: one compile per specialization
# across them (samplecheck.harness.compile_once).
COMPILE_ONCE = ("TRITON_CACHE_MANAGER", "samplecheck.harness.compile_once:CompileOnce")
# The variables sizing a process's CPU thread pools (PyTorch's intra-op pool reads both).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def suite_environment(base: dict[str, str] | None = None, processes: int = 1) -> dict[str, str]:
    """The environment of one of `processes` pytest processes that samplecheck runs at once
    (xdist workers, hunts), from `base` (default this process's environment); a variable `base`
    sets stays as it is, but for PYTHONDONTWRITEBYTECODE (below).
    - Triton's cache manager is CompileOnce.
    - Each process's CPU thread pools hold cores // `processes` threads (at least one). Each
      pool otherwise sizes itself to every core, and its idle threads spin on cores the other
      processes are using. One process alone keeps the default.
    - Each process knows how many share the GPUs (`mps.SHARING_PROCESSES`, read by
      samplecheck.harness.big_buffers): `processes`, unless `base` names the count already (the
      gate names its suite's and kill table's processes together: they run at once).
    - Where `base` forbids writing byte-code and names no folder for it, the byte-code goes to
      samplecheck's byte-code folder (samplecheck.tools.bytecode.redirect)."""
    environment = dict(os.environ if base is None else base)
    variable, manager = COMPILE_ONCE
    environment.setdefault(variable, manager)
    if processes > 1:
        for name in THREAD_VARIABLES:
            environment.setdefault(name, str(max(1, (os.cpu_count() or 1) // processes)))
        environment.setdefault(SHARING_PROCESSES, str(processes))
    bytecode.redirect(environment)
    return environment


def processes_of(workers: str) -> int:
    """The pytest processes an xdist `workers` value runs at once: "auto" one per core, "0" one."""
    return (os.cpu_count() or 1) if workers == "auto" else max(1, int(workers))


def run_pytest(command: list[str], log: Path | None = None, env: dict[str, str] | None = None,
               processes: int = 1) -> int:
    """Run `command`, which starts `processes` pytest processes at once, in `suite_environment`
    of `env` (default this process's environment), echoing its output (and writing it to `log`
    when given); its exit status. Through `log`, each line reaches the log and this process's
    output as the command prints it (its Python unbuffered, both written through): a CI log or
    a run cut short by a time limit shows how far it got."""
    env = suite_environment(env, processes)
    if log is None:
        return subprocess.run(command, env=env).returncode
    env.setdefault("PYTHONUNBUFFERED", "1")
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        for line in process.stdout:
            for stream in (out, sys.stdout):
                stream.write(line)
                stream.flush()
        return process.wait()
