"""GPU memory deltas: the peak bytes a call allocates beyond what was allocated before it.

`torch.cuda.max_memory_allocated` counts the caching allocator's blocks (rounded up to
512 bytes), so a stated bound gets `SLACK_BYTES` for small allocations such as validation
temporaries. An fp32 copy of [B, V] logits is 4 * B * V bytes: any bound that is smaller
proves no such copy was made.
"""

import torch

SLACK_BYTES = 256 * 1024


def peak_extra_bytes(call) -> tuple[object, int]:
    """Run `call()` on the current CUDA device; return its result and the peak bytes it
    allocated above the memory allocated when it started."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    result = call()
    torch.cuda.synchronize()
    return result, torch.cuda.max_memory_allocated() - base


def stated_bound(combo, logits: torch.Tensor, args: dict) -> int:
    """The stated extra-memory bound for this call (the backend's own, else the record's),
    plus the slack."""
    declared = combo.backend.extra_memory or combo.info.extra_memory
    return (0 if declared is None else declared(logits, args)) + SLACK_BYTES
