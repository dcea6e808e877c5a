"""Lowering the launches of a CPU run for a GPU, without one.

Triton's interpreter runs a kernel the way NumPy would: it never types the kernel, so source
that no GPU compiles runs on the CPU (a loop-carried variable whose dtype changes in the loop,
a constexpr used as a runtime value, an operation on mismatched types). `LaunchLog` records,
while it is active, each launch the interpreter runs (`InterpretedFunction.run`): the kernel
(its module, name and source file), its arguments (a tensor as its dtype, anything else as its
value) and its launch options. `lower(launches)` hands them to a child process started without
the interpreter, which imports each kernel as a GPU run would (`triton.jit`) and runs Triton's
front end on each distinct launch (`ASTSource.make_ir` for TARGET, an sm_90 GPU): the
specialization types Triton's binder gives the arguments (`mangle_type`; annotated parameters
keep their annotation), constexpr values, num_warps. A kernel whose module is not importable
by name (a mutant's patched module) is loaded from its source file. The child lives as long as
the process that started it and lowers each distinct launch once; it needs no CUDA driver.
"""

import atexit
import dataclasses
import functools
import importlib
import importlib.util
import multiprocessing
import os
import sys
import types
from pathlib import Path

TARGET = ("cuda", 90, 32)  # backend, compute capability (the H100's and H200's), warp size
OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")  # launch options the front end reads


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


def _argument(value) -> tuple:
    import torch

    if isinstance(value, torch.Tensor):
        return "tensor", str(value.dtype).removeprefix("torch.")
    return "value", value


class LaunchLog:
    """Records interpreted launches into `self.launches` (a set) while entered."""

    def __init__(self):
        self.launches: set[Launch] = set()
        self._original = None

    def __enter__(self):
        from triton.runtime.interpreter import InterpretedFunction

        log, original = self, InterpretedFunction.run
        self._original = original

        def run(function, *args, grid, warmup, **kwargs):
            fn = function.fn
            names = function.arg_names
            arguments = {**dict(zip(names, args)), **{k: v for k, v in kwargs.items() if k in names}}
            log.launches.add(Launch(
                (fn.__module__, fn.__name__, fn.__code__.co_filename),
                tuple((name, _argument(value)) for name, value in arguments.items()),
                tuple(sorted((k, v) for k, v in kwargs.items() if k in OPTIONS))))
            return original(function, *args, grid=grid, warmup=warmup, **kwargs)

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


@functools.cache
def _lowered(launch: Launch) -> str | None:
    """None when Triton's front end lowers the launch for TARGET, else the error."""
    import torch
    from triton._C.libtriton import ir
    from triton.compiler import ASTSource
    from triton.runtime.jit import mangle_type

    module, name, path = launch.kernel
    kernel = getattr(_module(module, path), name)
    given = dict(launch.arguments)
    signature, constexprs = {}, {}
    for index, param in enumerate(kernel.params):
        kind, value = given.get(param.name, ("value", param.default))
        if kind == "tensor":
            value = torch.empty(0, dtype=getattr(torch, value))
        if param.is_constexpr or value is None:
            signature[param.name] = "constexpr"
            constexprs[(index,)] = value
        else:
            signature[param.name] = param.annotation_type or mangle_type(value)
    target, backend = _backend()
    options = backend.parse_options(dict(launch.options))
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    try:
        ASTSource(fn=kernel, signature=signature, constexprs=constexprs).make_ir(
            target, options, backend.get_codegen_implementation(options), backend.get_module_map(), context)
    except Exception as error:  # the front end's verdict, reported to the test
        return f"{type(error).__name__}: {error}"
    return None


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
