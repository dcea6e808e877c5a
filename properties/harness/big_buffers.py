"""One multi-GB test buffer per GPU at a time.

xdist workers share the GPUs, and a dozen 4+ GB buffers at once exhaust even an H200 (the
other workers' tests then fail on OOM). A test whose buffers are that large builds and frees
them inside `big_buffers(device)`: it holds a file lock keyed by the GPU's UUID (so processes
that see the GPU under another index, CUDA_VISIBLE_DEVICES, share it), clears the frames of
a failure's traceback (Hypothesis keeps every failure to report it: the frames would hold on
to their buffers) and gives the cached memory back before the next holder of the lock runs.
On a CPU it only clears the failure's frames.
"""

import contextlib
import fcntl
import tempfile
import traceback
from pathlib import Path

import torch


def gpu_lock(device: torch.device) -> Path:
    """The lock file of the GPU `device` names (its current device when it has no index)."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    uuid = torch.cuda.get_device_properties(index).uuid
    return Path(tempfile.gettempdir()) / f"samplecheck-large-offsets-{uuid}.lock"


@contextlib.contextmanager
def big_buffers(device: torch.device):
    """Run the block as the only holder of big buffers on `device` (module docstring). The
    buffers must live in frames the block calls (its callees), whose failure frames this
    clears; the block's own locals stay until it returns."""
    with contextlib.ExitStack() as stack:
        if device.type == "cuda":
            lock = stack.enter_context(gpu_lock(device).open("w"))
            fcntl.flock(lock, fcntl.LOCK_EX)
            stack.callback(torch.cuda.empty_cache)
        try:
            yield
        except BaseException as error:
            traceback.clear_frames(error.__traceback__)
            raise
