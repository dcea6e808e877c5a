"""GPU memory deltas: the peak bytes a call allocates beyond what was allocated before it.

The bytes are the ones the code requested (the allocator's `requested_bytes` statistics), not
the blocks it handed out: a block may be rounded up by as much as 1 MiB (a large request is
not split off a segment when less than 1 MiB would remain), which says nothing about the
kernel. A stated bound gets `SLACK_BYTES` for small allocations such as validation
temporaries. An fp32 copy of [B, V] logits is 4 * B * V bytes: any bound that is smaller
proves no such copy was made.
"""

import os

import torch

import samplecheck
import samplecheck.kernels

# Frames of samplecheck's own code (a checkout's root, or the installed package) are named
# first in allocation listings.
REPO = os.path.commonpath([samplecheck.__path__[0], samplecheck.kernels.__path__[0]])
SLACK_BYTES = 256 * 1024


def peak_extra_bytes(call) -> tuple[object, int]:
    """Run `call()` on the current CUDA device; return its result and the peak bytes it
    allocated above the memory allocated when it started."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_stats()["requested_bytes.all.current"]
    result = call()
    torch.cuda.synchronize()
    return result, torch.cuda.memory_stats()["requested_bytes.all.peak"] - base


def stated_bound(combo, logits: torch.Tensor, args: dict) -> int:
    """The stated extra-memory bound for this call (the backend's own, else the record's),
    plus the slack."""
    declared = combo.backend.extra_memory or combo.info.extra_memory
    return (0 if declared is None else declared(logits, args)) + SLACK_BYTES


def largest_allocations(call, count: int = 8) -> list[str]:
    """Run `call()` with the allocator's history on and describe its `count` largest
    allocations, each with the innermost line of this repo (else of anything) that asked
    for it: what a failed memory bound prints."""
    torch.cuda.synchronize()
    torch.cuda.memory._record_memory_history(context="alloc", stacks="python", clear_history=True)
    try:
        call()
        torch.cuda.synchronize()
        events = torch.cuda.memory._snapshot()["device_traces"][torch.cuda.current_device()]
    finally:
        torch.cuda.memory._record_memory_history(enabled=None)
    allocs = sorted((e for e in events if e["action"] == "alloc"), key=lambda e: -e["size"])[:count]
    return [f"{e['size']:>12} bytes at {_origin(e.get('frames', []))}" for e in allocs]


def _origin(frames: list[dict]) -> str:
    ours = [f for f in frames if f["filename"].startswith(REPO)] or frames
    return f"{ours[0]['filename'].removeprefix(REPO + '/')}:{ours[0]['line']} ({ours[0]['name']})" if ours else "?"
