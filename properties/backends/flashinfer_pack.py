"""The FlashInfer pack (entry point `samplecheck.packs: flashinfer`): FlashInfer 0.7.4's sampling
APIs, adapted in samplecheck.backends.flashinfer, as backends of our records.

`PACK` lists the (record, Backend) pairs, each declared as data: CUDA only, the cases the API
implements (`accepts`), the convention it legitimately differs in (`semantics`), where it
allocates beyond the record's memory bound, and its findings (docs/findings.md) as the strict
xfails and skips of samplecheck.backends.flashinfer_findings. `PACK` needs no FlashInfer;
`pack()` returns it where FlashInfer can run and raises PackUnavailable where it cannot.
"""

import dataclasses
import importlib.util

import torch

from samplecheck.backends.flashinfer_findings import (EXACT_K_TIES, HALF_SOFTMAX, INF_ROW_MASKED,
                                                     INF_ROW_MASKED_OR_SHORT_NUCLEUS, MISALIGNED_SOFTMAX,
                                                     SHORT_NUCLEUS, UNREPEATABLE_HALF, contiguity_marks)
from samplecheck.inputs.pools import expand_pool
from samplecheck.registry.records import Backend, Mark, PackUnavailable, beyond_memory_bound

MODULE = "samplecheck.backends.flashinfer"
INSTALL_HINT = "flashinfer is not installed (pip install -e '.[flashinfer]' on a GPU machine)"
NO_CUDA = "FlashInfer's kernels run on CUDA only, and torch sees no CUDA device here"
TOPK_MODULE_HINT = ("FlashInfer's topk module (the top_k_first fast path) is neither prebuilt nor in the JIT "
                    "cache, and compiling it takes over 10 minutes: build it with scripts/build-flashinfer-topk.sh")
# The largest recipe scale whose logits span stays below the fp32 softmax underflow
# (~87): randn spans <= ~12 * scale, peaked adds 12 * scale, ties 3 * scale.
MAX_SCALE_WITHOUT_UNDERFLOW = 3.0


# --- case filters (Backend.accepts) -------------------------------------------------------

def _rows(case):
    batch = case.logits.batch
    vocab = case.logits.vocab
    k = [None] * batch if case.k is None else expand_pool(case.k, batch)
    p = [None] * batch if case.p is None else expand_pool(case.p, batch)
    return [(kk is not None and 0 < kk < vocab, pp is not None and pp < 1) for kk, pp in zip(k, p)]


def no_underflow(case) -> bool:
    return case.logits.scale <= MAX_SCALE_WITHOUT_UNDERFLOW


def top_k_only(case) -> bool:
    return case.p is None


def top_p_only(case) -> bool:
    return case.k is None


def no_filter(case) -> bool:
    return case.k is None and case.p is None


def not_both_in_a_row(case) -> bool:
    """No row with top-k and top-p both active: FlashInfer's "joint" order measures top-p
    on the full-vocab mass, ours on the renormalised top-k survivors; they agree on rows
    where at most one filter is active."""
    return not any(k_on and p_on for k_on, p_on in _rows(case))


def top_k_only_probs(case) -> bool:
    return top_k_only(case) and no_underflow(case)


def top_p_only_probs(case) -> bool:
    return top_p_only(case) and no_underflow(case)


# --- declarations ---------------------------------------------------------------------------

# The adapters whose top-k ranks the fp32 probabilities they pass to FlashInfer: distinct
# logits that our fp32 softmax rounds to one probability are ties there (declared semantics).
PROBABILITY_TOP_K = {"top_k_values": "fp32_probabilities"}
SEMANTICS = {function: PROBABILITY_TOP_K for function in (
    "top_k_renorm_probs", "top_k_top_p_sampling_from_probs_top_k_first", "top_k_top_p_sampling_from_probs_joint",
    "top_k_sampling_from_probs")}


def _backend(name: str, function: str, *, marks: tuple[Mark, ...] = (), capturable: bool = True,
             **fields) -> Backend:
    """A CUDA-only Backend for adapter `function` of samplecheck.backends.flashinfer.
    `capturable`: the adapter captures in a CUDA graph (every FlashInfer call does; an adapter
    that reads a value back to the host, as the bounded top-k path's `top_k_max` does, does
    not). Its declared semantics are `SEMANTICS[function]` unless given; every adapter declares a
    row holding NaN unspecified (FlashInfer gives such a row no contract and no signal from its
    logits APIs: docs/findings.md, issue 6's lead 5)."""
    fields.setdefault("semantics", {**SEMANTICS.get(function, {}), "nan_policy": "row_unspecified"})
    return Backend(name, f"{MODULE}:{function}", devices=("cuda",), marks=tuple(marks), capturable=capturable,
                   **fields)

def _sampler(name: str, function: str, **fields) -> Backend:
    """A sampling adapter: FlashInfer draws each row from the stream of its index in the batch
    (one seed per call), so a row's id follows its position: not batch invariant."""
    return _backend(name, function, batch_invariant=False, **fields)


# The renorm adapters pass FlashInfer torch.softmax's fp32 probabilities, whose bits follow the
# batch on CUDA (F16): a kept set at a boundary tie flips with them.
SOFTMAX_FIRST = False
OUT_OF_PLACE = beyond_memory_bound(
    "the FlashInfer adapters compute an out-of-place [B, V] result (and, for the renorm APIs, fp32 "
    "probabilities) and write it back: their memory is FlashInfer's, not this record's bound")
# The top_k_first call on FlashInfer's fast path; it needs the `topk` module (TOPK_MODULE_HINT).
BOUNDED = "flashinfer_logits_top_k_first_bounded"

PACK: tuple[tuple[str, Backend], ...] = (
    # Masking APIs, each on the cases it implements.
    ("top_k_top_p", _backend("flashinfer_top_k_mask_logits", "top_k_mask_logits", accepts=top_k_only,
                             marks=(OUT_OF_PLACE,) + contiguity_marks(distribution=True))),
    ("top_k_top_p", _backend("flashinfer_top_k_renorm_probs", "top_k_renorm_probs", accepts=top_k_only_probs,
                             marks=(OUT_OF_PLACE,) + INF_ROW_MASKED, batch_invariant=SOFTMAX_FIRST)),
    ("top_k_top_p", _backend("flashinfer_top_p_renorm_probs", "top_p_renorm_probs", accepts=top_p_only_probs,
                             marks=(OUT_OF_PLACE,) + SHORT_NUCLEUS + INF_ROW_MASKED_OR_SHORT_NUCLEUS,
                             batch_invariant=SOFTMAX_FIRST)),
    # Sampling APIs: F3 (contiguity), F4 (bf16/fp16 softmax), F8 (repeatability) and F11 (the
    # fast path's exact-k ties) as strict xfails, F7 (layout) as a skip.
    ("top_k_top_p_sample", _sampler("flashinfer_logits_top_k_first", "top_k_top_p_sampling_from_logits_top_k_first",
                                    marks=contiguity_marks(memory=True) + HALF_SOFTMAX)),
    # The bounded call reads the batch's largest k back to the host (`top_k_max`): not capturable.
    ("top_k_top_p_sample", _sampler(BOUNDED, "top_k_top_p_sampling_from_logits_top_k_first_bounded",
                                    marks=contiguity_marks(memory=True) + HALF_SOFTMAX + EXACT_K_TIES,
                                    capturable=False)),
    ("top_k_top_p_sample", _sampler("flashinfer_logits_joint", "top_k_top_p_sampling_from_logits_joint",
                                    accepts=not_both_in_a_row, marks=HALF_SOFTMAX + MISALIGNED_SOFTMAX)),
    ("top_k_top_p_sample", _sampler("flashinfer_probs_top_k_first", "top_k_top_p_sampling_from_probs_top_k_first",
                                    marks=UNREPEATABLE_HALF)),
    ("top_k_top_p_sample", _sampler("flashinfer_probs_joint", "top_k_top_p_sampling_from_probs_joint",
                                    accepts=not_both_in_a_row)),
    ("top_k_top_p_sample", _sampler("flashinfer_top_p_probs", "top_p_sampling_from_probs", accepts=top_p_only)),
    ("top_k_top_p_sample", _sampler("flashinfer_top_k_probs", "top_k_sampling_from_probs", accepts=top_k_only)),
    ("top_k_top_p_sample", _sampler("flashinfer_logits", "sampling_from_logits", accepts=no_filter,
                                    marks=contiguity_marks((torch.float32,)))),
    ("min_p_sample", _sampler("flashinfer_probs", "min_p_sampling_from_probs")),
    ("softmax", _backend("flashinfer", "softmax", marks=contiguity_marks((torch.float32,)),
                         batch_invariant=False)),  # its row's bits follow the batch (F16)
)


def topk_module_ready() -> bool:
    """Whether FlashInfer's `topk` JIT module loads without compiling (prebuilt or cached)."""
    from flashinfer.jit.topk import gen_topk_module

    spec = gen_topk_module()
    return spec.aot_path.exists() or spec.jit_library_path.exists()


def cuda_present() -> bool:
    """Whether torch sees a CUDA device (FlashInfer's kernels run on CUDA only)."""
    return torch.cuda.is_available()


def pack() -> list[tuple[str, Backend]]:
    """The pack's (record, backend) pairs, the fast-path backend skipped with TOPK_MODULE_HINT
    where the `topk` module is not built; raises PackUnavailable where flashinfer is not
    installed or torch sees no CUDA device."""
    if importlib.util.find_spec("flashinfer") is None:
        raise PackUnavailable(INSTALL_HINT)
    if not cuda_present():
        raise PackUnavailable(NO_CUDA)
    topk_skip = () if topk_module_ready() else (Mark("skip", TOPK_MODULE_HINT),)
    return [(kernel, dataclasses.replace(backend, marks=topk_skip + backend.marks) if backend.name == BOUNDED
             else backend) for kernel, backend in PACK]
