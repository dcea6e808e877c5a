"""A top_k_top_p plug-in that faults on purpose: the demonstration of fault isolation.

`apply_top_k_top_p` first launches a Triton kernel that stores a block of zeros 2**40
elements past the logits, where nothing is allocated: an illegal memory access, which
poisons the process's CUDA context. With $FAULTING_BACKEND_STATE naming a file that does
not exist yet, only the first call of the whole run faults (it creates the file); every
other call, in any process, is samplecheck's own kernel, so the plug-in's other tests pass.
Without the variable every call faults. On CPU it raises instead of faulting (the Triton
interpreter would write into the host process's memory); it declares CUDA only.

    FAULTING_BACKEND_STATE=$(mktemp -u) PYTHONPATH=examples/faulting_backend \\
        python -m pytest tests/cover -n 4 --sc-device=cuda \\
        --sc-backend top_k_top_p=faulting_backend:apply_top_k_top_p
"""

import os

import torch
import triton
import triton.language as tl

from samplecheck.kernels.top_k_top_p import apply_top_k_top_p as correct

FAR = tl.constexpr(2**40)  # elements past the tensor: far beyond any allocation


@triton.jit
def _store_far_out_of_bounds(ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(ptr + FAR + offs, tl.zeros([BLOCK], ptr.dtype.element_ty))


def _faults_now() -> bool:
    state = os.environ.get("FAULTING_BACKEND_STATE")
    if state is None:
        return True
    try:
        os.close(os.open(state, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def apply_top_k_top_p(logits: torch.Tensor, k: torch.Tensor | None = None, p: torch.Tensor | None = None) -> torch.Tensor:
    if logits.device.type != "cuda":
        raise RuntimeError("faulting_backend faults on CUDA only (it declares devices=('cuda',))")
    if _faults_now():
        _store_far_out_of_bounds[(1,)](logits, BLOCK=128)
        torch.cuda.synchronize(logits.device)
    return correct(logits, k, p)


apply_top_k_top_p.samplecheck = {"devices": ("cuda",)}
