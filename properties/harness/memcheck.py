"""Running a command under compute-sanitizer's memcheck, as tests/cover/test_memory_safety.py
does for each combo: where the sanitizer is, the child's environment, and what it reported."""

import glob
import os
import re
import shutil
from pathlib import Path

from samplecheck.harness import mps

SANITIZER_ENV = "COMPUTE_SANITIZER"
CHILD_ENV = "SAMPLECHECK_UNDER_MEMCHECK"  # set in the child: its half of the property runs
MEMCHECK_EXIT = 86  # the sanitizer's exit status when it found an error (distinct from pytest's)
ERROR_LINE = re.compile(r"^=+ (Invalid|Misaligned|Out of bounds|Address|Program hit|ERROR SUMMARY)", re.M)


def find_sanitizer() -> str | None:
    """$COMPUTE_SANITIZER, else compute-sanitizer on PATH, else one under /usr/local/cuda*/bin
    (scripts/sanitize.sh finds it here too); None when there is none."""
    named = os.environ.get(SANITIZER_ENV)
    if named:
        return named if Path(named).is_file() else None
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    installed = sorted(glob.glob("/usr/local/cuda/bin/compute-sanitizer")
                       + glob.glob("/usr/local/cuda-*/bin/compute-sanitizer"))
    return installed[0] if installed else None


def memcheck_command(sanitizer: str, child: list[str]) -> list[str]:
    return [sanitizer, "--tool", "memcheck", "--error-exitcode", str(MEMCHECK_EXIT), "--print-limit", "8", *child]


def child_environment() -> dict[str, str]:
    """The caller's environment with the child's flag set, PyTorch's caching allocator off (so
    every tensor is its own allocation and an access past its end is out of bounds for the
    sanitizer, not inside a cached block) and no MPS server to join (a faulting child would end
    every client's context there)."""
    return {**mps.without(), CHILD_ENV: "1", "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}


def reported_errors(output: str, limit: int = 12) -> str:
    """The sanitizer's error lines of `output` (at most `limit`), for a failure message."""
    lines = [line for line in output.splitlines() if ERROR_LINE.match(line)]
    return "\n".join(lines[:limit]) or output[-2000:]
