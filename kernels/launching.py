"""`jit`: `triton.jit` for the kernels a host function launches, with a cheaper launch.

Contract: a kernel decorated with `jit(...)` compiles, specializes and computes exactly as
with `triton.jit(...)` (same arguments; under the interpreter it *is* `triton.jit`'s
function). On a GPU its `kernel[grid](...)` launches take less host time: a launch whose
specialization (Triton's own binder: argument dtypes, pointer alignment, integer
divisibility, constexpr values) and launch options were seen before by this kernel on this
device goes straight to that compiled kernel's launcher, skipping the checks `JITFunction.run`
repeats on every call (cache-key strings, knobs, global-value checks, launch metadata).
Anything else takes `JITFunction.run` unchanged: the first launch of a specialization (which
compiles or loads it), a callable grid, warm-up, and any launch while a Triton launch hook
(`knobs.runtime.launch_enter_hook`/`launch_exit_hook`, used by profilers; an empty
`HookChain` is none) or Triton's debug mode is set. So a kernel's results never depend on
the path taken; only host time does.

The saving is host time: a launch took 18.3 us through `JITFunction.run` and 14.0 us from the
launch cache on the H200's host (triton 3.6; docs/gpu-runs-2026-12-04.md, session 28). At small batches
host time, not the GPU, bounds a call of the kernels here. Set SAMPLECHECK_FAST_LAUNCH=0 in
the environment before kernels are imported to launch every call through `JITFunction.run`.
"""

import os

import triton
from triton import knobs
from triton.compiler import CompiledKernel
from triton.runtime.jit import JITFunction

FAST_LAUNCH = os.environ.get("SAMPLECHECK_FAST_LAUNCH", "1") != "0"
# What `JITFunction.device_caches[device]` holds in Triton 3.6 (the version this path was
# written and measured with): the binder, which returns (bound arguments, specialization,
# launch options), comes last. Another layout takes `JITFunction.run` on every launch.
BINDER_CACHES = ("kernel_cache", "kernel_key_cache", "target", "backend", "binder")


def _hooked(hook) -> bool:
    """Whether a launch hook knob holds a hook: None and an empty `HookChain` (the default
    from Triton 3.5) hold none."""
    return hook is not None and bool(getattr(hook, "calls", True))


class CachedLaunchFunction(JITFunction):
    """A JITFunction whose repeated launches bypass `JITFunction.run` (module docstring)."""

    def __init__(self, fn, **options):
        super().__init__(fn, **options)
        # (device, specialization, options) -> the CompiledKernel Triton launched for it.
        self.launch_cache: dict[tuple, CompiledKernel] = {}

    def run(self, *args, grid, warmup, **kwargs):
        runtime = knobs.runtime
        if (warmup or callable(grid) or _hooked(runtime.launch_enter_hook) or _hooked(runtime.launch_exit_hook)
                or runtime.debug):
            return super().run(*args, grid=grid, warmup=warmup, **kwargs)
        active = triton.runtime.driver.active
        device = active.get_current_device()
        caches = self.device_caches[device]
        if len(caches) != len(BINDER_CACHES):  # a Triton whose device caches differ: its own path
            return super().run(*args, grid=grid, warmup=warmup, **kwargs)
        bound, specialization, options = caches[-1](*args, **kwargs)
        key = (device, tuple(specialization), tuple(options.items()))
        compiled = self.launch_cache.get(key)
        if compiled is None:
            compiled = super().run(*args, grid=grid, warmup=False, **kwargs)
            if isinstance(compiled, CompiledKernel) and compiled.function is not None:
                self.launch_cache[key] = compiled
            return compiled
        size = len(grid)
        compiled.run(grid[0], grid[1] if size > 1 else 1, grid[2] if size > 2 else 1,
                     active.get_current_stream(device), compiled.function, compiled.packed_metadata,
                     None, None, None, *bound.values())
        return compiled


def jit(fn=None, **options):
    """`triton.jit(fn, **options)` for a launched kernel: a `CachedLaunchFunction` on a GPU, the
    interpreter's function under TRITON_INTERPRET=1 (module docstring)."""

    def decorator(fn):
        if knobs.runtime.interpret or not FAST_LAUNCH:
            return triton.jit(fn, **options)
        return CachedLaunchFunction(fn, **options)

    return decorator(fn) if fn is not None else decorator
