"""The masking family (top_k_top_p, min_p): in place, every entry kept bitwise or set to
-inf, judged against the oracle's kept set with its ambiguity band; the law is the softmax
of the input over the kept entries. Also the family's cases: per-row pools of k, p and
min_p over the shared logits recipes, and the nightly targets of each kernel.
"""

import dataclasses
from dataclasses import dataclass
from typing import Callable

import torch
from hypothesis import strategies as st

from samplecheck.families.rows import row_args
from samplecheck.inputs.pools import pools, row_pools, sampled_rows
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.inputs.strategies import Budget, logits_recipes, top_k_values, top_p_values
from samplecheck.judging.laws import masked_input_law
from samplecheck.registry import checks
from samplecheck.registry.records import KernelInfo

DISTRIBUTION_MAX_VOCAB = 4096  # sampling tests bin the whole vocab


def check_masked(original, output, reference, what):
    """Every entry bitwise the input or -inf: unchanged exactly where the oracle keeps it,
    either at its ambiguous entries."""
    checks.assert_masked_like(original, output, reference.kept, reference.ambiguous, what)


@dataclass(frozen=True, kw_only=True)
class MaskingInfo(KernelInfo):
    check: Callable = check_masked
    law: Callable | None = masked_input_law
    same_output: Callable | None = checks.assert_same_masks  # bitwise, reported row by row


# --- top-k then top-p ------------------------------------------------------------------------

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
    """Cases for sampling tests: top-p or top-k on, vocab small enough to bin."""
    return top_k_top_p_cases(budget, max_vocab=DISTRIBUTION_MAX_VOCAB).filter(
        lambda c: c.k is not None or c.p is not None)


top_k_top_p_args = row_args(k=("k", torch.int64), p=("p", torch.float32))


def top_k_top_p_targets(original, reference):
    """Boundary ties: the most entries of one row tied with that row's smallest kept value."""
    finite_kept = reference.kept & torch.isfinite(original)
    lowest = original.masked_fill(~finite_kept, float("inf")).min(dim=-1, keepdim=True).values
    ties = ((original == lowest) & finite_kept).sum(dim=-1)
    return {"boundary_ties": float(ties.max()) if ties.numel() else 0.0}


# --- min-p -----------------------------------------------------------------------------------

# Edges: off (0), tiny (1e-30, 1e-6: thresholds 69 and 14 below the max), 0.05, 0.1,
# 0.5, 0.99, and 1 (the maximum and its ties only, where the fp32 threshold is exact).
MIN_P_EDGES = (0.0, 1e-30, 1e-6, 0.05, 0.1, 0.5, 0.99, 1.0)
# min-p runs after temperature, so its input can be raw logits divided by T = 0.1 or 0.01:
# rows 10x or 100x wider than the recipes' scales, where exp(l) over- and underflows in
# fp32 (a probability-space kernel without max subtraction fails there).
TEMPERATURE_SCALED = (1.0, 1.0, 10.0, 100.0)


@dataclass(frozen=True)
class MinPCase:
    """Logits recipe plus a per-row pool of min_p values (row r takes pool[r % len(pool)])."""

    logits: LogitsRecipe
    min_p: tuple[float, ...]


def min_p_values() -> st.SearchStrategy[float]:
    """min_p per row, edges first, then any float32 in [0, 1]."""
    return st.one_of(st.sampled_from(MIN_P_EDGES), st.floats(0.0, 1.0, width=32))


@st.composite
def min_p_cases(draw, budget: Budget, max_vocab: int | None = None) -> MinPCase:
    recipe = draw(logits_recipes(budget, max_vocab))
    widen = draw(st.sampled_from(TEMPERATURE_SCALED))
    if widen != 1.0:
        recipe = dataclasses.replace(recipe, scale=recipe.scale * widen)
    return MinPCase(recipe, draw(pools(min_p_values())))


def min_p_distribution_cases(budget: Budget):
    """Cases for sampling tests: binnable vocab, min-p on in a sampled row."""
    return min_p_cases(budget, max_vocab=DISTRIBUTION_MAX_VOCAB).filter(
        lambda case: any(p > 0 for p in sampled_rows(case.min_p, case.logits.batch)))


min_p_args = row_args(min_p=("min_p", torch.float32))


def min_p_targets(original, reference):
    """Nightly steering: how close an entry outside the ambiguity band comes to the threshold,
    as -log2 of the smallest |l - threshold| / (|log(min_p)| + |threshold|) (larger: closer;
    a backend with a wrong comparison or a too loose threshold fails there first)."""
    x = original.to(torch.float64)
    candidates = (reference.scale > 0) & torch.isfinite(x) & ~reference.ambiguous
    margin = (x - reference.threshold).abs() / reference.scale.clamp(min=1e-300)
    closest = margin[candidates]
    return {"threshold_closeness": float(-closest.min().clamp(min=1e-300).log2()) if closest.numel() else 0.0}
