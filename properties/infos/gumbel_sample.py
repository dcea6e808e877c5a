"""Registry record for Gumbel-max sampling keyed by (seed, position, token id) (not in place)."""

import torch

from samplecheck.families.errors import (INF, NAN, dtype_message, floats, ids, logits_errors, rejected, row_shape,
                                         sampler_logits_errors)
from samplecheck.families.samplers import (INT64_MAX, INT64_MIN, GumbelCase, SamplerInfo, gumbel_args, gumbel_cases,
                                         gumbel_check, gumbel_distribution_cases, gumbel_memory, gumbel_sampling_law,
                                         gumbel_targets, sample_gumbel)
from samplecheck.inputs.off_encodings import TEMPERATURE_OFF
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.oracles.gumbel import gumbel_reference
from samplecheck.registry.layouts import LAYOUTS
from samplecheck.registry.matrix import register
from samplecheck.registry.records import ALL_DTYPES, Backend, Oracle, RegressionExample, per_dtype

VALID = {"seeds": ids([1, 2]), "positions": ids([0, 5]), "temperature": None}

# The Triton kernel's launch paths (samplecheck.kernels.gumbel.plan picks one by the call's
# sizes; tests/cover/test_launch_path_shapes.py checks these), each with a [batch, vocab] that
# takes it on each device: a row in one chunk, a row split over programs (two chunks). A GPU's
# shapes have three rows, so that rows placed 2**31 elements apart have a row stride within
# int32 (test_large_offsets_on_each_launch_path).
PATH_SHAPES = {"a row a chunk": {"cpu": (2, 8), "cuda": (3, 8)}, "rows split": {"cpu": (2, 16384), "cuda": (3, 16384)}}

GUMBEL_ERRORS = (
    logits_errors(**VALID)
    + sampler_logits_errors(**VALID)
    + rejected("seeds", TypeError, dtype_message("seeds", "int64"), {"int32 seeds": ids([1, 2], torch.int32)}, **VALID)
    + rejected("seeds", ValueError, row_shape("seeds"), {"seeds of wrong length": ids([1])}, **VALID)
    + rejected("seeds", TypeError, r"seeds is required: an int64 tensor of shape \[batch\]", {
        "missing seeds": lambda device: None}, **VALID)
    + rejected("positions", ValueError, r"positions must be >= 0", {"negative position": ids([3, -1])}, **VALID)
    + rejected("positions", TypeError, dtype_message("positions", "int64"), {"float positions": floats([0.0, 1.0])},
               **VALID)
    + rejected("positions", ValueError, row_shape("positions"), {"positions of wrong length": ids([0, 1, 2])}, **VALID)
    + rejected("temperature", ValueError, r"temperature must be finite and >= 0", {
        "negative temperature": floats([0.5, -0.1]), "NaN temperature": floats([NAN, 1.0]),
        "infinite temperature": floats([1.0, INF])}, **VALID)
    + rejected("temperature", TypeError, dtype_message("temperature", "float32"), {
        "float64 temperature": floats([1.0, 1.0], torch.float64)}, **VALID)
    + rejected("temperature", ValueError, row_shape("temperature"), {
        "temperature of wrong length": floats([1.0])}, **VALID)
)

# Full-size rows: opt-125m's vocab 50272 padded to 50304 (a strided view), batch 8, peaked
# rows; the CPU launch splits the vocab into 4 chunks, a GPU's into 7.
OPT125M_PEAKED = LogitsRecipe(batch=8, vocab=50272, family="peaked", scale=1.0, seed=50272)
GUMBEL_REGRESSIONS = (
    # Greedy rows on 4 tied levels take the lowest tied maximum (a highest-id tie-break or a
    # later-block-wins update fails), beside sampled and near-greedy rows.
    RegressionExample("edges: greedy ties, identity, near-greedy and plain T",
                      GumbelCase(LogitsRecipe(batch=8, vocab=1019, family="ties", scale=1.0, seed=21),
                                 (7, -7), (0, 3, 2**32), (0.0, 1.0, 1e-6, 0.7)),
                      dtypes=ALL_DTYPES, layouts=LAYOUTS),
    # One finite entry per row, most negative, at tiny T: l / T is far below -65504, so a
    # kernel that gives -inf entries a finite floor (plus noise) draws a -inf token.
    RegressionExample("edges: a single negative finite entry per row at tiny T",
                      GumbelCase(LogitsRecipe(batch=8, vocab=1019, family="randn", scale=3.0,
                                              neg_inf_fraction=1.0, seed=15),
                                 (1, 2, 3), (9,), (1e-5, 1e-30, 0.0, 1.0)),
                      dtypes=ALL_DTYPES, layouts=LAYOUTS),
    # Flat rows: the id is the argmax of the noise alone, so every hash word matters (seed
    # and position halves at the int64 and 2**32 edges), with V = 8193 ending in a
    # one-entry block.
    RegressionExample("flat rows: pure noise at the seed and position edges",
                      GumbelCase(LogitsRecipe(batch=4, vocab=8193, family="flat", scale=1.0, seed=3),
                                 (INT64_MIN, -1, INT64_MAX, 2**32), (2**32 - 1, 2**32, INT64_MAX, 0), None),
                      dtypes=(torch.float32, torch.bfloat16), layouts=("contig", "padded64")),
    RegressionExample("full-size padded vocab (opt-125m 50272 -> 50304)",
                      GumbelCase(OPT125M_PEAKED, (123, 456), (17, 0, 4096), (0.7, 0.0, 1.0, 1e-6, 2.0)),
                      dtypes=(torch.bfloat16, torch.float32), layouts=("padded64",)),
)


GUMBEL = register(SamplerInfo(
    name="gumbel_sample",
    off_encodings=TEMPERATURE_OFF,
    backends=(Backend("triton", "samplecheck.kernels.gumbel:gumbel_sample", knobs=("block_v", "splits"),
                      capturable=True, guard_flag=True, batch_invariant=True, path_shapes=PATH_SHAPES),),
    cases=gumbel_cases, make_args=gumbel_args, distribution_cases=gumbel_distribution_cases,
    reference=Oracle(gumbel_reference, tolerance="band"),
    check=gumbel_check,
    # Relative score band (times 1 + |g| + |s|) inside which fp32 noise may reorder two
    # tokens (samplecheck.oracles.gumbel: twice the fp32 error bound). The scores are fp32 for
    # every logits dtype, so the band does not depend on it; greedy rows are exact.
    tolerance=per_dtype(2**-19),
    semantics={"noise": "Gumbel-max, u = hash(seed, position, token id) on a 2**23-point grid, fp32 g",
               "batch_invariance": "the id depends only on the row's logits, T, seed and position",
               "greedy": "T == 0: lowest argmax, no noise", "tie_policy": "lowest id",
               "non_finite": "-inf and NaN never drawn; +inf drawn first (lowest id); no candidate: id 0",
               "truncation": "tokens more than 19.45 nats below the max of l / T are never drawn"},
    error_inputs=GUMBEL_ERRORS, examples=GUMBEL_REGRESSIONS,
    law=gumbel_sampling_law, sample=sample_gumbel, targets=gumbel_targets, extra_memory=gumbel_memory,
))
