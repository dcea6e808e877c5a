"""Registry record for min-p masking (keep l >= max + log(min_p) per row, in place)."""

import dataclasses
from dataclasses import dataclass

import torch
from hypothesis import strategies as st

from samplecheck.oracles.min_p import min_p_reference
from samplecheck.judging import checks
from samplecheck.judging.laws import masked_input_law
from samplecheck.inputs.layouts import LAYOUTS
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.harness.registry import ALL_DTYPES, Backend, Mark, ErrorInput, KernelInfo, RegressionExample, register, tensor_on, zeros_on
from samplecheck.inputs.strategies import Budget, expand_pool, logits_recipes

# Edges: off (0), tiny (1e-30, 1e-6: thresholds 69 and 14 below the max), 0.05, 0.1,
# 0.5, 0.99, and 1 (the maximum and its ties only, where the fp32 threshold is exact).
MIN_P_EDGES = (0.0, 1e-30, 1e-6, 0.05, 0.1, 0.5, 0.99, 1.0)
# min-p runs after temperature, so its input can be raw logits divided by T = 0.1 or 0.01:
# rows 10x or 100x wider than the recipes' scales, where exp(l) over- and underflows in
# fp32 (a probability-space kernel without max subtraction fails there).
TEMPERATURE_SCALED = (1.0, 1.0, 10.0, 100.0)
MAX_POOL = 4
SAMPLED_ROWS = 4  # tests/cover/test_distribution.py samples at most the first 4 rows


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
    pool = draw(st.lists(min_p_values(), min_size=1, max_size=MAX_POOL).map(tuple))
    return MinPCase(recipe, pool)


def min_p_distribution_cases(budget: Budget):
    """Cases for sampling tests: vocab <= 4096 (binnable), min-p on in a sampled row."""
    def masks_a_sampled_row(case):
        return any(p > 0 for p in expand_pool(case.min_p, min(case.logits.batch, SAMPLED_ROWS)))
    return min_p_cases(budget, max_vocab=4096).filter(masks_a_sampled_row)


def min_p_args(case: MinPCase, logits: torch.Tensor) -> dict:
    values = expand_pool(case.min_p, logits.size(0))
    return {"min_p": torch.tensor(values, dtype=torch.float32, device=logits.device)}


def min_p_ref(logits, semantics, tolerance, *, min_p):
    return min_p_reference(logits, min_p, band=tolerance)


def min_p_check(original, output, reference, what):
    checks.assert_masked_like(original, output, reference.kept, reference.ambiguous, what)


def min_p_targets(original, reference):
    """Nightly steering: how close an entry outside the ambiguity band comes to the threshold,
    as -log2 of the smallest |l - threshold| / (|log(min_p)| + |threshold|) (larger: closer;
    a backend with a wrong comparison or a too loose threshold fails there first)."""
    x = original.to(torch.float64)
    candidates = (reference.scale > 0) & torch.isfinite(x) & ~reference.ambiguous
    margin = (x - reference.threshold).abs() / reference.scale.clamp(min=1e-300)
    closest = margin[candidates]
    return {"threshold_closeness": float(-closest.min().clamp(min=1e-300).log2()) if closest.numel() else 0.0}


def _call(logits, min_p):
    """make(device) for an ErrorInput: each argument is built on the device."""
    return lambda device: ((logits(device),), {"min_p": min_p(device)})


_RANGE = r"min_p must be in \[0, 1\]"
MIN_P_ERRORS = (
    ErrorInput("1-D logits", _call(zeros_on(8), tensor_on([0.5], torch.float32)), ValueError, r"logits must be 2-D"),
    ErrorInput("float64 logits", _call(zeros_on(2, 8, dtype=torch.float64), tensor_on([0.1, 0.1], torch.float32)),
               TypeError, r"logits dtype must be one of float32, bfloat16, float16"),
    ErrorInput("column-strided logits", _call(lambda d: zeros_on(2, 16)(d)[:, ::2], tensor_on([0.1, 0.1], torch.float32)),
               ValueError, r"column stride 1"),
    ErrorInput("negative min_p", _call(zeros_on(2, 8), tensor_on([0.1, -0.01], torch.float32)), ValueError, _RANGE),
    ErrorInput("min_p above 1", _call(zeros_on(2, 8), tensor_on([1.5, 0.1], torch.float32)), ValueError, _RANGE),
    ErrorInput("NaN min_p", _call(zeros_on(2, 8), tensor_on([0.1, float("nan")], torch.float32)), ValueError, _RANGE),
    ErrorInput("infinite min_p", _call(zeros_on(2, 8), tensor_on([float("inf"), 0.1], torch.float32)), ValueError, _RANGE),
    ErrorInput("float64 min_p", _call(zeros_on(2, 8), tensor_on([0.1, 0.1], torch.float64)),
               TypeError, r"min_p dtype must be one of float32"),
    ErrorInput("strided min_p", _call(zeros_on(2, 8), lambda d: tensor_on([0.1, 0.5, 0.2, 0.5], torch.float32)(d)[::2]),
               ValueError, r"min_p must be contiguous"),
    ErrorInput("min_p of wrong length", _call(zeros_on(2, 8), tensor_on([0.1], torch.float32)),
               ValueError, r"min_p must have shape \[batch\] = \[2\]"),
)


# Full-size rows: opt-125m's vocab 50272 padded to 50304 (a strided view), batch 8, peaked
# rows (one dominant token), with off / tiny / typical / max-only rows.
OPT125M_PEAKED = LogitsRecipe(batch=8, vocab=50272, family="peaked", scale=1.0, seed=50272)
MIN_P_REGRESSIONS = (
    # The edges in one small batch, in every dtype and layout: on rows of 4 tied levels,
    # min_p = 1 keeps exactly the tied maxima (a `<=` mask drops them all), 0 is off, 0.3
    # keeps the top two levels, 1e-6 keeps every level.
    RegressionExample("edges: min_p 1 on tied maxima, off, 0.3, tiny",
                      MinPCase(LogitsRecipe(batch=4, vocab=1019, family="ties", scale=1.0, seed=11),
                               (1.0, 0.0, 0.3, 1e-6)),
                      dtypes=ALL_DTYPES, layouts=LAYOUTS),
    # One finite entry per row (-inf elsewhere), most of them negative: the row max is
    # negative and the vocab is not a multiple of the block, so a max pass that pads with 0
    # instead of -inf raises the threshold above the only finite entry.
    RegressionExample("edges: a single negative finite entry per row",
                      MinPCase(LogitsRecipe(batch=8, vocab=1019, family="randn", scale=3.0,
                                            neg_inf_fraction=1.0, seed=15),
                               (0.5, 0.9, 1e-6, 1.0)),
                      dtypes=ALL_DTYPES, layouts=LAYOUTS),
    RegressionExample("full-size padded vocab (opt-125m 50272 -> 50304)",
                      MinPCase(OPT125M_PEAKED, (0.1, 0.0, 1e-6, 1.0, 0.05)),
                      dtypes=(torch.bfloat16, torch.float32), layouts=("padded64",)),
)

MIN_P = register(KernelInfo(
    name="min_p",
    backends=(
        Backend("triton", "samplecheck.kernels.min_p:apply_min_p"),
        Backend("torch", "samplecheck.kernels.min_p:apply_min_p_torch", marks=(
            Mark("skip", "the PyTorch fallback compares an fp32 upcast of the whole [B, V] logits (by design)",
                 test="test_memory_bound"),)),
    ),
    cases=min_p_cases,
    make_args=min_p_args,
    reference=min_p_ref,
    check=min_p_check,
    dtypes=ALL_DTYPES,
    # Threshold band (relative to |log(min_p)| + |threshold|) inside which an fp32 threshold
    # and the fp64 one may decide differently; see samplecheck.oracles.min_p. The threshold is fp32 for
    # every logits dtype, so the band does not depend on it.
    tolerance={torch.float32: 2**-20, torch.bfloat16: 2**-20, torch.float16: 2**-20},
    semantics={"space": "log: keep l >= max + log(min_p)", "boundary": "a token at the threshold is kept",
               "tie_policy": "keep_all_ties", "threshold_precision": "fp32 from the row max"},
    error_inputs=MIN_P_ERRORS,
    law=masked_input_law,
    targets=min_p_targets,
    distribution_cases=min_p_distribution_cases,
    examples=MIN_P_REGRESSIONS,
))
