"""GPU memory shared by the xdist workers of one run: one multi-GB test buffer per GPU at a
time, and each worker's cache kept to its share.

xdist workers share the GPUs, and a dozen 4+ GB buffers at once exhaust even an H200 (the
other workers' tests then fail on OOM). A test whose buffers are that large builds and frees
them inside `big_buffers(device)`: it gives its own memory back (its cache and its garbage,
`give_back_memory`), takes a file lock keyed by the GPU's UUID (so processes that see the GPU
under another index, CUDA_VISIBLE_DEVICES, share it) and waits (at most BIG_WAIT_S) until
enough of the GPU is free (`free_bytes_wanted`: its declared peak and a margin, at most
BIG_FREE_SHARE of the GPU), clears the frames of a failure's traceback (Hypothesis keeps every
failure to report it: the frames would hold on to their buffers) and gives the memory back
before the next holder of the lock runs. After each test, `release_cache` gives a worker's
memory back (its garbage where the test left memory allocated) while another worker holds the
lock, or when the worker caches more than its share (`cache_share`): so the caches of a gate's
24 processes on an 80 GiB GPU (1.7 GiB each) leave room for the largest buffers (35 GiB, far
id lists).
A block that declares its peak (`need_bytes`) is skipped on a GPU with less memory in all.
On a CPU `big_buffers` only clears the failure's frames.
"""

import contextlib
import fcntl
import functools
import gc
import math
import os
import tempfile
import time
import traceback
import warnings
from pathlib import Path

import pytest
import torch

from samplecheck.harness.mps import SHARING_PROCESSES

# The free memory a holder of the lock waits for before it builds its buffers: its declared
# peak plus BIG_MARGIN_SHARE of the GPU (the other workers' running tests), at most
# BIG_FREE_SHARE of the GPU, which is also the wait of a block that declares no peak; and the
# longest it waits (the other workers give their caches back when their running test ends).
# Past the wait it warns and goes on, and an OOM is the test's failure.
BIG_FREE_SHARE = 0.5
BIG_MARGIN_SHARE = 0.1
BIG_WAIT_S = 120.0
# All the workers' caches together stay within this share of the GPU between tests.
CACHES_SHARE = 0.5


def _index(device: torch.device) -> int:
    """The index of the GPU `device` names (the current device when it has none)."""
    return device.index if device.index is not None else torch.cuda.current_device()


def gpu_lock(device: torch.device) -> Path:
    """The lock file of the GPU `device` names (its current device when it has no index)."""
    uuid = torch.cuda.get_device_properties(_index(device)).uuid
    return Path(tempfile.gettempdir()) / f"samplecheck-large-offsets-{uuid}.lock"


@contextlib.contextmanager
def big_buffers(device: torch.device, need_bytes: int = 0, what: str = "the test"):
    """Run the block as the only holder of big buffers on `device` (module docstring). The
    buffers must live in frames the block calls (its callees), whose failure frames this
    clears; the block's own locals stay until it returns. `need_bytes`: the block's peak of
    device memory (0: not declared), what its wait for free memory is sized by; on a GPU with
    less memory in all, the test is skipped, naming `what` and both sizes (a card too small
    for a property's buffers is no finding)."""
    with contextlib.ExitStack() as stack:
        if device.type == "cuda":
            total = torch.cuda.get_device_properties(_index(device)).total_memory
            if total < need_bytes:
                pytest.skip(f"{what} needs {need_bytes / 2**30:.1f} GiB of GPU memory; this GPU has "
                            f"{total / 2**30:.1f} GiB in all")
            lock = stack.enter_context(gpu_lock(device).open("w"))
            # Its memory back before it queues: while it waits for the lock, the holder waits for
            # free memory, which a queued worker's cache or garbage would keep from it.
            give_back_memory()
            fcntl.flock(lock, fcntl.LOCK_EX)
            stack.callback(give_back_memory)
            _wait_for_free_memory(device, free_bytes_wanted(total, need_bytes))
        try:
            yield
        except BaseException as error:
            traceback.clear_frames(error.__traceback__)
            raise


def give_back_memory(garbage: bool = True) -> None:
    """Give the worker's device memory that nothing reachable uses back to the driver: where
    `garbage`, its unreachable reference cycles collected first (a tensor in one, e.g. the
    frames of a caught error's traceback, stays allocated until Python's cyclic collector runs,
    which an idle or waiting process may not do for minutes; a collection costs about 0.25 s in
    a suite worker), then its cache emptied."""
    if garbage:
        gc.collect()
    torch.cuda.empty_cache()


def free_bytes_wanted(total: int, need_bytes: int) -> int:
    """The free bytes a holder with peak `need_bytes` (0: not declared) waits for on a GPU of
    `total` bytes."""
    most = int(BIG_FREE_SHARE * total)
    return min(most, need_bytes + int(BIG_MARGIN_SHARE * total)) if need_bytes > 0 else most


def _wait_for_free_memory(device: torch.device, wanted: int) -> None:
    """Wait until `wanted` bytes of `device` are free, at most BIG_WAIT_S; past it, warn with
    the GPU's processes and their memory (the run's warnings summary names the test) and go on.
    The caller gave its memory back before it queued for the lock."""
    deadline = time.monotonic() + BIG_WAIT_S
    while time.monotonic() < deadline:
        free, total = torch.cuda.mem_get_info(device)
        if free >= wanted:
            return
        time.sleep(0.1)
    warnings.warn(f"big_buffers: {free / 2**30:.1f} of {total / 2**30:.1f} GiB free on {device} after "
                  f"{BIG_WAIT_S:.0f} s, {wanted / 2**30:.1f} GiB wanted: going on\n{_gpu_processes(device)}",
                  RuntimeWarning, stacklevel=2)


def _gpu_processes(device: torch.device) -> str:
    """torch's listing of the processes on `device` and their memory (NVML), or why there is none."""
    try:
        return torch.cuda.list_gpu_processes(device)
    except Exception as error:  # a diagnostic: an NVML failure must not fail the test it describes
        return f"the GPU's processes not listed: {error!r}"


def _big_buffers_held(device: torch.device) -> bool:
    """Whether a worker holds `device`'s big-buffer lock now (a shared lock is refused)."""
    path = gpu_lock(device)
    if not path.exists():
        return False
    with path.open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(lock, fcntl.LOCK_UN)
        return False


@functools.cache
def cache_share(device: torch.device) -> int:
    """The bytes a worker may keep cached on `device` between tests: CACHES_SHARE of the GPU
    over the processes that share it: those samplecheck runs at once (`mps.SHARING_PROCESSES`),
    else the run's xdist workers, spread over the visible GPUs."""
    processes = int(os.environ.get(SHARING_PROCESSES) or os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    sharing = math.ceil(processes / max(1, torch.cuda.device_count()))
    return int(CACHES_SHARE * torch.cuda.get_device_properties(_index(device)).total_memory) // sharing


def release_cache(device: torch.device, allocated_before: int) -> None:
    """After a test on `device` (a GPU) that began with `allocated_before` bytes allocated:
    give the worker's memory back (`give_back_memory`) when it caches more than its share, or
    while another worker holds big buffers; its garbage too when the test left more allocated
    than it found (tensors in reference cycles, or caches of its own)."""
    if torch.cuda.memory_reserved(device) > cache_share(device) or _big_buffers_held(device):
        give_back_memory(garbage=torch.cuda.memory_allocated(device) > allocated_before)
