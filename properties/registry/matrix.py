"""The registered matrix: the records under test and their (kernel, backend, dtype, layout)
cells.

`register` adds a record (each module of samplecheck.infos registers its own); `plug` adds
backends to the records and, with `only`, keeps the plugged backends alone. The generic tests in
tests/ iterate over `combos()`, so a kernel registered here is covered by every generic
property without new test code; each cell is a `Combo`, whose record is the record as that
cell's backend is judged (samplecheck.registry.semantics). `declarations` describes the
registered backends for report headers.
"""

import dataclasses
import fnmatch
from dataclasses import dataclass
from typing import Callable

import pytest
import torch

from samplecheck.registry.catalog import ERROR_INPUTS, PROPERTY_OF
from samplecheck.registry.records import DTYPE_NAMES, Backend, KernelInfo
from samplecheck.registry.semantics import axis_marks, declared_record, describe, validate


def fixed_vocabs_label(sizes: bool | tuple[int, ...]) -> str:
    return "fixed vocab sizes only" if sizes is True else "vocab sizes " + ", ".join(map(str, sizes)) + " only"


def _at_fixed_vocabs(cases: Callable, sizes: bool | tuple[int, ...]) -> Callable:
    """`cases(budget)` drawing only fixed vocabulary sizes: `sizes`, or (True) the budget's."""
    vocabs = None if sizes is True else tuple(sizes)
    return lambda budget: cases(dataclasses.replace(budget, random_vocabs=False, vocabs=vocabs))


@dataclass(frozen=True)
class Combo:
    """One (kernel, backend, dtype, layout) cell of the test matrix."""

    info: KernelInfo
    backend: Backend
    dtype: torch.dtype
    layout: str

    def __post_init__(self):
        """`info` becomes the record as this backend is judged: its declared semantics merged
        and their oracle branches in place, its cases at fixed vocabulary sizes for a backend
        declaring `fixed_vocabs` (the record itself when nothing is declared)."""
        info = declared_record(self.info, self.backend.semantics)
        if self.backend.fixed_vocabs:
            sizes = self.backend.fixed_vocabs
            info = dataclasses.replace(info, cases=_at_fixed_vocabs(info.cases, sizes),
                                       distribution_cases=info.distribution_cases and _at_fixed_vocabs(
                                           info.distribution_cases, sizes))
        object.__setattr__(self, "info", info)

    @property
    def id(self) -> str:
        return f"{self.info.name}-{self.backend.name}-{DTYPE_NAMES[self.dtype]}-{self.layout}"

    def __repr__(self) -> str:
        return f"Combo({self.id})"

    def _repr_pretty_(self, printer, cycle) -> None:
        """Hypothesis prints falsifying examples with its pretty-printer, which would spell
        out every field of the record: the id says which cell failed."""
        printer.text(repr(self))


# The records under test: `plug` adds backends to them and, with `only`, drops the others.
REGISTRY: dict[str, KernelInfo] = {}
# Every record as registered, whatever `plug` later did (for tests of the records themselves).
RECORDS: dict[str, KernelInfo] = {}


def register(info: KernelInfo) -> KernelInfo:
    if info.name in RECORDS:
        raise ValueError(f"kernel {info.name!r} is already registered")
    REGISTRY[info.name] = RECORDS[info.name] = info
    return info


def plug(backends: list[tuple[str, Backend]], *, only: bool) -> None:
    """Add (kernel, backend) pairs to the registry. With `only`, the plugged backends are
    the only ones tested: other backends and kernels without a plug leave the registry."""
    plugged: dict[str, list[Backend]] = {}
    for kernel, backend in backends:
        if kernel not in REGISTRY:
            raise KeyError(f"unknown kernel {kernel!r}; registered: {', '.join(REGISTRY)}")
        validate(kernel, backend.semantics)
        plugged.setdefault(kernel, []).append(backend)
    for name in list(REGISTRY):
        if name not in plugged:
            if only:
                del REGISTRY[name]
            continue
        info = REGISTRY[name]
        names = [b.name for b in info.backends + tuple(plugged[name])]
        if not only and len(set(names)) != len(names):
            raise ValueError(f"kernel {name!r}: backend names must be unique, got {names}")
        kept = () if only else info.backends
        REGISTRY[name] = dataclasses.replace(info, backends=kept + tuple(plugged[name]))


def combos(test: str, device: str, *, kernel=None, backends=None, dtypes=None, layouts=None, sampled=False,
           own_sampler=False, output_law=False, knob=None, off_encodings=False, capturable=False,
           guard_flag=False, id_lists=False, launch_paths=False) -> list:
    """pytest params for `test` over every registered combo, with skips/xfails as marks.

    kernel/backends/dtypes/layouts restrict the matrix (kernel: one record, for kernel-specific
    tests; backends: backend-name patterns, fnmatch's); sampled=True keeps only kernels with
    `distribution_cases`; own_sampler=True only samplers that draw their own ids (`sample`);
    output_law=True only
    those with a law that their output shows without sampling: kernels with no own sampler
    (the output's softmax) and samplers with an `induced_law`; knob=NAME only the backends
    that declare that launch knob; off_encodings=True only records that list off encodings;
    capturable=True only the backends that declare themselves CUDA-graph capturable;
    guard_flag=True only those that honour an enclosing guard flag;
    id_lists=True only records that declare id-list arguments;
    launch_paths=True only the backends that declare launch-path shapes (`path_shapes`).
    """
    params = []
    for info in REGISTRY.values():
        if kernel is not None and info.name != kernel:
            continue
        if sampled and info.distribution_cases is None:
            continue
        if own_sampler and info.sample is None:
            continue
        if output_law and (info.law is None or info.sample is not None and info.induced_law is None):
            continue
        if off_encodings and not info.off_encodings:
            continue
        if id_lists and info.id_lists is None:
            continue
        for backend in info.backends:
            if backends is not None and not any(fnmatch.fnmatchcase(backend.name, name) for name in backends):
                continue
            if knob is not None and knob not in backend.knobs:
                continue
            if capturable and not backend.capturable:
                continue
            if guard_flag and not backend.guard_flag:
                continue
            if launch_paths and not backend.path_shapes:
                continue
            for dtype in info.dtypes:
                if dtypes is not None and dtype not in dtypes:
                    continue
                for layout in info.layouts:
                    if layouts is not None and layout not in layouts:
                        continue
                    combo = Combo(info, backend, dtype, layout)
                    params.append(pytest.param(combo, id=combo.id, marks=_marks(combo, test, device)))
    return params


def _marks(combo: Combo, test: str, device: str) -> list:
    backend = combo.backend
    test = PROPERTY_OF.get(test, test)
    if device not in backend.devices:
        return [pytest.mark.skip(reason=f"backend {backend.name} runs on {', '.join(backend.devices)}, not {device}")]
    if backend.dtypes is not None and combo.dtype not in backend.dtypes:
        return [pytest.mark.skip(reason=f"backend {backend.name} does not declare {DTYPE_NAMES[combo.dtype]}")]
    if backend.layouts is not None and combo.layout not in backend.layouts:
        return [pytest.mark.skip(reason=f"backend {backend.name} does not declare layout {combo.layout}")]
    declared = [pytest.mark.skip(reason=f"backend {backend.name} {reason}")
                for skipped, reason in axis_marks(combo.info.name, backend.semantics) if skipped == test]
    return declared + [pytest_mark for m in backend.marks if m.applies(test, combo.dtype, combo.layout, device)
                       for pytest_mark in m.as_pytest_marks()]


def error_cases(device: str) -> list:
    """pytest params over (kernel, backend, error input) triples."""
    params = []
    for info in REGISTRY.values():
        for backend in info.backends:
            marks = [] if device in backend.devices else [
                pytest.mark.skip(reason=f"backend {backend.name} runs on {', '.join(backend.devices)}")]
            marks += [pytest_mark for m in backend.marks
                      if m.dtype is None and m.layout is None and m.applies(ERROR_INPUTS, None, None, device)
                      for pytest_mark in m.as_pytest_marks()]
            for error in info.error_inputs:
                if error.knob is not None and error.knob not in backend.knobs:
                    continue
                params.append(pytest.param((info, backend, error), marks=marks,
                                           id=f"{info.name}-{backend.name}-{error.description.replace(' ', '_')}"))
    return params


def declarations() -> list[str]:
    """One line per kernel: its backends and what each declares beyond the defaults (devices,
    dtypes, layouts, own memory bound, the cases it accepts, knobs, code paths, semantics,
    capturable), for report headers."""
    lines = []
    for info in REGISTRY.values():
        described = []
        for b in info.backends:
            parts = [f"devices={','.join(b.devices)}"] if b.devices != ("cpu", "cuda") else []
            parts += [f"dtypes={','.join(DTYPE_NAMES[d] for d in b.dtypes)}"] if b.dtypes is not None else []
            parts += [f"layouts={','.join(b.layouts)}"] if b.layouts is not None else []
            parts += ["own memory bound"] if b.extra_memory is not None else []
            parts += [f"cases: {(b.accepts.__doc__ or b.accepts.__name__).splitlines()[0]}"] if b.accepts else []
            parts += [f"knobs={','.join(b.knobs)}"] if b.knobs else []
            parts += [f"paths={','.join(b.paths)}"] if b.paths else []
            parts += [fixed_vocabs_label(b.fixed_vocabs)] if b.fixed_vocabs else []
            parts += ["CUDA-graph capturable"] if b.capturable else []
            parts += [f"semantics {describe(b.semantics)}"] if describe(b.semantics) else []
            parts += [m.reason for m in b.marks if m.kind == "skip" and m.test is None and m.dtype is None
                      and m.layout is None and m.device is None]
            described.append(b.name + (f" ({'; '.join(parts)})" if parts else ""))
        lines.append(f"  {info.name}: {', '.join(described)}")
    return ["samplecheck backends:"] + lines
