"""Registry record for sampling one token per row under top-k then top-p (not in place).

Contract: `fn(logits, *, k=None, p=None, seed: int) -> int64 ids [B]`; logits, k and p
as in the `top_k_top_p` record (same validation, same error inputs); the input is left
bitwise unchanged; the same seed gives the same ids. Every id must lie in the
`top_k_top_p` oracle's kept set (ambiguous entries admitted), and the ids' law is that
oracle's law (softmax over the kept entries, fp64, from the input values). Cases, oracle,
law and error inputs are the `top_k_top_p` record's (`samplecheck.families.samplers.sampler_of`).

Backend: `torch` (samplecheck.kernels.top_k_top_p_torch + torch.multinomial, samplecheck.kernels.sampling_torch).
Engines' samplers plug in as packs (docs/packs.md). The regression examples pin findings in
FlashInfer's samplers (docs/findings.md) for every backend.
"""

import torch

from samplecheck.families.masking import DISTRIBUTION_MAX_VOCAB, TopKTopPCase, top_k_top_p_cases
from samplecheck.families.samplers import TORCH_CPU_DISTRIBUTION, sampler_of
from samplecheck.infos.top_k_top_p import FLAT_ROWS_32000, SEED_REGRESSIONS, TOP_K_TOP_P
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.registry import catalog
from samplecheck.registry.layouts import LAYOUTS
from samplecheck.registry.matrix import register
from samplecheck.registry.records import Backend, RegressionExample, beyond_memory_bound

TORCH_SORTS = beyond_memory_bound("the PyTorch path sorts full rows and makes fp32 copies of [B, V] (by design)")

# Finding F4 pinned for every profile: rows with one dominant token (about 99.9% and 99% of
# the mass at V = 64 and V = 1000), whose bf16 probabilities round the maximum to (or near)
# 1, so a bf16 softmax loses the tail's mass; no filter, so every sampler takes them.
DOMINANT_TOKEN_ROWS = tuple(
    RegressionExample(f"F4: bf16 softmax of a dominant-token row, V = {vocab}",
                      TopKTopPCase(LogitsRecipe(batch=4, vocab=vocab, family="peaked", seed=vocab), None, None),
                      dtypes=(torch.bfloat16,), layouts=("contig",), tests=(catalog.DISTRIBUTION,))
    for vocab in (64, 1000))

# Finding F10: the bf16 softmax of a flat row of 1994 sums to 0.99645 and a probability sampler
# that assumes 1 gives the missing 0.00355 to the last id (8 times its share of 1 / 1994); the
# rare-events property's millions of draws see it as well (F4's law, off by up to 2**-9 per
# token in bf16, failed it on drawn rows: H200 nightly, run 31).
FLAT_BF16_ROW = (
    RegressionExample("F10: a flat bf16 row whose bf16 softmax sums to 0.99645, V = 1994",
                      TopKTopPCase(LogitsRecipe(batch=4, vocab=1994, family="flat", seed=0), None, None),
                      dtypes=(torch.bfloat16,), layouts=("contig",),
                      tests=(catalog.DISTRIBUTION, catalog.RARE_EVENTS)),
)

# Finding F11: at V = 65536 with k = 256 in every row, FlashInfer's top_k_first fast path keeps
# exactly 256 of the ~16384 ids tied on the top level, where every tie is in the law.
EXACT_K_TIES_ROWS = (
    RegressionExample("F11: k = 256 inside a tie of ~16384 ids, V = 65536",
                      TopKTopPCase(LogitsRecipe(batch=4, vocab=65536, family="ties", seed=11), (256,), None),
                      dtypes=(torch.float32,), layouts=("contig",), tests=(catalog.DISTRIBUTION,)),
)

# Finding F4 in the ids themselves: at tiny p only the maximum (and its ties) may be drawn,
# but a half-precision softmax rounds near-maximal logits to the maximum's probability (bf16:
# a few ulps below it, 128256 tokens of probability ~8e-6; fp16: one ulp below it, the
# probabilities ~3e-5 and ~1.5e-4 being subnormal or near it), and the sampler draws among
# those ties. The cases are the gate profile's failing examples on an H200 (2026-11-30),
# decoded from their Hypothesis blobs (bf16) or printed (fp16: each from-logits order failed
# on one of the two).
TIES_TESTS = (catalog.ORACLE_EQUIVALENCE, catalog.OFF_ENCODINGS)
HALF_SOFTMAX_TIES = (
    RegressionExample("F4: a bf16 softmax ties the maximum at tiny p, V = 128256",
                      TopKTopPCase(LogitsRecipe(batch=7, vocab=128256, family="randn", scale=0.1, seed=0), None, (1e-6,)),
                      dtypes=(torch.bfloat16,), layouts=LAYOUTS, tests=TIES_TESTS),
    RegressionExample("F4: an fp16 softmax ties the maximum at tiny p, V = 32000",
                      TopKTopPCase(FLAT_ROWS_32000, None, (1e-6,)),
                      dtypes=(torch.float16,), layouts=LAYOUTS, tests=TIES_TESTS),
    RegressionExample("F4: an fp16 softmax ties the maximum at tiny p, V = 65535, 90% -inf",
                      TopKTopPCase(LogitsRecipe(batch=7, vocab=65535, family="randn", scale=0.1, neg_inf_fraction=0.9,
                                                seed=1843486), None, (1e-6,)),
                      dtypes=(torch.float16,), layouts=LAYOUTS, tests=TIES_TESTS),
    # The off-encoding property's case (H200 gate, 2026-12-01, run 19): nearly flat bf16 rows of
    # V = 215 with k binding and p = 0.5 (the encoding's binding value) drew ids the oracle masks.
    RegressionExample("F4: bf16 softmax ties at a top-k + top-p boundary, V = 215",
                      TopKTopPCase(LogitsRecipe(batch=1024, vocab=215, family="randn", scale=0.1, seed=25_832_512_933),
                                   (185, 215, 194), None),
                      dtypes=(torch.bfloat16,), layouts=("contig",), tests=(catalog.OFF_ENCODINGS,)),
    # The joint order's fp16 cell (H200, run 27: 7 of 16 dev-profile seeds shrank to it): rows
    # beyond the four the property rewrites keep p = 1e-6, and an fp16 softmax ties row 17's
    # maximum (0.38354) with 0.38232.
    RegressionExample("F4: an fp16 softmax ties the maximum beside the off-encoding rows, V = 32000",
                      TopKTopPCase(LogitsRecipe(batch=18, vocab=32000, family="randn", scale=0.1, seed=0), None, (1e-6,)),
                      dtypes=(torch.float16,), layouts=("contig",), tests=(catalog.OFF_ENCODINGS,)),
)

TOP_K_TOP_P_SAMPLE = register(sampler_of(
    TOP_K_TOP_P, name="top_k_top_p_sample",
    backends=(
        Backend("torch", "samplecheck.kernels.sampling_torch:top_k_top_p_sample_torch",
                marks=(TORCH_SORTS, TORCH_CPU_DISTRIBUTION), batch_invariant=False),  # one generator per call
    ),
    # Unlike the masking record's, rows without any filter are sampled too: their law is the
    # full softmax, a test of the sampler itself.
    distribution_cases=lambda budget: top_k_top_p_cases(budget, max_vocab=DISTRIBUTION_MAX_VOCAB),
    examples=SEED_REGRESSIONS + DOMINANT_TOKEN_ROWS + FLAT_BF16_ROW + EXACT_K_TIES_ROWS + HALF_SOFTMAX_TIES,
))
