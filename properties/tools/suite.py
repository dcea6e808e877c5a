"""samplecheck's property suite as a command: the pytest run of `samplecheck test`, `gate` and
`nightly`, over the installed suite (samplecheck.harness.suite_files) under samplecheck's own
configuration; the entry point `pytest11` and the suite's conftest provide everything the
tests need.
"""

import os
import subprocess
import sys
from pathlib import Path

from samplecheck.harness.suite_files import config_args, suite_path
from samplecheck.tools.flags import SuiteFlags


def compile_sources() -> None:
    """Byte-compile samplecheck's installed sources (package, kernels, oracles, suite) once,
    where the suite's processes will look for their byte-code (`suite_environment`: beside the
    sources, or in samplecheck's byte-code folder), so the many pytest processes of a run read
    it instead of each compiling the sources it imports. A folder that cannot be written is
    left as it is."""
    import compileall
    import importlib

    prefix, sys.pycache_prefix = sys.pycache_prefix, suite_environment().get(PYCACHE_PREFIX)
    try:
        for package in ("samplecheck", "samplecheck.kernels", "samplecheck.oracles", "samplecheck.tests"):
            for folder in importlib.import_module(package).__path__:
                compileall.compile_dir(folder, quiet=2, workers=0)
    finally:
        sys.pycache_prefix = prefix


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
# Python's switches for where an import keeps the byte-code it compiles: nowhere, or in a folder
# tree of its own instead of beside the sources.
NO_BYTECODE, PYCACHE_PREFIX = "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX"


def bytecode_folder(environment: dict[str, str]) -> Path:
    """samplecheck's byte-code folder: samplecheck/pycache in the user's cache folder
    ($XDG_CACHE_HOME, else ~/.cache)."""
    cache = environment.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "samplecheck" / "pycache"


def share_bytecode() -> None:
    """This process keeps the byte-code of what it imports where the suite's processes look for
    it (`suite_environment`): where the environment forbids writing byte-code and names no
    folder, in samplecheck's byte-code folder, so the modules a command imports before starting
    the suite (torch first) are compiled once for all of its processes. Otherwise nothing
    changes."""
    prefix = suite_environment().get(PYCACHE_PREFIX)
    if sys.dont_write_bytecode and sys.pycache_prefix is None and prefix is not None:
        sys.dont_write_bytecode, sys.pycache_prefix = False, prefix


def suite_environment(base: dict[str, str] | None = None, processes: int = 1) -> dict[str, str]:
    """The environment of one of `processes` pytest processes that samplecheck runs at once
    (xdist workers, hunts), from `base` (default this process's environment); a variable `base`
    sets stays as it is, but for PYTHONDONTWRITEBYTECODE (below).
    - Triton's cache manager is CompileOnce.
    - Each process's CPU thread pools hold cores // `processes` threads (at least one). Each
      pool otherwise sizes itself to every core, and its idle threads spin on cores the other
      processes are using. One process alone keeps the default.
    - Where `base` forbids writing byte-code (PYTHONDONTWRITEBYTECODE, e.g. set by a container
      image) and names no byte-code folder (PYTHONPYCACHEPREFIX), the byte-code goes to
      samplecheck's byte-code folder (`bytecode_folder`), never beside the sources: else every
      process compiles every module it imports (torch, FlashInfer, the suite: seconds of CPU
      each, times dozens of processes), and with the folder the first process to import a
      module compiles it for the others."""
    environment = dict(os.environ if base is None else base)
    variable, manager = COMPILE_ONCE
    environment.setdefault(variable, manager)
    if processes > 1:
        for name in THREAD_VARIABLES:
            environment.setdefault(name, str(max(1, (os.cpu_count() or 1) // processes)))
    if environment.get(NO_BYTECODE) and PYCACHE_PREFIX not in environment:
        del environment[NO_BYTECODE]
        environment[PYCACHE_PREFIX] = str(bytecode_folder(environment))
    return environment


def processes_of(workers: str) -> int:
    """The pytest processes an xdist `workers` value runs at once: "auto" one per core, "0" one."""
    return (os.cpu_count() or 1) if workers == "auto" else max(1, int(workers))


def run_pytest(command: list[str], log: Path | None = None, env: dict[str, str] | None = None,
               processes: int = 1) -> int:
    """Run `command`, which starts `processes` pytest processes at once, in `suite_environment`
    of `env` (default this process's environment), echoing its output (and writing it to `log`
    when given); its exit status."""
    env = suite_environment(env, processes)
    if log is None:
        return subprocess.run(command, env=env).returncode
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        for line in process.stdout:
            out.write(line)
            sys.stdout.write(line)
        return process.wait()
