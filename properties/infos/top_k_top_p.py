"""Registry record for top-k then top-p masking (in place)."""

import torch

from samplecheck.families.errors import NAN, dtype_message, floats, ids, logits_errors, rejected, row_shape
from samplecheck.families.masking import (MaskingInfo, TopKTopPCase, top_k_top_p_args, top_k_top_p_cases,
                                        top_k_top_p_distribution_cases, top_k_top_p_targets)
from samplecheck.inputs.off_encodings import TOP_K_TOP_P_OFF
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.kernels.runtime import device_kind
from samplecheck.kernels.top_k_top_p import scratch_bytes
from samplecheck.oracles.top_k_top_p import top_k_top_p_reference
from samplecheck.registry import catalog
from samplecheck.registry.layouts import LAYOUTS
from samplecheck.registry.matrix import register
from samplecheck.registry.records import ALL_DTYPES, Oracle, RegressionExample, triton_and_torch

OFF = {"k": None, "p": None}  # each error input passes both, the one it tests set
TOP_K_TOP_P_ERRORS = (
    logits_errors(k=ids([1, 1]), p=None)
    + rejected("k", ValueError, r"k must be -1 or 0 \(top-k off\) or >= 1", {"k below -1": ids([3, -2])}, **OFF)
    + rejected("k", TypeError, dtype_message("k", "int32, int64"), {"float k": floats([1.0, 2.0])}, **OFF)
    + rejected("k", ValueError, row_shape("k"), {"k of wrong length": ids([1, 2, 3])}, **OFF)
    + rejected("p", ValueError, r"p must be in \(0, 1\]", {
        "p = 0": floats([0.5, 0.0]), "p > 1": floats([1.5, 0.5]), "NaN p": floats([NAN, 0.5])}, **OFF)
    + rejected("p", TypeError, dtype_message("p", "float32"), {"float64 p": floats([0.5, 0.5], torch.float64)}, **OFF)
)

# The Triton kernel's launch paths (samplecheck.kernels.top_k_top_p.apply_top_k_top_p picks one by
# the call's sizes and which of k and p it has; tests/cover/test_launch_path_shapes.py checks
# these), each with a [batch, vocab] that takes it on each device given its PATH_PARAMETERS: the
# one-program kernel past every other path's rows, the chunk path at its most rows and two
# chunks (k, with or without p), the k-split path at its fewest rows and two chunks (k alone),
# the top-p split path at its most rows and two chunks or more (p alone).
PATH_SHAPES = {
    "one program": {"cpu": (10, 8), "cuda": (129, 8)},
    "chunks": {"cpu": (4, 512), "cuda": (32, 8192)},
    "k split": {"cpu": (5, 512), "cuda": (33, 16384)},
    "top-p split": {"cpu": (2, 256), "cuda": (32, 65536)},
}
# The parameters each path's call is given at its shape (Backend.path_parameters): k (below every
# shape's vocabulary and the chunk path's K_MAX) and p, or one of them alone. Row r takes entry
# r % 4 of each pool: p is off (1) in rows 0, 4, ..., rows a path must leave to top-k or
# untouched beside binding rows; k binds in every row, so every shape's last row (the one
# test_large_offsets_on_each_launch_path places past 2**31) binds (the top-p split path's: p).
PATH_K, PATH_P = (2, 5, 3, 7), (1.0, 0.5, 0.9, 0.75)
PATH_PARAMETERS = {
    "one program": {"k": PATH_K, "p": PATH_P},
    "chunks": {"k": PATH_K, "p": PATH_P},
    "k split": {"k": PATH_K, "p": None},
    "top-p split": {"k": None, "p": PATH_P},
}
# vLLM PR #48641's regression: opt-125m's vocab 50272 padded to 50304 (a strided view),
# batch 8, bf16 and fp32, several k/p combinations.
OPT125M = LogitsRecipe(batch=8, vocab=50272, family="randn", scale=1.0, seed=48641)
SEED_REGRESSIONS = tuple(
    RegressionExample("vllm#48641 opt-125m padded vocab", TopKTopPCase(OPT125M, k, p),
                      dtypes=(torch.bfloat16, torch.float32), layouts=("padded64",))
    for k, p in [((50,), None), (None, (0.9,)), ((50,), (0.9,)), ((1, 0, 50272, 10), (0.5, 1.0, 0.99))]
)
# Top-k alone at small k on a small batch, the regime our kernels split over chunk programs
# (`samplecheck.kernels.top_k_chunks`), several chunks a row, every property (edge values too).
# Sized for the CPU's launch config (256 columns a chunk); `GPU_CHUNK_REGIME` below for a GPU's.
SMALL_K_ALONE = RegressionExample("top-k alone, small k, small batch",
                                  TopKTopPCase(LogitsRecipe(batch=3, vocab=1500, family="randn", scale=2.0, seed=5),
                                               (1, 5, 32), None),
                                  dtypes=ALL_DTYPES, layouts=("contig", "padded64"),
                                  tests=catalog.EXACT_TESTS + (catalog.EDGE_VALUES,))
# Top-k + top-p at small k on a small batch, the same regime with p: randn rows over several
# chunks, and 4-level rows of one chunk whose k-th value is tied far past k: the survivors'
# mass counts every tie, not only the k selected, and p falls where that decides the cut.
SMALL_K_WITH_P = (
    RegressionExample("top-k + top-p, small k, small batch",
                      TopKTopPCase(LogitsRecipe(batch=3, vocab=1500, family="randn", scale=2.0, seed=6),
                                   (2, 5, 32), (0.5, 0.9, 0.99)),
                      dtypes=ALL_DTYPES, layouts=("contig", "padded64"),
                      tests=catalog.EXACT_TESTS + (catalog.EDGE_VALUES,)),
    RegressionExample("top-k + top-p, k-th value tied past k",
                      TopKTopPCase(LogitsRecipe(batch=4, vocab=64, family="ties", scale=0.25, seed=7),
                                   (20,), (0.6, 0.65)),
                      dtypes=ALL_DTYPES, layouts=("contig",), tests=catalog.EXACT_TESTS),
)
# The same regimes at a GPU's chunk sizes (`CHUNKS_CONFIG["cuda"]`: 4096 columns a chunk, from
# 8192 columns, at most 8 rows): 3 chunks a row, k from 2 to 50 and p from 0.5 to 0.95 beside
# each other. The tied rows are sparse-topped level rows: level 2 ties about 140 entries, 60 in
# each full chunk, below about 20 above it, and p lies between that level's share of the mass
# with all its ties and with the listed ones alone. On the CPU they take the one-program path;
# edge rows go in only where the device's budget holds them.
GPU_CHUNKS = LogitsRecipe(batch=8, vocab=9000, family="randn", scale=3.0, seed=6)
GPU_KS = (2, 5, 32, 12, 20, 8, 50, 3)
GPU_CHUNK_REGIME = (
    RegressionExample("top-k alone, small k, a GPU's chunks", TopKTopPCase(GPU_CHUNKS, GPU_KS, None),
                      dtypes=ALL_DTYPES, layouts=("contig", "padded64"),
                      tests=catalog.EXACT_TESTS + (catalog.EDGE_VALUES,)),
    RegressionExample("top-k + top-p, small k, a GPU's chunks",
                      TopKTopPCase(GPU_CHUNKS, GPU_KS, (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.75, 0.85)),
                      dtypes=ALL_DTYPES, layouts=("contig", "padded64"),
                      tests=catalog.EXACT_TESTS + (catalog.EDGE_VALUES,)),
    RegressionExample("top-k + top-p, k-th value tied past k, a GPU's chunks",
                      TopKTopPCase(LogitsRecipe(batch=8, vocab=9000, family="levels", scale=1.0, seed=8),
                                   (40,), (0.38, 0.42, 0.46, 0.4)),
                      dtypes=ALL_DTYPES, layouts=("contig",), tests=catalog.EXACT_TESTS),
)
# Top-k alone on a batch the k-split path takes (`samplecheck.kernels.top_k_split`: on the CPU 5-9
# rows, on a GPU 33-128 rows from 8192 columns), k from 2 to 100 beside each other: brackets of
# tens of candidates, and on integer levels brackets past the scratch (the CPU's 32 entries)
# whose whole-row search ends on a tied k-th value. Sized for the CPU's launch config (256
# columns a chunk) and a GPU's (8192); on the other device each takes another path.
K_SPLIT_REGIME = (
    RegressionExample("top-k alone, a batch the k-split path takes",
                      TopKTopPCase(LogitsRecipe(batch=6, vocab=1500, family="randn", scale=2.0, seed=9),
                                   (12, 14, 10, 20, 16, 30), None),
                      dtypes=ALL_DTYPES, layouts=("contig", "padded64")),
    RegressionExample("top-k alone, a k-split batch of tied levels",
                      TopKTopPCase(LogitsRecipe(batch=6, vocab=1500, family="levels", scale=1.0, seed=10),
                                   (12, 40, 7, 100, 30, 3), None),
                      dtypes=ALL_DTYPES, layouts=("contig",), tests=(catalog.ORACLE_EQUIVALENCE,)),
    RegressionExample("top-k alone, a GPU's k-split batch",
                      TopKTopPCase(LogitsRecipe(batch=40, vocab=20000, family="randn", scale=2.0, seed=9),
                                   (50, 2, 100, 12, 30, 7, 64, 20) * 5, None),
                      dtypes=(torch.bfloat16,), layouts=("contig",), tests=(catalog.ORACLE_EQUIVALENCE,)),
)
# Flat rows of a block or more with top-k and top-p, past the chunk path's batch: every lane
# maximum is the row max, so the one-program search's top-k bound is the cut itself, and its
# candidate pass, which drops what lies below the bound, must keep what lies at it.
FLAT_ROWS_AT_THE_BOUND = RegressionExample("top-k + top-p on flat rows, the bound at the cut",
                                           TopKTopPCase(LogitsRecipe(batch=5, vocab=4096, family="flat"),
                                                        (1, 50, 7, 2, 100), (0.9, 0.5, 0.99, 0.3, 1.0)),
                                           dtypes=(torch.float32,), layouts=("contig",),
                                           tests=(catalog.ORACLE_EQUIVALENCE,))
# Top-k alone on rows whose entries above -inf lie in a few runs of adjacent columns (an
# allowed-token list of id ranges): fewer lanes of adjacent columns hold an entry than there are
# entries, so the lane maxima do not hold the k-th largest entry for every k the entries do; k
# from 20 to 64 is within the 64 entries, 100 past them (every entry above -inf is kept). Ten
# rows: the one-program path on either device (the CPU's k-split path takes at most 9 rows;
# a GPU's chunk and k-split paths take no row of 3000 columns).
ROWS_OF_RUNS = RegressionExample("top-k alone, entries above -inf in runs of adjacent columns",
                                 TopKTopPCase(LogitsRecipe(batch=10, vocab=3000, family="runs", scale=2.0, seed=12),
                                              (50, 60, 20, 64, 100, 30, 40, 55, 25, 45), None),
                                 dtypes=(torch.float32,), layouts=("contig",), tests=(catalog.ORACLE_EQUIVALENCE,))
# Top-k + top-p where the top-k stage's bracket overflows the scratch (k past a CPU's CAP of
# 256, past a GPU's LANES of 512) and is narrowed below the row's max, so its candidates list
# only part of what the top-p cut may mask; with an +inf entry at the max (the fixed edge rows)
# that cut is the max itself. One-program path on either device.
NARROWED_TOP_K_THEN_TOP_P = RegressionExample(
    "top-k + top-p, a narrowed top-k bracket",
    TopKTopPCase(LogitsRecipe(batch=5, vocab=3000, family="randn", scale=2.0, seed=11), (600, 1200, 2000, 700, 300),
                 (0.9, 0.8, 0.95, 0.5, 0.99)),
    dtypes=(torch.float32,), layouts=("contig",), tests=(catalog.EDGE_VALUES,))
# Top-p alone on a small batch, the regime split over several programs a row
# (`samplecheck.kernels.top_k_top_p_split`: on the CPU from 2 rows), with candidates enough for
# every rank program of a row.
TOP_P_ALONE_SMALL_BATCH = RegressionExample("top-p alone, small batch",
                                            TopKTopPCase(LogitsRecipe(batch=2, vocab=600, family="randn", scale=1.0,
                                                                      seed=3), None, (0.8, 0.95)),
                                            dtypes=ALL_DTYPES, layouts=("contig", "padded64"))
# The same regime with rows wide enough that the search's first step (pivots from the sample)
# leaves more entries in its bracket than the scratch holds (on the CPU: 65-230 against 64), so
# the split path takes its second step.
TOP_P_ALONE_SECOND_STEP = RegressionExample("top-p alone, small batch, a second search step",
                                            TopKTopPCase(LogitsRecipe(batch=2, vocab=2000, family="randn", scale=1.0,
                                                                      seed=2000), None, (0.9, 0.5)),
                                            dtypes=(torch.float32, torch.bfloat16), layouts=("contig",))
# Nearly flat rows at V = 32000, in the H200 gate's failing FlashInfer cases (F4, F6).
FLAT_ROWS_32000 = LogitsRecipe(batch=7, vocab=32000, family="randn", scale=0.1, seed=1)
# Finding F6 pinned for every profile: with p off (passed to FlashInfer as 1.0) and V >= 2048,
# its radix top-p zeroes the smallest probabilities of these rows (33 ids in row 1); the
# case the gate profile found on an H200 (2026-11-30).
P_OFF_FLAT_ROWS = RegressionExample("F6: p off on nearly flat rows, V = 32000",
                                    TopKTopPCase(FLAT_ROWS_32000, None, None), dtypes=ALL_DTYPES, layouts=LAYOUTS)
# F6 in the off-encoding property: the H200 gate's cases (2026-12-01, run 19) in which rows with
# p = 1 lost their smallest probabilities (row 0's p is set to 1 there as well). Our kernels
# passed the same cases there; the interpreter would take minutes on them, so only the
# FlashInfer pack's backend they pin replays them (by name: inert where the pack is not plugged).
P_ONE_BESIDE_TOP_P = tuple(
    RegressionExample(f"F6: p = 1 rows beside top-p rows, V = {recipe.vocab}", TopKTopPCase(recipe, None, p),
                      dtypes=(dtype,), layouts=("contig",), tests=(catalog.OFF_ENCODINGS,),
                      backends=("flashinfer_top_p_renorm_probs",))
    for dtype, recipe, p in (
        (torch.float32, LogitsRecipe(batch=700, vocab=11652, family="randn", scale=1.0, seed=799),
         (1.0, 0.04789612404351583, 0.2284732343196399, 1e-06)),
        (torch.bfloat16, LogitsRecipe(batch=7, vocab=202048, family="randn", scale=3.0, seed=704),
         (0.4180338112394708, 0.8822142203493566, 1.0, 0.673935326741208)),
        (torch.float16, LogitsRecipe(batch=89, vocab=65536, family="peaked", scale=0.1, seed=7724),
         (1e-06, 1.0, 0.99, 1.0))))

# Finding V7 (the vLLM pack): vLLM's Triton top-p alone keeps every id of these rows (one logit
# about 128 above fifteen of scale 10; CPU interpreter and H200 alike, 2026-12-01); replayed for
# that pack's backend alone (by name: inert where the pack is not plugged).
DOMINANT_ROWS_17 = RegressionExample("V7: top-p alone on rows with one dominant logit, V = 17",
                                     TopKTopPCase(LogitsRecipe(batch=7, vocab=17, family="peaked", scale=10.0, seed=0),
                                                  None, (0.5,)),
                                     dtypes=(torch.float32,), layouts=LAYOUTS,
                                     tests=(catalog.ORACLE_EQUIVALENCE, catalog.OFF_ENCODINGS),
                                     backends=("vllm_v1_triton",))


def top_k_top_p_scratch(logits, args):
    """The Triton kernels' per-call buffers (`samplecheck.kernels.top_k_top_p.scratch_bytes`)."""
    return scratch_bytes(logits.size(0), logits.size(1), device_kind(logits),
                         args.get("k") is not None, args.get("p") is not None)


TOP_K_TOP_P = register(MaskingInfo(
    name="top_k_top_p",
    off_encodings=TOP_K_TOP_P_OFF,
    backends=triton_and_torch(
        "samplecheck.kernels.top_k_top_p:apply_top_k_top_p",
        "samplecheck.kernels.top_k_top_p_torch:apply_top_k_top_p_torch",
        "the PyTorch fallback sorts full rows: O(B * V) values, indices and fp32 probabilities (by design)",
        path_shapes=PATH_SHAPES, path_parameters=PATH_PARAMETERS,
    ),
    cases=top_k_top_p_cases, make_args=top_k_top_p_args, distribution_cases=top_k_top_p_distribution_cases,
    reference=Oracle(top_k_top_p_reference, tolerance="band", semantics=("tie_policy",)),
    # Top-p mass band (fraction of the survivors' mass) inside which fp32 and fp64 may
    # decide differently; top-k compares input values and has no band.
    tolerance={torch.float32: 1e-5, torch.bfloat16: 1e-5, torch.float16: 1e-5},
    semantics={"tie_policy": "keep_all_ties", "top_p_mass": "renormalised after top-k"},
    error_inputs=TOP_K_TOP_P_ERRORS,
    examples=SEED_REGRESSIONS + (SMALL_K_ALONE, *SMALL_K_WITH_P, *GPU_CHUNK_REGIME, *K_SPLIT_REGIME,
                                 FLAT_ROWS_AT_THE_BOUND, ROWS_OF_RUNS, NARROWED_TOP_K_THEN_TOP_P,
                                 TOP_P_ALONE_SMALL_BATCH, TOP_P_ALONE_SECOND_STEP, P_OFF_FLAT_ROWS, DOMINANT_ROWS_17)
    + P_ONE_BESIDE_TOP_P,
    targets=top_k_top_p_targets,
    extra_memory=top_k_top_p_scratch,
))
