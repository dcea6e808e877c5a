"""Registry record for min-p masking (keep l >= max + log(min_p) per row, in place)."""

import torch

from samplecheck.families.errors import INF, NAN, dtype_message, every_other, floats, logits_errors, rejected, row_shape
from samplecheck.families.masking import (MaskingInfo, MinPCase, min_p_args, min_p_cases, min_p_distribution_cases,
                                        min_p_targets)
from samplecheck.inputs.off_encodings import MIN_P_OFF
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.oracles.min_p import min_p_reference
from samplecheck.registry.layouts import LAYOUTS
from samplecheck.registry.matrix import register
from samplecheck.registry.records import ALL_DTYPES, Oracle, RegressionExample, per_dtype, triton_and_torch

# The Triton kernel's launch paths (samplecheck.kernels.min_p.plan picks one by the call's
# sizes; tests/cover/test_launch_path_shapes.py checks these), each with a [batch, vocab] that
# takes it on each device: more rows than its row programs (rows looped), a row a program (a
# small vocabulary), a row split over programs (two blocks). A GPU's shapes have three rows or
# more, so that rows placed 2**31 elements apart have a row stride within int32
# (test_large_offsets_on_each_launch_path).
PATH_SHAPES = {
    "rows looped": {"cpu": (5, 8), "cuda": (1057, 8)},
    "a row a program": {"cpu": (2, 8), "cuda": (3, 8)},
    "rows split": {"cpu": (2, 8192), "cuda": (3, 8192)},
}

MIN_P_ERRORS = (
    logits_errors(min_p=floats([0.1, 0.1]))
    + rejected("min_p", ValueError, r"min_p must be in \[0, 1\]", {
        "negative min_p": floats([0.1, -0.01]), "min_p above 1": floats([1.5, 0.1]),
        "NaN min_p": floats([0.1, NAN]), "infinite min_p": floats([INF, 0.1])})
    + rejected("min_p", TypeError, dtype_message("min_p", "float32"), {
        "float64 min_p": floats([0.1, 0.1], torch.float64)})
    + rejected("min_p", ValueError, r"min_p must be contiguous", {"strided min_p": every_other([0.1, 0.5, 0.2, 0.5])})
    + rejected("min_p", ValueError, row_shape("min_p"), {"min_p of wrong length": floats([0.1])})
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
    # Two rows of 8193: each row split over several programs on either device (chunk maxima
    # folded into the threshold), a partial last chunk; fp16 and fp32 maxima that bf16 would
    # round, with thresholds among many entries.
    RegressionExample("split rows: 2 x 8193, chunk maxima",
                      MinPCase(LogitsRecipe(batch=2, vocab=8193, family="randn", scale=3.0, seed=8193), (0.05, 0.3)),
                      dtypes=(torch.float16, torch.float32), layouts=("contig",)),
    RegressionExample("full-size padded vocab (opt-125m 50272 -> 50304)",
                      MinPCase(OPT125M_PEAKED, (0.1, 0.0, 1e-6, 1.0, 0.05)),
                      dtypes=(torch.bfloat16, torch.float32), layouts=("padded64",)),
)

MIN_P = register(MaskingInfo(
    name="min_p",
    off_encodings=MIN_P_OFF,
    backends=triton_and_torch("samplecheck.kernels.min_p:apply_min_p", "samplecheck.kernels.min_p:apply_min_p_torch",
                              "the PyTorch fallback compares an fp32 upcast of the whole [B, V] logits (by design)",
                              torch_capturable=True,  # elementwise and amax only: no host sync
                              path_shapes=PATH_SHAPES),
    cases=min_p_cases, make_args=min_p_args, distribution_cases=min_p_distribution_cases,
    reference=Oracle(min_p_reference, tolerance="band"),
    # Threshold band (relative to |log(min_p)| + |threshold|) inside which an fp32 threshold
    # and the fp64 one may decide differently; see samplecheck.oracles.min_p. The threshold is
    # fp32 for every logits dtype, so the band does not depend on it.
    tolerance=per_dtype(2**-20),
    semantics={"space": "log: keep l >= max + log(min_p)", "boundary": "a token at the threshold is kept",
               "tie_policy": "keep_all_ties", "threshold_precision": "fp32 from the row max"},
    error_inputs=MIN_P_ERRORS,
    targets=min_p_targets,
    examples=MIN_P_REGRESSIONS,
))
