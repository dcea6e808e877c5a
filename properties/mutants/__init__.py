"""Deliberately broken copies of our kernels, each reproducing a real bug.

Mutants live in one module per kernel (`properties/mutants/<kernel>.py`, a `MUTANTS`
tuple), collected here. A mutant is a source patch of one kernel module: find -> replace,
then any further (find, replace) edits in order, each `find` occurring exactly once. The patched module is written to a temporary file and imported from
there, so Triton's JIT (which reads function source) compiles it on a GPU and the
interpreter runs it on CPU. `samplecheck.mutants:<name>` resolves to the mutant's entry
point, so a mutant plugs into the registry like any backend (`pytest --sc-mutant=<name>`).

Generated mutants (`samplecheck mutate`) join these from a JSON file (a list of Mutant
fields) named by the environment variable SAMPLECHECK_GENERATED_MUTANTS, so `--sc-mutant`
resolves them by name in any process that inherits it.
"""

import atexit
import functools
import importlib
import importlib.util
import json
import os
import pkgutil
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from samplecheck.registry import catalog


@dataclass(frozen=True)
class Mutant:
    name: str
    kernel: str  # registry record it is a backend of
    module: str
    entry: str
    find: str
    replace: str
    description: str
    ref: str
    devices: tuple[str, ...] = ("cpu", "cuda")  # where the patch changes behaviour
    then: tuple[tuple[str, str], ...] = ()  # further (find, replace) edits, applied in order
    # The property (its test name, samplecheck.registry.catalog) known to kill it: the kill table
    # runs that property's file first, then the others, stopping at the first kill.
    killed_by: str = catalog.ORACLE_EQUIVALENCE
    # Its patch reads or writes outside the tensors (an unchecked id, a wrapped offset): on a GPU
    # that can poison the process's CUDA context, so the kill table hunts it in a process of its
    # own, never in the run it shares with the other mutants.
    faults_memory: bool = False
    # The modules from `module` to the one holding `entry`, when `module` does not hold it but is
    # reached through them (a kernel's split path, through the op's entry point; a helper module,
    # through the path that imports it, then the op): each loaded afresh, in order, with the
    # module before it (patched, or afresh) standing in for that module in its imports.
    via: tuple[str, ...] = ()

    @property
    def entry_module(self) -> str:
        """The module whose `entry` the mutant's backend calls (the original backend's)."""
        return self.via[-1] if self.via else self.module

    def patched_source(self) -> str:
        source = Path(importlib.util.find_spec(self.module).origin).read_text()
        for find, replace in ((self.find, self.replace), *self.then):
            count = source.count(find)
            if count != 1:
                raise ValueError(f"mutant {self.name}: patch target occurs {count} times in {self.module}, expected 1")
            source = source.replace(find, replace)
        return source


def _collect() -> dict[str, Mutant]:
    """Every `MUTANTS` tuple of the modules in this package (one per kernel), by name."""
    found: dict[str, Mutant] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        for mutant in importlib.import_module(f"{__name__}.{info.name}").MUTANTS:
            if mutant.name in found:
                raise ValueError(f"mutant name {mutant.name!r} is defined twice")
            found[mutant.name] = mutant
    return found


GENERATED_ENV = "SAMPLECHECK_GENERATED_MUTANTS"


def _tuples(value):
    """A JSON value with its lists read back as the tuples `Mutant`'s fields hold (nested too)."""
    return tuple(map(_tuples, value)) if isinstance(value, list) else value


def add_generated(path: str | Path) -> list[str]:
    """Register the mutants of a JSON file written by `samplecheck mutate`; their names."""
    names = []
    for fields in json.loads(Path(path).read_text()):
        mutant = Mutant(**{name: _tuples(value) for name, value in fields.items()})
        if MUTANTS.get(mutant.name, mutant) != mutant:
            raise ValueError(f"generated mutant {mutant.name!r} clashes with another of that name")
        MUTANTS[mutant.name] = mutant
        names.append(mutant.name)
    return names


MUTANTS = _collect()
if os.environ.get(GENERATED_ENV):
    add_generated(os.environ[GENERATED_ENV])


def _exec(name: str, path: Path):
    """The module at `path`, executed under `name` (not entered in sys.modules)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def _patched_dir() -> Path:
    """This process's directory of patched modules, removed when it exits: a kernel's source
    file must outlive its import (Triton reads it to compile)."""
    path = Path(tempfile.mkdtemp(prefix="samplecheck-mutants-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


@functools.cache
def load(name: str):
    """The mutant's entry point, from its patched module (through `via`'s fresh copy)."""
    mutant = MUTANTS[name]
    path = _patched_dir() / f"{mutant.name}.py"
    path.write_text(mutant.patched_source())
    module = _exec(f"samplecheck_mutant_{mutant.name}", path)
    inner = mutant.module
    for step, outer in enumerate(mutant.via):
        importlib.import_module(outer)  # the modules it imports besides the one standing in, as they are
        original = importlib.import_module(inner)
        sys.modules[inner] = module  # what `outer`'s imports of `inner` bind to
        try:
            module = _exec(f"samplecheck_mutant_{mutant.name}_via{step}", Path(importlib.util.find_spec(outer).origin))
        finally:
            sys.modules[inner] = original
        inner = outer
    return getattr(module, mutant.entry)


def __getattr__(name: str):
    if name in MUTANTS:
        return load(name)
    raise AttributeError(name)
