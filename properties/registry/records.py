"""The records' vocabulary: one declarative `KernelInfo` record per kernel (PyTorch OpInfo style).

A record names its backends (implementations: our Triton kernel, our PyTorch fallback,
later third-party and plugged-in ones), its oracle and input strategy, its tolerance per
dtype (the dtypes it supports), its layouts and semantics flags, its error inputs and its
regression examples; a pack whose engine cannot run here raises `PackUnavailable` instead of
giving its backends. Records are data (samplecheck.infos), registered into the matrix the
generic tests iterate over (samplecheck.registry.matrix); the behaviour records of one kind
share lives in their family (samplecheck.families: KernelInfo subclasses with the family's
defaults, and the functions they use).
"""

import dataclasses
import importlib
from dataclasses import dataclass
from typing import Any, Callable

import pytest
import torch

from samplecheck.registry.catalog import EXACT_TESTS, MEMORY_BOUND
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
    # {path name: knob values} that route every call through one of its code paths, whatever
    # the case's sizes (a path the drawn cases alone never reach, e.g. one for lists longer than
    # any drawn). The properties that must see every path run each case under each
    # (test_every_path_gives_the_same_bits, test_memory_safety). Empty: the path the sizes pick.
    paths: dict[str, dict] = dataclasses.field(default_factory=dict, hash=False)
    # {path name: {device type: (batch, vocab)}}: the launch paths that the call's sizes pick
    # (not forced by knobs, unlike `paths`), each with a shape that takes it on that device
    # (given the parameters the path needs, e.g. top-k alone). Value checks made inside a
    # path's own kernels meet bad values there: each error input runs at each shape too
    # (test_error_inputs_on_each_launch_path). Empty: the error inputs' own shape alone.
    path_shapes: dict[str, dict[str, tuple[int, int]]] = dataclasses.field(default_factory=dict, hash=False)
    # {path name of `path_shapes`: {field: value}}: the per-row parameters (fields of the
    # record's case, as pools) that a call at the path's shape is given to take that path (e.g.
    # top-k alone, k below the vocabulary), binding at least in the shape's last row; a path
    # absent here takes its shape whatever the parameters. test_launch_path_shapes checks the routing,
    # test_large_offsets_on_each_launch_path places each path's rows 2**31 elements apart.
    path_parameters: dict[str, dict] = dataclasses.field(default_factory=dict, hash=False)
    # {axis: value} along the axes of samplecheck.registry.semantics where it departs from the
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

    @property
    def ours(self) -> bool:
        """Whether it is a kernel we ship (samplecheck.kernels) or a mutant of one."""
        return self.target.startswith(("samplecheck.kernels.", "samplecheck.mutants:"))

    def resolve(self) -> Callable:
        module, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module), attr)


def triton_and_torch(triton: str, torch_fallback: str, fallback_memory: str, *,
                     torch_capturable: bool = False, path_shapes: dict | None = None,
                     path_parameters: dict | None = None) -> tuple[Backend, Backend]:
    """Our two implementations of a kernel, by target: the Triton kernel ("triton"), CUDA-graph
    capturable, batch invariant and honouring an enclosing guard flag, and its PyTorch fallback ("torch"), which
    allocates beyond the record's memory bound by design (`fallback_memory` says how) and is
    capturable when `torch_capturable` says so (a fallback that picks rows with nonzero()
    synchronises with the host). `path_shapes`, `path_parameters`: the Triton kernel's
    (Backend.path_shapes, Backend.path_parameters)."""
    return (Backend("triton", triton, capturable=True, guard_flag=True, batch_invariant=True,
                    path_shapes=path_shapes or {}, path_parameters=path_parameters or {}),
            Backend("torch", torch_fallback, marks=(beyond_memory_bound(fallback_memory),),
                    capturable=torch_capturable))


class PackUnavailable(Exception):
    """Raised by a pack's callable (samplecheck.harness.packs) when its engine cannot run here;
    the message says why (e.g. "vLLM pack: no vLLM installed and SAMPLECHECK_VLLM_KERNELS unset")."""


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


@dataclass(frozen=True)
class BadInput:
    """An entry of the bad-input table (samplecheck.families.bad_inputs): calling a backend
    of the record `kernel` with `make(device)` -> (args, kwargs) (built as an ErrorInput's)
    must either raise `error`, with a message naming `argument` (the caller's parameter the
    error is about; a SamplingBatch field for the sampler) and what it allows, or, with
    `error` None, return what `result(output, args, kwargs)` accepts (the documented result;
    it raises AssertionError otherwise). `category`: the kind of bad input (dtype, range,
    non-finite-row, ...)."""

    kernel: str
    description: str
    category: str
    make: Callable[[str], tuple[tuple, dict]]
    error: type[Exception] | None = None
    argument: str | None = None
    result: Callable | None = None


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
    # The record's strict default along each axis of samplecheck.registry.semantics (a
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
