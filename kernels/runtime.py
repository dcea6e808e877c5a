"""Device selection for kernels: CUDA when present, else the Triton CPU interpreter; and
the host arithmetic of launch plans the kernels share.

`TRITON_INTERPRET` is read when `@triton.jit` decorates a kernel, so `use_device`
must run before any kernel module is imported.
"""

import os
import sys

import torch

KERNEL_MODULE_PREFIX = "samplecheck.kernels."


def resolve_device(requested: str = "auto") -> str:
    """Return "cuda" or "cpu" for `requested` in {"auto", "cuda", "cpu"}."""
    if requested not in ("auto", "cuda", "cpu"):
        raise ValueError(f"device must be one of auto, cuda, cpu; got {requested!r}")
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("device=cuda was requested but torch.cuda.is_available() is False")
    return requested


def use_device(requested: str = "auto") -> str:
    """Resolve the device and, for "cpu", switch Triton to its interpreter.

    Raises RuntimeError when a kernel module was imported before the switch, since its
    kernels would then be compiled for a GPU that is not there.
    """
    device = resolve_device(requested)
    if device == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
        early = sorted(m for m in sys.modules if m.startswith(KERNEL_MODULE_PREFIX) and m != __name__)
        if early:
            raise RuntimeError(
                "TRITON_INTERPRET=1 must be set before kernels are imported; already imported: "
                + ", ".join(early)
            )
        os.environ["TRITON_INTERPRET"] = "1"
    return device


def is_interpreted(kernel) -> bool:
    """True when `kernel` (a @triton.jit function) runs under the CPU interpreter."""
    return type(kernel).__name__ == "InterpretedFunction"


def check_launchable(kernel, tensor: torch.Tensor) -> None:
    """Raise a clear error instead of Triton's "0 active drivers" for a CPU tensor."""
    if tensor.is_cpu and not is_interpreted(kernel):
        raise RuntimeError(
            "logits are on the CPU but Triton is not in interpreter mode: call "
            "samplecheck.kernels.runtime.use_device('cpu') (or export TRITON_INTERPRET=1) before importing kernels"
        )


def device_kind(tensor: torch.Tensor) -> str:
    """"cuda" or "cpu", for a tensor on one of the two (as `check_logits` accepts): the key of
    the kernels' per-device launch tables. `tensor.device.type` costs more on the host (it
    builds a device object and a string each call)."""
    return "cuda" if tensor.is_cuda else "cpu"


def cdiv(x: int, y: int) -> int:
    """ceil(x / y) of host ints, for launch plans: `triton.cdiv` is a constexpr function whose
    wrapper costs ~1.5 us a call on the host."""
    return (x + y - 1) // y


def next_power_of_2(n: int) -> int:
    """The smallest power of two >= n, for n >= 1 (1 for n <= 1), of host ints: as
    `triton.next_power_of_2`, without its constexpr wrapper's cost."""
    return 1 << max(n - 1, 0).bit_length()


def first_fitting(menu: tuple[int, ...], size: int) -> int:
    """The first block of the ascending launch `menu` that holds `size`, else the largest."""
    for block in menu:
        if size <= block:
            return block
    return menu[-1]
