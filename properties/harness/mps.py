"""One GPU shared by the suite's processes through a private CUDA MPS server (`samplecheck gate`).

Without MPS, the pytest-xdist workers on one GPU are separate CUDA contexts that the GPU
time-slices: a worker's small oracle kernels wait for the other contexts' slices, and with
CUDA's default wait every waiting worker spins a core. Under an MPS server the workers' kernels
share the GPU at once. The server here is private: a control daemon with its pipe and log
folders in a temporary folder, reached only by processes given `environment()`; every other
process on the machine keeps its own context.

MPS does not contain a fatal GPU error: a kernel that faults in one client tears down the
contexts of every client and the server refuses new ones until all have exited. So processes
that are expected to fault (the kill table's mutants, the sanitizer's children) stay off it
(`without`), and a run that met a fatal error under it is not a verdict (`fatal_error`): the
gate runs the suite again with time-sliced contexts, where a fault stays in its own process.
"""

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

# The variables by which a CUDA process finds an MPS control daemon.
VARIABLES = ("CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY")
# How many pytest processes samplecheck runs at once on the GPUs, MPS or not (a gate's suite
# workers and mutant hunts together): set by samplecheck.tools.suite.suite_environment, read
# by samplecheck.harness.big_buffers (each process's share of a GPU's memory).
SHARING_PROCESSES = "SAMPLECHECK_GPU_PROCESSES"
CONTROL = "nvidia-cuda-mps-control"
# What the server writes to its log when a client's kernel faults.
FATAL = "encountered a fatal GPU error"


def available() -> bool:
    """Whether this machine can start an MPS control daemon."""
    return shutil.which(CONTROL) is not None


def without(environment: Mapping[str, str] = os.environ) -> dict[str, str]:
    """`environment` (default: this process's) with no MPS daemon to find: a process started
    with it gets a context of its own."""
    return {name: value for name, value in environment.items() if name not in VARIABLES}


@contextmanager
def server() -> Iterator[dict[str, str]]:
    """A private MPS control daemon for the duration of the block; yields the environment of
    the processes that are to share the GPU through it. Raises OSError when it cannot start."""
    with tempfile.TemporaryDirectory(prefix="samplecheck-mps-") as folder:
        environment = {**without(), VARIABLES[0]: f"{folder}/pipe", VARIABLES[1]: f"{folder}/log"}
        for name in VARIABLES:
            os.makedirs(environment[name])
        started = subprocess.run([CONTROL, "-d"], env=environment, capture_output=True, text=True)
        if started.returncode != 0:
            raise OSError(f"{CONTROL} -d exited {started.returncode}: {started.stderr.strip()}")
        try:
            yield environment
        finally:
            subprocess.run([CONTROL], input="quit\n", env=environment, capture_output=True, text=True)


def fatal_error(environment: dict[str, str]) -> bool:
    """Whether a client of the server of `environment` met a fatal GPU error."""
    log = Path(environment[VARIABLES[1]]) / "server.log"
    return log.is_file() and FATAL in log.read_text(errors="replace")
