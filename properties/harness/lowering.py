"""Lowering the launches of a CPU run for a GPU, without one.

Triton's interpreter runs a kernel the way NumPy would: it never types the kernel, so source
that no GPU compiles runs on the CPU (a loop-carried variable whose dtype changes in the loop,
a constexpr used as a runtime value, an operation on mismatched types). `LaunchLog` records,
while it is active, each launch the interpreter runs (`InterpretedFunction.run`): the kernel
(its module, name and source file), its arguments (a tensor as its dtype, anything else as its
value) and its launch options. `lower(launches)` hands them to a child process started without
the interpreter, which imports each kernel as a GPU run would (`triton.jit`) and runs Triton's
front end on each distinct launch (`ASTSource.make_ir` for TARGET, an sm_90 GPU), with the
signature, constexprs and specialization Triton's own binder gives stand-ins of the arguments (a
tensor of the recorded dtype and 16-byte alignment, any other value itself), and its launch
options: the kernel as a GPU launch of those arguments compiles it. A kernel whose module is
not importable by name (a mutant's patched module) is loaded from its source file. The child
lives as long as the process that started it and lowers each distinct launch once; it needs no
CUDA driver.

`compiled_resources(launches)` compiles each launch all the way for TARGET in the same child
(Triton's whole pipeline, its own ptxas included) and reads what a program takes on the GPU
(`Resources`): registers a thread and local memory (cuobjdump's resource usage of the cubin),
shared memory (the compiled kernel's metadata) and the loads Triton's software pipelining made
asynchronous. These are this machine's Triton's figures: another Triton version allocates
differently.
"""

import atexit
import collections
import dataclasses
import functools
import importlib
import importlib.util
import multiprocessing
import os
import re
import subprocess
import sys
import tempfile
import types
from pathlib import Path

TARGET = ("cuda", 90, 32)  # backend, compute capability (the H100's and H200's), warp size
OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")  # launch options the front end reads
# An sm_90 SM's limits on the programs it holds at once: registers, shared memory (bytes; each
# program also takes SHARED_RESERVED), warps and programs; registers are allocated a warp at a
# time in REGISTER_UNIT blocks.
SM_LIMITS = dict(registers=65536, shared=233472, warps=64, programs=32)
SHARED_RESERVED = 1024
REGISTER_UNIT = 256


@dataclasses.dataclass(frozen=True)
class Launch:
    """One interpreted launch: `kernel` (module, name, source file) and its arguments by
    parameter name, each ("tensor", dtype name) or ("value", the value); `options`, the launch
    options of OPTIONS it passed."""

    kernel: tuple[str, str, str]
    arguments: tuple[tuple[str, tuple], ...]
    options: tuple[tuple[str, object], ...]

    def describe(self) -> str:
        shown = ", ".join(f"{name}={value[1]}" for name, value in self.arguments)
        return f"{self.kernel[1]}({shown}) [{self.kernel[0]}]"


@dataclasses.dataclass(frozen=True)
class Resources:
    """What one program of a compiled launch takes on TARGET: `registers` a thread, `local_bytes`
    of local memory a thread (register spills, stack), `shared_bytes` of shared memory,
    `num_warps`, `async_copies`: the loads Triton's software pipelining turned into
    asynchronous copies to shared memory (0: every load waits where its value is used), and
    `load_widths`: the kernel's global load instructions (synchronous or not) by the bytes each
    thread loads with one, from the SASS (16: vectorized loads of eight 16-bit entries; 2: one
    16-bit entry a load)."""

    registers: int
    local_bytes: int
    shared_bytes: int
    num_warps: int
    async_copies: int
    load_widths: tuple[tuple[int, int], ...] = ()  # (bytes a thread loads at once, instructions), widest first

    def programs_per_sm(self) -> int:
        """Programs of this launch one SM holds at once (SM_LIMITS)."""
        warp_registers = -(-self.registers * 32 // REGISTER_UNIT) * REGISTER_UNIT
        by_registers = SM_LIMITS["registers"] // (warp_registers * self.num_warps) if self.registers else 1 << 30
        by_shared = SM_LIMITS["shared"] // (self.shared_bytes + SHARED_RESERVED)
        return min(by_registers, by_shared, SM_LIMITS["warps"] // self.num_warps, SM_LIMITS["programs"])


def _argument(value) -> tuple:
    import torch

    if isinstance(value, torch.Tensor):
        return "tensor", str(value.dtype).removeprefix("torch."), value.data_ptr() % 16 == 0
    return "value", value


def _stand_in(argument: tuple):
    """A value Triton's binder specializes as it did the recorded argument: a tensor of its dtype,
    16-byte aligned or not as it was; any other value itself."""
    import torch

    kind, value, *aligned = argument
    if kind != "tensor":
        return value
    tensor = torch.empty(16, dtype=getattr(torch, value))
    return tensor if aligned[0] else tensor[1:]


class LaunchLog:
    """Records interpreted launches while entered: `launches`, the distinct ones (a set), and
    `grids`, every launch with its grid (a tuple, or the callable given) in launch order.
    `execute=False` records them without running the kernels (what they would write stays
    unwritten)."""

    def __init__(self, execute: bool = True):
        self.launches: set[Launch] = set()
        self.grids: list[tuple[Launch, tuple]] = []
        self.execute = execute
        self._original = None

    def __enter__(self):
        from triton.runtime.interpreter import InterpretedFunction

        log, original = self, InterpretedFunction.run
        self._original = original

        def run(function, *args, grid, warmup, **kwargs):
            fn = function.fn
            names = function.arg_names
            arguments = {**dict(zip(names, args)), **{k: v for k, v in kwargs.items() if k in names}}
            launch = Launch((fn.__module__, fn.__name__, fn.__code__.co_filename),
                            tuple((name, _argument(value)) for name, value in arguments.items()),
                            tuple(sorted((k, v) for k, v in kwargs.items() if k in OPTIONS)))
            log.launches.add(launch)
            log.grids.append((launch, grid if callable(grid) else tuple(grid)))
            return original(function, *args, grid=grid, warmup=warmup, **kwargs) if log.execute else None

        InterpretedFunction.run = run
        return self

    def __exit__(self, *exc):
        from triton.runtime.interpreter import InterpretedFunction

        InterpretedFunction.run = self._original
        return False


def _module(name: str, path: str):
    """The kernel's module as a GPU run imports it. One whose top package is not importable by
    name (a vendored copy imported under a package name of its own, a mutant's patched module)
    is loaded from its file, each package above it from the folders above the file."""
    parts = name.split(".")
    if name in sys.modules or importlib.util.find_spec(parts[0]) is not None:
        return importlib.import_module(name)
    for depth in range(1, len(parts)):
        package = ".".join(parts[:depth])
        if package not in sys.modules:
            _execute(package, Path(path).parents[len(parts) - 1 - depth] / "__init__.py", package=True)
    return _execute(name, Path(path))


def _execute(name: str, path: Path, package: bool = False):
    """The module `name` executed from `path` and entered in sys.modules; a package's folder
    is searched for its submodules (an empty package where it has no __init__.py)."""
    if package and not path.is_file():
        module = types.ModuleType(name)
        module.__path__ = [str(path.parent)]
        sys.modules[name] = module
        return module
    spec = importlib.util.spec_from_file_location(name, path,
                                                  submodule_search_locations=[str(path.parent)] if package else None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@functools.cache
def _backend():
    from triton.backends.compiler import GPUTarget
    from triton.compiler import make_backend

    target = GPUTarget(*TARGET)
    return target, make_backend(target)


def _source(launch: Launch):
    """The launch's kernel as Triton compiles it for TARGET: (ASTSource, launch options). Its
    signature, constexprs and specialization (integers divisible by 16, pointers aligned to 16
    bytes) come from Triton's own binder and argument packing, so the kernel compiles as a GPU
    launch of the same arguments compiles it."""
    from triton.compiler import ASTSource
    from triton.runtime.jit import create_function_from_signature

    module, name, path = launch.kernel
    kernel = getattr(_module(module, path), name)
    _, backend = _backend()
    options = dict(launch.options)
    binder = create_function_from_signature(kernel.signature, kernel.params, backend)
    bound, specialization, bound_options = binder(
        **{name: _stand_in(argument) for name, argument in launch.arguments}, **options)
    _, signature, constexprs, attrs = kernel._pack_args(backend, options, bound, specialization, bound_options)
    return ASTSource(kernel, signature, constexprs, attrs), options


@functools.cache
def _lowered(launch: Launch) -> str | None:
    """None when Triton's front end lowers the launch for TARGET, else the error."""
    from triton._C.libtriton import ir

    source, launch_options = _source(launch)
    target, backend = _backend()
    options = backend.parse_options(launch_options)
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    try:
        source.make_ir(target, options, backend.get_codegen_implementation(options), backend.get_module_map(),
                       context)
    except Exception as error:  # the front end's verdict, reported to the test
        return f"{type(error).__name__}: {error}"
    return None


def _cuobjdump(cubin: bytes, option: str) -> str:
    """What cuobjdump (the one Triton's NVIDIA backend ships) prints for a cubin with `option`."""
    import triton.backends.nvidia

    tool = Path(triton.backends.nvidia.__file__).parent / "bin" / "cuobjdump"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "kernel.cubin"
        path.write_bytes(cubin)
        return subprocess.run([str(tool), option, str(path)], capture_output=True, text=True, check=True).stdout


def cubin_usage(cubin: bytes) -> dict[str, int]:
    """The resource usage cuobjdump reads from a one-kernel cubin, by its names: REG (registers a
    thread), STACK and LOCAL (bytes a thread), SHARED (static bytes), ..."""
    usage = _cuobjdump(cubin, "--dump-resource-usage")
    return {name: int(value) for name, value in re.findall(r"\b([A-Z]+):(\d+)", usage)}


# Bytes a thread loads with one global load instruction, by its size suffix (none: 4).
LOAD_SUFFIX_BYTES = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "64": 8, "128": 16}


def global_load_widths(sass: str) -> tuple[tuple[int, int], ...]:
    """(bytes, instructions) of the global loads (LDG, and LDGSTS: asynchronous copies) in a
    kernel's SASS, widest first."""
    counts = collections.Counter(
        next((LOAD_SUFFIX_BYTES[part] for part in suffixes.split(".") if part in LOAD_SUFFIX_BYTES), 4)
        for suffixes in re.findall(r"\bLDG(?:STS)?((?:\.[A-Z0-9]+)*)(?![A-Z0-9])", sass))
    return tuple(sorted(counts.items(), reverse=True))


@functools.cache
def _resources(launch: Launch) -> Resources | str:
    """The launch compiled for TARGET (module docstring), or the compiler's error."""
    import triton

    source, launch_options = _source(launch)
    try:
        compiled = triton.compile(source, target=_backend()[0], options=launch_options)
    except Exception as error:  # the compiler's verdict, reported to the caller
        return f"{type(error).__name__}: {error}"
    usage = cubin_usage(compiled.asm["cubin"])
    return Resources(usage["REG"], usage["LOCAL"], compiled.metadata.shared, compiled.metadata.num_warps,
                     compiled.asm["ttgir"].count("async_copy_global_to_local"),
                     global_load_widths(_cuobjdump(compiled.asm["cubin"], "-sass")))


def _resources_in_child(launches: list[Launch]) -> list[Resources | str]:
    return [_resources(launch) for launch in launches]


def _lower_in_child(launches: list[Launch]) -> list[tuple[str, str]]:
    return [(launch.describe(), error) for launch in launches if (error := _lowered(launch)) is not None]


@functools.cache
def _child():
    """A process started without Triton's interpreter (spawned: nothing of this one's Triton)."""
    saved = os.environ.pop("TRITON_INTERPRET", None)
    try:
        pool = multiprocessing.get_context("spawn").Pool(1)
    finally:
        if saved is not None:
            os.environ["TRITON_INTERPRET"] = saved
    atexit.register(pool.terminate)
    return pool


def lower(launches) -> list[tuple[str, str]]:
    """(launch, error) for each launch Triton's front end does not lower for TARGET, in the
    order given (module docstring)."""
    ordered = sorted(launches, key=lambda launch: (launch.kernel, repr(launch.arguments), repr(launch.options)))
    return _child().apply(_lower_in_child, (ordered,)) if ordered else []


def compiled_resources(launches) -> dict:
    """Each launch's `Resources` on TARGET, or the compiler's error (module docstring)."""
    launches = list(dict.fromkeys(launches))
    return dict(zip(launches, _child().apply(_resources_in_child, (launches,)))) if launches else {}
