"""`samplecheck.kernels.launching.jit`: a launched kernel computes the same whichever launch
path it takes. Under the interpreter it is Triton's own function; on a GPU every
specialization Triton distinguishes (dtype, 16-byte pointer alignment, integer divisibility
by 16 and == 1, i32/i64) launches its own compiled kernel from the launch cache, and a launch
hook or a callable grid takes `JITFunction.run`."""

import pytest
import torch
import triton.language as tl
from triton import knobs

from samplecheck.kernels.launching import CachedLaunchFunction, jit
from samplecheck.kernels.runtime import cdiv, is_interpreted

pytestmark = pytest.mark.interpreter


@jit(do_not_specialize=["scale"])
def _scale_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, (x.to(tl.float32) * scale).to(out_ptr.dtype.element_ty), mask=offs < n)


def _launch(x: torch.Tensor, scale: float, grid=None) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    _scale_kernel[grid or (cdiv(n, 64),)](x, out, n, scale, BLOCK=64)
    return out


def _cases(device):
    """Views that differ in every specialized property: dtype, the data pointer's alignment
    (offset views), n == 1, n % 16 == 0 or not."""
    base = torch.arange(1, 4000, dtype=torch.float32, device=device) / 7
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        x = base.to(dtype)
        for offset, n in ((0, 1), (0, 1024), (1, 1000), (3, 17), (8, 2048), (0, 3000), (5, 1)):
            yield x[offset:offset + n]


def test_launches_match_torch_on_every_specialization(device):
    if is_interpreted(_scale_kernel):
        assert not isinstance(_scale_kernel, CachedLaunchFunction), "the interpreter runs Triton's own function"
    cases = list(_cases(device))
    for _ in range(2):  # the first round compiles or fills the launch cache, the second launches from it
        for x in cases:
            expected = (x.float() * 0.5).to(x.dtype)
            torch.testing.assert_close(_launch(x, 0.5), expected, rtol=0, atol=0,
                                       msg=lambda m: f"{x.dtype}, n = {x.numel()}, offset {x.storage_offset()}: {m}")
    if isinstance(_scale_kernel, CachedLaunchFunction):
        # At least dtype x alignment x (n == 1, n % 16 == 0, other) specializations were seen.
        assert len(_scale_kernel.launch_cache) >= 9


def test_hooks_and_callable_grids_take_tritons_path(device, monkeypatch):
    x = torch.arange(100, dtype=torch.float32, device=device)
    _launch(x, 2.0)
    seen = []
    monkeypatch.setattr(knobs.runtime, "launch_enter_hook", lambda metadata: seen.append(metadata))
    torch.testing.assert_close(_launch(x, 2.0), x * 2, rtol=0, atol=0)
    monkeypatch.undo()
    torch.testing.assert_close(_launch(x, 3.0, grid=lambda meta: (cdiv(meta["n"], meta["BLOCK"]),)), x * 3,
                               rtol=0, atol=0)
    if isinstance(_scale_kernel, CachedLaunchFunction):
        assert len(seen) == 1, "a launch hook sees every launch"
