"""How a suite process's CPU thread waits for its GPU work (`--sc-cuda-wait`).

CUDA's default (`auto`) spins a core while the thread waits, as long as the process has no
more contexts than the machine has cores. The gate runs one pytest-xdist worker per core on
one GPU, so every worker waiting on a GPU that time-slices between them keeps a core busy, and
the workers still drawing cases or judging results get no core. `block` has a waiting thread
sleep on a synchronisation primitive instead (CU_CTX_SCHED_BLOCKING_SYNC), `spin` and `yield`
are CUDA's other two modes. The mode is set on the device's primary context (the one PyTorch
uses) before the process first uses it, through the driver library; where that library or the
call is missing, the process keeps CUDA's default and says so.
"""

import ctypes
import warnings

# CUctx_flags scheduling values (cuda.h).
MODES = {"auto": 0, "spin": 1, "yield": 2, "block": 4}


class CudaWaitNotSet(UserWarning):
    """`--sc-cuda-wait` could not be applied; the process waits in CUDA's default mode."""


def set_wait(mode: str, device_index: int) -> None:
    """Make the primary context of CUDA device `device_index` wait in `mode` (a MODES key)."""
    if mode == "auto":
        return
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError as err:
        warnings.warn(CudaWaitNotSet(f"--sc-cuda-wait={mode}: no CUDA driver library ({err})"))
        return
    device = ctypes.c_int()
    setter = getattr(driver, "cuDevicePrimaryCtxSetFlags_v2", None) or driver.cuDevicePrimaryCtxSetFlags
    for step, status in (("cuInit", lambda: driver.cuInit(0)),
                         ("cuDeviceGet", lambda: driver.cuDeviceGet(ctypes.byref(device), device_index)),
                         ("cuDevicePrimaryCtxSetFlags", lambda: setter(device, MODES[mode]))):
        code = status()
        if code != 0:
            warnings.warn(CudaWaitNotSet(f"--sc-cuda-wait={mode}: {step} returned CUDA error {code}"))
            return
