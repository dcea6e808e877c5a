"""The Hugging Face transformers pack (entry point `samplecheck.packs: transformers`):
transformers' logits processors as backends of our records, called as `generate()` and
continuous batching call them (samplecheck.backends.transformers_calls).

`PACK` lists the (record, Backend) pairs with what each declares, as data: the conventions in
which transformers legitimately differs from our strict contract (`semantics`), the cases a
processor implements (`accepts`), the dtypes and layouts worth running (transformers computes
on an fp32 copy of any input, so fp32 and bf16, contiguous and one strided layout, cover its
behaviour at a fraction of the CPU time), and the defects found (docs/findings-transformers.md)
as narrow strict xfails and skips. `pack()` returns it, declared for the run's device, where
transformers 5.24 or a later 5.x is installed, and raises PackUnavailable elsewhere; nothing
here imports transformers.

Per-row parameters (the choice, for every record): `generate()` takes one value per parameter
(one bad-words list, one bias dict, ...) for its whole batch, so the adapters call a processor
once per group of rows sharing their values, as a batch of requests with one generation config.
This judges every drawn case, mixed rows included, through transformers' own batched calls,
instead of only cases whose rows share one value (an `accepts` of uniform rows would reject
most drawn cases). Continuous batching's per-request processors take the whole batch with
per-row values, as that engine does.
"""

import dataclasses
import importlib.metadata
import importlib.util
import os

import torch

from samplecheck.backends.transformers_findings import (ADDITIVE_MASKS, ALLOWLIST_MASKS, CB_TOP_P, INF_ROWS,
                                                       SAMPLING, no_reciprocal_overflow, satisfiable_allowlists)
from samplecheck.inputs.pools import expand_pool
from samplecheck.registry import catalog
from samplecheck.registry.records import Backend, Mark, PackUnavailable

MODULE = "samplecheck.backends.transformers_calls"
# The transformers releases whose call sites the adapters follow (scripts/setup.sh installs them):
# 5.x from 5.24, the release they were read from and run with (5.17's repetition penalty, for one,
# takes no per-row padding).
VERSIONS = ((5, 24), (6, 0))
DTYPES = (torch.float32, torch.bfloat16)
LAYOUTS = ("contig", "padded64")

VALIDATED_UPSTREAM = tuple(Mark(
    "skip", "transformers validates generation parameters in GenerationConfig and the processors' constructors; the "
    "processors take validated values and raise nothing on bad ones", test=test) for test in catalog.BAD_VALUE_TESTS)
FAR_LISTS = tuple(Mark(
    "skip", "not measured for transformers: far id lists need 2**14 to 2**24 filler rows and 8-16 GiB of ids, and the "
    "adapters build generate's per-row inputs on the host", test=test)
    for test in (catalog.LARGE_LIST_OFFSETS, catalog.LARGE_LIST_OFFSETS_CHECKED))


# --- memory bounds (bytes beyond the inputs, read from the processors' code) ---------------------
# Entries alive at once per logit, with 25% over for the allocator, plus 1 MiB of O(B) state:
# the fp32 copy generate makes (4) and the processor's result (4) in every call; torch.sort and
# torch.topk as measured for the vLLM pack (about 4 e + 40 bytes per entry of e bytes).

def _bound(per_entry: int):
    def extra(logits, args) -> int:
        return int(1.25 * per_entry * logits.size(0) * (logits.size(1) + 1)) + 2**20
    return extra


ELEMENTWISE = _bound(4 + 4 + 4 + 1)            # copy, result, a zero bias or pad column, a bool mask
SORTING = _bound(4 + 4 + (4 * 4 + 40) + 4 + 4 + 1 + 1 + 4)  # copy, result, sort, softmax, cumsum, masks
SAMPLING_BYTES = _bound(4 + 4 + (4 * 4 + 40) + 4 + 4 + 1 + 1 + 4 + 4)  # the masking, then the softmax drawn from


# --- case filters (Backend.accepts) ---------------------------------------------------------------

def repetition_only(case) -> bool:
    """frequency and presence off (transformers has the repetition penalty only)"""
    return all(f == 0 for f in case.frequency) and all(q == 0 for q in case.presence)


def no_greedy_rows(case) -> bool:
    """no T = 0 row (continuous batching's per-request temperature divides by it; greedy is a
    batch-wide do_sample=False there)"""
    return case.temperature is None or 0.0 not in expand_pool(case.temperature, case.logits.batch)


def _backend(name: str, function: str, *, dtypes=DTYPES, memory=ELEMENTWISE, marks=(), **fields) -> Backend:
    return Backend(name, f"{MODULE}:{function}", dtypes=dtypes, layouts=LAYOUTS, error_messages=False,
                   extra_memory=memory, marks=VALIDATED_UPSTREAM + FAR_LISTS + tuple(marks), **fields)


# transformers' top-p keeps x iff the fp32 cumulative mass of the ascending sort up to x exceeds
# 1 - p: ties split by sort position (torch.sort is not stable), mass summed in fp32.
SORTED_TOP_P = {"top_p_boundary": "strict_by_position"}
# transformers gives NaN logits no meaning: generate's remedy is `remove_invalid_values`, which
# rewrites them, and its sampling raises on them. Declared where a processor compares values.
NAN_UNSPECIFIED = {"nan_policy": "row_unspecified"}
OUT_OF_DOMAIN_OFF = ("the off-encoding property writes values outside this processor's domain: {}; its other off "
                     "values are the adapter's mapping to what generate builds, and drawn cases hold them")
CPU_DISTRIBUTION = Mark(
    "skip", "~18k draws per row, each through generate's warpers on a repeated row, cost minutes on one CPU core; the "
    "law of this path is torch.multinomial over softmax(transformers_top_k_top_p's output), which the masking "
    "record's test_distribution checks on CPU; runs on --sc-device=cuda", test=catalog.DISTRIBUTION, device="cpu")

PACK: tuple[tuple[str, Backend], ...] = (
    ("temperature", _backend("transformers_temperature", "temperature")),
    ("temperature", _backend("transformers_cb_temperature", "cb_temperature", accepts=no_greedy_rows, marks=(
        Mark("skip", OUT_OF_DOMAIN_OFF.format("T = 0 (greedy is batch-wide in continuous batching)"),
             test=catalog.OFF_ENCODINGS),))),
    ("top_k_top_p", _backend("transformers_top_k_top_p", "top_k_top_p", memory=SORTING, marks=INF_ROWS,
                             semantics={**SORTED_TOP_P, **NAN_UNSPECIFIED})),
    ("top_k_top_p", _backend("transformers_cb_top_k_top_p", "cb_top_k_top_p", memory=SORTING, marks=CB_TOP_P,
                             semantics={**SORTED_TOP_P, **NAN_UNSPECIFIED})),
    # fp32 only: it samples from an fp32 copy, whose bf16 values the masking backends above judge.
    ("top_k_top_p_sample", _backend("transformers_sample", "sample", dtypes=(torch.float32,), memory=SAMPLING_BYTES,
                                    marks=SAMPLING + (CPU_DISTRIBUTION,),
                                    semantics={**SORTED_TOP_P, "random_stream": "own"},
                                    batch_invariant=False)),  # one torch.multinomial over the batch
    ("min_p", _backend("transformers_min_p", "min_p", memory=SORTING, marks=INF_ROWS,
                       semantics={"min_p_softmax": "fp32", **NAN_UNSPECIFIED})),
    # fp32 only: its cases are one in ten drawn (repetition_only), and the half-dtype store is the
    # adapters' own, judged on the other backends.
    ("penalties", _backend("transformers_repetition_penalty", "repetition_penalty", dtypes=(torch.float32,),
                           accepts=repetition_only, marks=(
        Mark("skip", OUT_OF_DOMAIN_OFF.format("a frequency penalty, which the output history's off value arms"),
             test=catalog.OFF_ENCODINGS),))),
    ("bad_words", _backend("transformers_bad_words", "bad_words", marks=ADDITIVE_MASKS, semantics=NAN_UNSPECIFIED)),
    ("logit_bias", _backend("transformers_logit_bias", "logit_bias", accepts=satisfiable_allowlists,
                            marks=ALLOWLIST_MASKS, semantics=NAN_UNSPECIFIED)),
)


# On CUDA, torch divides a tensor by a Python float as a product with the float's fp32 reciprocal
# (its CUDA division kernel's scalar path); on CPU it divides (IEEE). TemperatureLogitsWarper and
# RepetitionPenaltyLogitsProcessor divide by their Python float, so on CUDA they declare that
# arithmetic (temperature: `approximate`, the record has no reciprocal branch; penalties: the exact
# `reciprocal` model), and their cases leave out the values whose reciprocal overflows (T6).
ON_CUDA = {
    "transformers_temperature": {"division": "approximate"},
    "transformers_repetition_penalty": {"division": "reciprocal"},
}


def _on_cuda(backend: Backend) -> Backend:
    if backend.name not in ON_CUDA:
        return backend
    accepts = backend.accepts

    def cuda_cases(case) -> bool:
        return (accepts is None or accepts(case)) and no_reciprocal_overflow(case)
    cuda_cases.__doc__ = "; ".join(f.__doc__.splitlines()[0] for f in (accepts, no_reciprocal_overflow) if f)
    return dataclasses.replace(backend, semantics={**backend.semantics, **ON_CUDA[backend.name]}, accepts=cuda_cases)


def unavailable() -> str | None:
    """Why the pack cannot run here (None: it can)."""
    if importlib.util.find_spec("transformers") is None:
        return "transformers pack: transformers is not installed (bash scripts/setup.sh installs it)"
    version = importlib.metadata.version("transformers")
    (low, high), release = VERSIONS, tuple(int(part) for part in version.split(".")[:2])
    if not low <= release < high:
        return (f"transformers pack: transformers {version} is installed; the pack calls the processors of "
                f"{low[0]}.{low[1]} up to {high[0]}.0")
    return None


def pack() -> list[tuple[str, Backend]]:
    """The pack's (record, backend) pairs, as declared for the run's device; raises
    PackUnavailable without a transformers release in VERSIONS."""
    reason = unavailable()
    if reason is not None:
        raise PackUnavailable(reason)
    if os.environ.get("TRITON_INTERPRET") == "1":  # a CPU run (docs/packs.md: set before packs are called)
        return list(PACK)
    return [(kernel, _on_cuda(backend)) for kernel, backend in PACK]
