"""The kernel registry: one declarative `KernelInfo` record per kernel (PyTorch OpInfo style).

A record names its backends (implementations: our Triton kernel, our PyTorch fallback,
later third-party and plugged-in ones), its oracle and input strategy, its tolerance per
dtype (the dtypes it supports), its layouts and semantics flags, its error inputs and its
regression examples. The generic tests in tests/ iterate over `combos()`, so a kernel
added here is covered by every generic property without new test code. Records are data
(samplecheck.infos); the behaviour records of one kind share lives in their family
(samplecheck.families: KernelInfo subclasses with the family's defaults, and the
functions they use).
"""

import dataclasses
import importlib
from dataclasses import dataclass
from typing import Any, Callable

import pytest
import torch

from samplecheck.registry.catalog import ERROR_INPUTS, EXACT_TESTS, MEMORY_BOUND
from samplecheck.registry.layouts import LAYOUTS

DTYPE_NAMES = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}
ALL_DTYPES = tuple(DTYPE_NAMES)


def per_dtype(value, dtypes=ALL_DTYPES) -> dict:
    """A tolerance that is the same for every dtype in `dtypes` (the computation is fp32 or
    exact whatever the logits' dtype)."""
    return {dtype: value for dtype in dtypes}


@dataclass(frozen=True)
class Mark:
    """A skip or strict xfail, as data: applies where every given field matches."""

    kind: str  # "skip" or "xfail"
    reason: str  # the finding or the reason, shown with the outcome
    test: str | None = None  # the test (a samplecheck.registry.catalog name) it applies to; None: every test
    dtype: torch.dtype | None = None  # the logits dtype it applies to; None: every dtype
    layout: str | None = None  # the layout (samplecheck.registry.layouts) it applies to; None: every layout
    device: str | None = None  # "cpu" or "cuda"; None: both
    # xfail only: the finding's signature, a predicate over a failure's exception (type and
    # message) or fault. Without one the xfail is strict over the whole cell. With one, a failure
    # that shows the signature is the expected failure, any other failure fails the test, and
    # a pass passes: the drawn case did not reach the finding, whose own reproducer keeps it
    # pinned strictly (samplecheck.harness.plugin applies it).
    witness: Callable[[str], bool] | None = None

    def applies(self, test: str, dtype: torch.dtype, layout: str, device: str) -> bool:
        wanted = (self.test, self.dtype, self.layout, self.device)
        return all(w is None or w == v for w, v in zip(wanted, (test, dtype, layout, device)))

    def as_pytest_marks(self) -> tuple:
        if self.kind == "skip":
            return (pytest.mark.skip(reason=self.reason),)
        if self.witness is None:
            return (pytest.mark.xfail(reason=self.reason, strict=True),)
        return (pytest.mark.xfail(reason=self.reason, strict=False),
                pytest.mark.finding(witness=self.witness, reason=self.reason))


def beyond_memory_bound(reason: str) -> Mark:
    """The mark of a backend that allocates more than the record's memory bound by design:
    its test_memory_bound is skipped, with the reason."""
    return Mark("skip", reason, test=MEMORY_BOUND)


@dataclass(frozen=True)
class Backend:
    """One implementation of a kernel: each field is explained where it is declared."""

    # The backend's name: the second part of its cells' test ids (`top_k_top_p-triton-...`).
    name: str
    # "package.module:callable", imported on first use (so CPU runs can switch Triton to its
    # interpreter first).
    target: str
    # The device types it runs on.
    devices: tuple[str, ...] = ("cpu", "cuda")
    # The dtypes it takes; None: the record's.
    dtypes: tuple[torch.dtype, ...] | None = None
    # The layouts it takes; None: the record's.
    layouts: tuple[str, ...] | None = None
    # Its skips and pinned findings, as data (Mark).
    marks: tuple[Mark, ...] = ()
    # False for plugged-in code: error inputs check the exception type only, not our wording.
    error_messages: bool = True
    # accepts(case) -> whether it implements the case; restricts the drawn cases (e.g. a
    # top-k-only API in the top-k/top-p record). None: every case.
    accepts: Callable | None = None
    # extra_memory(logits, args) -> its own stated memory bound (bytes beyond its inputs),
    # replacing the record's (which states our kernel's). None: the record's.
    extra_memory: Callable | None = None
    # Keyword arguments beyond the record's contract that it takes (our kernels' launch
    # knobs); properties and error inputs that pass a knob run only on backends declaring it,
    # so a plug-in is called with contract arguments alone.
    knobs: tuple[str, ...] = ()
    # {axis: value} along the axes of samplecheck.judging.semantics where it departs from the
    # record's strict default (e.g. its tie policy); each value swaps in that axis's oracle
    # branch for this backend alone.
    semantics: dict[str, str] = dataclasses.field(default_factory=dict, hash=False)
    # It compiles one kernel per vocabulary size (a constexpr), so its cases draw only fixed
    # sizes (a bounded set of compiles per run): True for the real and adversarial sizes, or
    # the tuple of sizes to draw. False: random sizes.
    fixed_vocabs: bool | tuple[int, ...] = False
    # A call can be captured in a CUDA graph and replayed: it makes no host synchronisation,
    # its result depends only on its tensor arguments' values and its Python arguments, and
    # it reads no host state that can change between calls (test_graph_replay, on CUDA).
    capturable: bool = False
    # It honours an enclosing call's guard flag (our kernels: inside samplecheck.kernels
    # .validation.unchecked_values(flag), a set flag makes the call write nothing;
    # test_enclosing_flag).
    guard_flag: bool = False
    # Each row's outputs are bitwise the same whatever batch the row is in (its size, the
    # row's index, its mates): True, and test_batch_invariance fails a difference; False (e.g.
    # a sampler drawing every row from one generator), and it is skipped; None, and it is
    # measured and reported (a warning and the test's `measured` property), never failed.
    batch_invariant: bool | None = None

    def resolve(self) -> Callable:
        module, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module), attr)


def triton_and_torch(triton: str, torch_fallback: str, fallback_memory: str, *,
                     torch_capturable: bool = False) -> tuple[Backend, Backend]:
    """Our two implementations of a kernel, by target: the Triton kernel ("triton"), CUDA-graph
    capturable, batch invariant and honouring an enclosing guard flag, and its PyTorch fallback ("torch"), which
    allocates beyond the record's memory bound by design (`fallback_memory` says how) and is
    capturable when `torch_capturable` says so (a fallback that picks rows with nonzero()
    synchronises with the host)."""
    return (Backend("triton", triton, capturable=True, guard_flag=True, batch_invariant=True),
            Backend("torch", torch_fallback, marks=(beyond_memory_bound(fallback_memory),),
                    capturable=torch_capturable))


@dataclass(frozen=True)
class ErrorInput:
    """Calling a backend with `make(device)` -> (args, kwargs) must raise `error` matching
    `match`; an input that passes a launch knob (`knob`) is tried only on backends taking it.
    `argument`: the caller's parameter the error is about (a SamplingBatch field for the
    sampler), which a message naming only the failed checks must name."""

    description: str
    make: Callable[[str], tuple[tuple, dict]]
    error: type[Exception]
    match: str
    knob: str | None = None
    argument: str | None = None


def zeros_on(*shape, dtype=torch.float32):
    """An ErrorInput argument: make(device) -> zeros of `shape` on the device."""
    return lambda device: torch.zeros(shape, dtype=dtype, device=device)


def tensor_on(values, dtype):
    """An ErrorInput argument: make(device) -> tensor(values) on the device."""
    return lambda device: torch.tensor(values, dtype=dtype, device=device)


@dataclass(frozen=True)
class RegressionExample:
    """A fixed case replayed (as a Hypothesis @example) in the combos it names, by the test
    templates in `tests` (default: the exact ones; sampling tests replay only the cases
    meant for them), for the backends named in `backends` (default: every backend; a
    finding's GPU-sized pin names the backends it pins)."""

    ref: str
    case: Any
    dtypes: tuple[torch.dtype, ...]
    layouts: tuple[str, ...]
    tests: tuple[str, ...] = EXACT_TESTS
    backends: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Oracle:
    """How a record calls its oracle: `function(logits, **args, **options)`, where `args` are
    the case's keyword arguments (those named in `ignores` left out: a sampler's seed, which
    the law does not depend on) and `options` are the dtype's tolerance under the keyword
    `tolerance` (when set) and the record's semantics entries named in `semantics`, under
    their own names. An oracle that needs neither is named bare in the record."""

    function: Callable
    tolerance: str | None = None
    semantics: tuple[str, ...] = ()
    ignores: tuple[str, ...] = ()

    def __call__(self, logits: torch.Tensor, args: dict, semantics: dict, tolerance):
        options = {name: semantics[name] for name in self.semantics}
        if self.tolerance is not None:
            options[self.tolerance] = tolerance
        kept = {name: value for name, value in args.items() if name not in self.ignores}
        return self.function(logits, **kept, **options)


@dataclass(frozen=True, kw_only=True)
class KernelInfo:
    """Everything the generic tests need to know about one kernel: each field is explained
    where it is declared."""

    # The record's name: the first part of every test id of its cells (`top_k_top_p-triton-...`).
    name: str
    # The implementations judged against this record: ours first, then plug-ins and packs.
    backends: tuple[Backend, ...]
    # cases(budget) -> a Hypothesis strategy of cases within the device's size budget.
    cases: Callable
    # make_args(case, logits) -> the keyword parameters of a call on `logits`.
    make_args: Callable
    # The oracle: an `Oracle`, or a function called as reference(logits, **args) (wrapped in
    # one); `verdict` calls it with the record's semantics and the dtype's tolerance.
    reference: Oracle | Callable
    # check(original, output, reference, what): raises AssertionError on a mismatch.
    check: Callable
    # {dtype: the oracle's tolerance}; its keys are the dtypes the record supports.
    tolerance: dict[torch.dtype, float]
    # The record's strict default along each axis of samplecheck.judging.semantics (a
    # backend's `semantics` swaps in another value for itself).
    semantics: dict[str, Any]
    # The declared bad inputs and the error each must raise (test_error_inputs).
    error_inputs: tuple[ErrorInput, ...]
    # The layouts its cells are generated for (contig first).
    layouts: tuple[str, ...] = LAYOUTS
    # law(original, reference, **kwargs) -> (oracle probabilities fp64, ids that may be
    # drawn, ids that must be drawn when likely enough), each [B, V], for kernels whose output
    # logits are sampled from and for samplers (samplecheck.judging.laws), checked exactly,
    # without sampling, on the output's softmax or the `induced_law`; None: no law.
    law: Callable | None = None
    # distribution_cases(budget): the cases of the sampling test, for the kernels with a law
    # whose draws are tested; None: the law is only checked exactly.
    distribution_cases: Callable | None = None
    # Regression examples replayed before the drawn cases (RegressionExample.tests names where).
    examples: tuple[RegressionExample, ...] = ()
    # The call writes its result into the logits it is given (False: it returns new tensors
    # and must leave its input unchanged).
    in_place: bool = True
    # targets(original, reference) -> {label: value} for hypothesis.target(), steering long
    # (nightly) runs towards the inputs where this kernel is most likely wrong.
    targets: Callable | None = None
    # sample(call, logits, args, rows, n, seed) -> int64 [rows, n], n draws for each of the
    # first `rows` rows, for kernels that sample themselves (`call` is the backend bound to the
    # in-place contract check); None for masking kernels, whose draws are torch.multinomial
    # over softmax(output).
    sample: Callable | None = None
    # induced_law(output, args) -> fp64 [B, V], the law a sampler's output commits it to, for
    # samplers that also return the logits they draw from; None: a sampler's law is only
    # tested by drawing (a masking kernel induces the softmax of its output).
    induced_law: Callable | None = None
    # extra_memory(logits, args) -> the bytes a call may allocate on the GPU beyond its inputs
    # (outputs and scratch included), as the kernel's docstring states it; None: nothing
    # beyond samplecheck.judging.memory.SLACK_BYTES.
    extra_memory: Callable | None = None
    # same_output(actual, expected, what, vocab): the comparison of two outputs for inputs that
    # differ only in layout or batch mates (strided vs contiguous, row isolation, far rows,
    # batch invariance); None: bitwise on every output tensor (a declared
    # `layout_invariance` replaces it).
    same_output: Callable | None = None
    # The documented "off" values of its per-row parameters (samplecheck.inputs.off_encodings
    # .OffEncoding), each tried in one row beside binding rows and in rows where it alone
    # decides (`OffEncoding.alone`).
    off_encodings: tuple = ()
    # Its per-row token-id list arguments, their caps and padding (samplecheck.inputs.far_lists
    # .IdLists; None: it takes none), placed 2**31 entries apart by test_large_list_offsets.
    id_lists: Any = None

    def __post_init__(self):
        if not isinstance(self.reference, Oracle):
            object.__setattr__(self, "reference", Oracle(self.reference))

    @property
    def dtypes(self) -> tuple[torch.dtype, ...]:
        return tuple(self.tolerance)

    def verdict(self, logits: torch.Tensor, args: dict, dtype: torch.dtype | None = None):
        """The oracle's verdict on `logits` under `args`, at the tolerance of `dtype` (default:
        the logits' own)."""
        return self.reference(logits, args, self.semantics, self.tolerance[dtype or logits.dtype])


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
        from samplecheck.judging.semantics import declared_record

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
        _validate_semantics(kernel, backend)
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


def _validate_semantics(kernel: str, backend: Backend) -> None:
    from samplecheck.judging.semantics import validate

    validate(kernel, backend.semantics)


def combos(test: str, device: str, *, kernel=None, dtypes=None, layouts=None, sampled=False,
           own_sampler=False, output_law=False, knob=None, off_encodings=False, capturable=False,
           guard_flag=False, id_lists=False) -> list:
    """pytest params for `test` over every registered combo, with skips/xfails as marks.

    kernel/dtypes/layouts restrict the matrix (kernel: one record, for kernel-specific
    tests); sampled=True keeps only kernels with `distribution_cases`; own_sampler=True only
    samplers that draw their own ids (`sample`); output_law=True only
    those with a law that their output shows without sampling: kernels with no own sampler
    (the output's softmax) and samplers with an `induced_law`; knob=NAME only the backends
    that declare that launch knob; off_encodings=True only records that list off encodings;
    capturable=True only the backends that declare themselves CUDA-graph capturable;
    guard_flag=True only those that honour an enclosing guard flag;
    id_lists=True only records that declare id-list arguments.
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
            if knob is not None and knob not in backend.knobs:
                continue
            if capturable and not backend.capturable:
                continue
            if guard_flag and not backend.guard_flag:
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
    if device not in backend.devices:
        return [pytest.mark.skip(reason=f"backend {backend.name} runs on {', '.join(backend.devices)}, not {device}")]
    if backend.dtypes is not None and combo.dtype not in backend.dtypes:
        return [pytest.mark.skip(reason=f"backend {backend.name} does not declare {DTYPE_NAMES[combo.dtype]}")]
    if backend.layouts is not None and combo.layout not in backend.layouts:
        return [pytest.mark.skip(reason=f"backend {backend.name} does not declare layout {combo.layout}")]
    from samplecheck.judging.semantics import axis_marks

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


def register_all() -> None:
    """Register every record (importing samplecheck.infos registers each of its modules)."""
    import samplecheck.infos  # noqa: F401


def declarations() -> list[str]:
    """One line per kernel: its backends and what each declares beyond the defaults (devices,
    dtypes, layouts, own memory bound, the cases it accepts, knobs, semantics, capturable),
    for report headers."""
    from samplecheck.judging.semantics import describe

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
            parts += [fixed_vocabs_label(b.fixed_vocabs)] if b.fixed_vocabs else []
            parts += ["CUDA-graph capturable"] if b.capturable else []
            parts += [f"semantics {describe(b.semantics)}"] if describe(b.semantics) else []
            parts += [m.reason for m in b.marks if m.kind == "skip" and m.test is None and m.dtype is None
                      and m.layout is None and m.device is None]
            described.append(b.name + (f" ({'; '.join(parts)})" if parts else ""))
        lines.append(f"  {info.name}: {', '.join(described)}")
    return ["samplecheck backends:"] + lines
