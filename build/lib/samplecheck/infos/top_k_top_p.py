"""Registry record for top-k then top-p masking."""

from dataclasses import dataclass

import torch
from hypothesis import strategies as st

from samplecheck.oracles.top_k_top_p import top_k_top_p_reference
from samplecheck.judging import checks
from samplecheck.backends.flashinfer import (SHORT_NUCLEUS, backend as flashinfer_backend, contiguity_marks, top_k_only,
                                           top_k_only_probs, top_p_only_probs)
from samplecheck.judging.laws import masked_input_law
from samplecheck.inputs.layouts import LAYOUTS
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.harness.registry import ALL_DTYPES, Backend, Mark, ErrorInput, KernelInfo, RegressionExample, register, tensor_on, zeros_on
from samplecheck.inputs.strategies import Budget, expand_pool, logits_recipes, row_pools, top_k_values, top_p_values
from samplecheck.kernels.top_k_top_p import LAUNCH_CONFIG


@dataclass(frozen=True)
class TopKTopPCase:
    """Logits recipe plus per-row pools for k and p (None: the parameter is absent)."""

    logits: LogitsRecipe
    k: tuple[int, ...] | None
    p: tuple[float, ...] | None


@st.composite
def top_k_top_p_cases(draw, budget: Budget, max_vocab: int | None = None) -> TopKTopPCase:
    recipe = draw(logits_recipes(budget, max_vocab))
    k = draw(row_pools(top_k_values(recipe.vocab)))
    p = draw(row_pools(top_p_values()))
    return TopKTopPCase(recipe, k, p)


def top_k_top_p_distribution_cases(budget: Budget):
    """Cases for sampling tests: top-p or top-k on, vocab small enough to bin (<= 4096)."""
    return top_k_top_p_cases(budget, max_vocab=4096).filter(lambda c: c.k is not None or c.p is not None)


def top_k_top_p_args(case: TopKTopPCase, logits: torch.Tensor) -> dict:
    batch = logits.size(0)
    k = None if case.k is None else torch.tensor(expand_pool(case.k, batch), dtype=torch.int64, device=logits.device)
    p = None if case.p is None else torch.tensor(expand_pool(case.p, batch), dtype=torch.float32, device=logits.device)
    return {"k": k, "p": p}


def top_k_top_p_ref(logits, semantics, tolerance, *, k, p):
    return top_k_top_p_reference(logits, k, p, tie_policy=semantics["tie_policy"], band=tolerance)


def top_k_top_p_check(original, output, reference, what):
    checks.assert_masked_like(original, output, reference.kept, reference.ambiguous, what)


def top_k_top_p_targets(original, reference):
    """Boundary ties: the most entries of one row tied with that row's smallest kept value."""
    finite_kept = reference.kept & torch.isfinite(original)
    lowest = original.masked_fill(~finite_kept, float("inf")).min(dim=-1, keepdim=True).values
    ties = ((original == lowest) & finite_kept).sum(dim=-1)
    return {"boundary_ties": float(ties.max()) if ties.numel() else 0.0}


def _call(logits, k=None, p=None):
    """make(device) for an ErrorInput: each argument is built on the device."""
    return lambda device: ((logits(device),), {"k": k and k(device), "p": p and p(device)})


TOP_K_TOP_P_ERRORS = (
    ErrorInput("1-D logits", _call(zeros_on(8), p=tensor_on([0.5], torch.float32)), ValueError, r"logits must be 2-D"),
    ErrorInput("float64 logits", _call(zeros_on(2, 8, dtype=torch.float64), k=tensor_on([1, 1], torch.int64)),
               TypeError, r"logits dtype must be one of float32, bfloat16, float16"),
    ErrorInput("column-strided logits", _call(lambda d: zeros_on(2, 16)(d)[:, ::2], k=tensor_on([1, 1], torch.int64)),
               ValueError, r"column stride 1"),
    ErrorInput("k below -1", _call(zeros_on(2, 8), k=tensor_on([3, -2], torch.int64)),
               ValueError, r"k must be -1 or 0 \(top-k off\) or >= 1"),
    ErrorInput("float k", _call(zeros_on(2, 8), k=tensor_on([1.0, 2.0], torch.float32)),
               TypeError, r"k dtype must be one of int32, int64"),
    ErrorInput("k of wrong length", _call(zeros_on(2, 8), k=tensor_on([1, 2, 3], torch.int64)),
               ValueError, r"k must have shape \[batch\] = \[2\]"),
    ErrorInput("p = 0", _call(zeros_on(2, 8), p=tensor_on([0.5, 0.0], torch.float32)), ValueError, r"p must be in \(0, 1\]"),
    ErrorInput("p > 1", _call(zeros_on(2, 8), p=tensor_on([1.5, 0.5], torch.float32)), ValueError, r"p must be in \(0, 1\]"),
    ErrorInput("NaN p", _call(zeros_on(2, 8), p=tensor_on([float("nan"), 0.5], torch.float32)),
               ValueError, r"p must be in \(0, 1\]"),
    ErrorInput("float64 p", _call(zeros_on(2, 8), p=tensor_on([0.5, 0.5], torch.float64)),
               TypeError, r"p dtype must be one of float32"),
)


# vLLM PR #48641's regression: opt-125m's vocab 50272 padded to 50304 (a strided view),
# batch 8, bf16 and fp32, several k/p combinations.
OPT125M = LogitsRecipe(batch=8, vocab=50272, family="randn", scale=1.0, seed=48641)
SEED_REGRESSIONS = tuple(
    RegressionExample("vllm#48641 opt-125m padded vocab", TopKTopPCase(OPT125M, k, p),
                      dtypes=(torch.bfloat16, torch.float32), layouts=("padded64",))
    for k, p in [((50,), None), (None, (0.9,)), ((50,), (0.9,)), ((1, 0, 50272, 10), (0.5, 1.0, 0.99))]
)
# Nearly flat rows at V = 32000, in the H200 gate's failing FlashInfer cases (F4, F6).
FLAT_ROWS_32000 = LogitsRecipe(batch=7, vocab=32000, family="randn", scale=0.1, seed=1)
# Finding F6 pinned for every profile: with p off (passed to FlashInfer as 1.0) and V >= 2048,
# its radix top-p zeroes the smallest probabilities of these rows (33 ids in row 1); the
# case the gate profile found on an H200 (2026-11-30).
P_OFF_FLAT_ROWS = RegressionExample("F6: p off on nearly flat rows, V = 32000", TopKTopPCase(FLAT_ROWS_32000, None, None),
                                    dtypes=ALL_DTYPES, layouts=LAYOUTS)


def top_k_top_p_scratch(logits, args):
    """The Triton kernel's per-call candidate scratch: [B, CAP] fp32."""
    return logits.size(0) * LAUNCH_CONFIG[logits.device.type]["CAP"] * 4


FLASHINFER_OUT_OF_PLACE = Mark(
    "skip", "the FlashInfer adapters compute an out-of-place [B, V] result (and, for the renorm APIs, fp32 "
    "probabilities) and write it back: their memory is FlashInfer's, not this record's bound",
    test="test_memory_bound")

# FlashInfer's masking APIs (samplecheck.backends.flashinfer), each on the cases it implements.
FLASHINFER_MASKING = (
    flashinfer_backend("flashinfer_top_k_mask_logits", "top_k_mask_logits", accepts=top_k_only,
                       marks=(FLASHINFER_OUT_OF_PLACE,) + contiguity_marks(distribution=True)),
    flashinfer_backend("flashinfer_top_k_renorm_probs", "top_k_renorm_probs", accepts=top_k_only_probs,
                       marks=(FLASHINFER_OUT_OF_PLACE,)),
    flashinfer_backend("flashinfer_top_p_renorm_probs", "top_p_renorm_probs", accepts=top_p_only_probs,
                       marks=(FLASHINFER_OUT_OF_PLACE,) + SHORT_NUCLEUS),
)

TOP_K_TOP_P = register(KernelInfo(
    name="top_k_top_p",
    backends=(
        Backend("triton", "samplecheck.kernels.top_k_top_p:apply_top_k_top_p"),
        Backend("torch", "samplecheck.kernels.top_k_top_p_torch:apply_top_k_top_p_torch", marks=(
            Mark("skip", "the PyTorch fallback sorts full rows: O(B * V) values, indices and fp32 "
                 "probabilities (by design)", test="test_memory_bound"),)),
    ) + FLASHINFER_MASKING,
    cases=top_k_top_p_cases,
    make_args=top_k_top_p_args,
    reference=top_k_top_p_ref,
    check=top_k_top_p_check,
    dtypes=ALL_DTYPES,
    # Top-p mass band (fraction of the survivors' mass) inside which fp32 and fp64 may
    # decide differently; top-k compares input values and has no band.
    tolerance={torch.float32: 1e-5, torch.bfloat16: 1e-5, torch.float16: 1e-5},
    semantics={"tie_policy": "keep_all_ties", "top_p_mass": "renormalised after top-k"},
    error_inputs=TOP_K_TOP_P_ERRORS,
    law=masked_input_law,
    distribution_cases=top_k_top_p_distribution_cases,
    examples=SEED_REGRESSIONS + (P_OFF_FLAT_ROWS,),
    targets=top_k_top_p_targets,
    extra_memory=top_k_top_p_scratch,
))
