"""Registry record for sampling one token per row under top-k then top-p (not in place).

Contract: `fn(logits, *, k=None, p=None, seed: int) -> int64 ids [B]`; logits, k and p
as in the `top_k_top_p` record (same validation, same error inputs); the input is left
bitwise unchanged; the same seed gives the same ids. Every id must lie in the
`top_k_top_p` oracle's kept set (ambiguous entries admitted), and the ids' law is that
oracle's law (softmax over the kept entries, fp64, from the input values). Cases, oracle,
law and error inputs are the `top_k_top_p` record's.

Backends: `torch` (samplecheck.kernels.top_k_top_p_torch + torch.multinomial, samplecheck.kernels.sampling_torch)
and the FlashInfer sampling APIs (samplecheck.backends.flashinfer), each with `accepts`
restricting cases to the parameters the API implements.
"""

import dataclasses

import torch

from samplecheck.backends.flashinfer import (EXACT_K_TIES, HALF_SOFTMAX, MISALIGNED_SOFTMAX, UNREPEATABLE_HALF,
                                            backend as flashinfer_backend, contiguity_marks, no_filter,
                                            not_both_in_a_row, top_k_only, top_p_only)
from samplecheck.infos.top_k_top_p import (FLAT_ROWS_32000, SEED_REGRESSIONS, TOP_K_TOP_P, TOP_K_TOP_P_ERRORS, TopKTopPCase,
                                          top_k_top_p_args, top_k_top_p_cases, top_k_top_p_ref)
from samplecheck.judging.laws import masked_input_law
from samplecheck.inputs.layouts import LAYOUTS
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.harness.registry import Backend, ErrorInput, KernelInfo, Mark, RegressionExample, register
from samplecheck.inputs.strategies import Budget

SEED_MASK = 2**63 - 1


def sample_args(make_args):
    """A record's make_args plus `seed` (from the case's logits seed, so a case reproduces)."""
    def args(case, logits: torch.Tensor) -> dict:
        return {**make_args(case, logits), "seed": case.logits.seed & SEED_MASK}
    return args


def without_seed(reference):
    def ref(logits, semantics, tolerance, *, seed, **kwargs):
        return reference(logits, semantics, tolerance, **kwargs)
    return ref


def with_seed(errors) -> tuple[ErrorInput, ...]:
    """The masking record's error inputs, each call given seed=0."""
    def add_seed(make):
        def made(device):
            args, kwargs = make(device)
            return args, {**kwargs, "seed": 0}
        return made
    return tuple(dataclasses.replace(e, make=add_seed(e.make)) for e in errors)


def check_ids(original, output, reference, what):
    """ids: int64 [B], each in [0, V) and in the oracle's kept or ambiguous set."""
    batch, vocab = original.shape
    assert isinstance(output, torch.Tensor) and output.dtype == torch.int64 and output.shape == (batch,), (
        f"{what}: expected int64 ids of shape [{batch}], got "
        f"{getattr(output, 'dtype', type(output).__name__)} {tuple(getattr(output, 'shape', ()))}")
    in_range = (output >= 0) & (output < vocab)
    bad = (~in_range).nonzero().flatten()[:5].tolist()
    assert not bad, f"{what}: ids out of [0, {vocab}) in rows {bad}: {[int(output[r]) for r in bad]}"
    admitted = reference.kept | reference.ambiguous
    ok = admitted.gather(1, output[:, None]).flatten()
    wrong = (~ok).nonzero().flatten()[:5].tolist()
    assert not wrong, (f"{what}: {int((~ok).sum())} rows drew an id the oracle masks; rows {wrong}, ids "
                       f"{[int(output[r]) for r in wrong]}, values {[float(original[r, output[r]]) for r in wrong]}, "
                       f"row max {[float(original[r].max()) for r in wrong]}")


# The elements of one call of the repeated-rows sampler: enough to amortise a launch,
# small enough for the CPU interpreter sizes (and for 4 sampled rows of V = 4096 on a GPU).
SAMPLE_CALL_ELEMENTS = 2**24


def sample_by_repeating(call, logits, args, rows: int, n: int, seed: int) -> torch.Tensor:
    """n draws for each of the first `rows` rows: the backend is called on batches made of
    those rows repeated (contiguous copies, each row's per-row parameters repeated with it),
    with seeds seed, seed + 1, ... per call. Backends whose stream follows the row index
    (FlashInfer's Philox subsequence, torch.multinomial) draw independently for every copy.
    The layout under test does not reach this sampler (rows are copied); layouts are covered
    by test_strided_bitwise, which compares ids bitwise with the contiguous call."""
    vocab = logits.size(1)
    per_call = max(1, min(n, SAMPLE_CALL_ELEMENTS // max(vocab * rows, 1)))
    base = logits[:rows]
    params = {name: value for name, value in args.items() if name != "seed"}
    draws, drawn, call_index = [], 0, 0
    while drawn < n:
        m = min(per_call, n - drawn)
        x = base.repeat_interleave(m, dim=0)
        a = {name: None if v is None else v[:rows].repeat_interleave(m) for name, v in params.items()}
        ids = call(x, {**a, "seed": (seed + call_index) & SEED_MASK})
        draws.append(ids.view(rows, m))
        drawn += m
        call_index += 1
    return torch.cat(draws, dim=1).to(torch.int64)


def top_k_top_p_sample_distribution_cases(budget: Budget):
    """Vocab <= 4096 (binnable); unlike the masking record, rows without any filter are
    sampled too: their law is the full softmax, a test of the sampler itself."""
    return top_k_top_p_cases(budget, max_vocab=4096)


def sample_memory(logits, args):
    """Up to four fp32 [B, V] intermediates (upcast, masked logits, probabilities,
    renormalised probabilities) plus the ids."""
    batch, vocab = logits.shape
    return 16 * batch * vocab + 16 * batch


TORCH_SORTS = Mark("skip", "the PyTorch path sorts full rows and makes fp32 copies of [B, V] (by design)",
                   test="test_memory_bound")
TORCH_CPU_DISTRIBUTION = Mark(
    "skip", "~18k draws per row, each a full [V] masking pass on a repeated row, cost minutes on one CPU "
    "core; the law of this path is torch.multinomial over softmax(the masking torch backend's output), which "
    "the masking record's test_distribution checks on CPU; runs on --device=cuda",
    test="test_distribution", device="cpu")


def flashinfer_sample_backends(specs):
    return tuple(flashinfer_backend(name, function, accepts=accepts, marks=marks, topk=name.endswith("_bounded"))
                 for name, function, accepts, marks in specs)


# Findings F3 (contiguity), F4 (bf16/fp16 softmax), F8 (repeatability) and F11 (the fast path's
# exact-k ties) as strict xfails, F7 (layout) as a skip: docs/findings.md.
FLASHINFER_SAMPLERS = (
    ("flashinfer_logits_top_k_first", "top_k_top_p_sampling_from_logits_top_k_first", None,
     contiguity_marks(memory=True) + HALF_SOFTMAX),
    ("flashinfer_logits_top_k_first_bounded", "top_k_top_p_sampling_from_logits_top_k_first_bounded", None,
     contiguity_marks(memory=True) + HALF_SOFTMAX + EXACT_K_TIES),
    ("flashinfer_logits_joint", "top_k_top_p_sampling_from_logits_joint", not_both_in_a_row,
     HALF_SOFTMAX + MISALIGNED_SOFTMAX),
    ("flashinfer_probs_top_k_first", "top_k_top_p_sampling_from_probs_top_k_first", None, UNREPEATABLE_HALF),
    ("flashinfer_probs_joint", "top_k_top_p_sampling_from_probs_joint", not_both_in_a_row, ()),
    ("flashinfer_top_p_probs", "top_p_sampling_from_probs", top_p_only, ()),
    ("flashinfer_top_k_probs", "top_k_sampling_from_probs", top_k_only, ()),
    ("flashinfer_logits", "sampling_from_logits", no_filter, contiguity_marks((torch.float32,))),
)

# Finding F4 pinned for every profile: rows with one dominant token (about 99.9% and 99% of
# the mass at V = 64 and V = 1000), whose bf16 probabilities round the maximum to (or near)
# 1, so a bf16 softmax loses the tail's mass; no filter, so every sampler takes them.
DOMINANT_TOKEN_ROWS = tuple(
    RegressionExample(f"F4: bf16 softmax of a dominant-token row, V = {vocab}",
                      TopKTopPCase(LogitsRecipe(batch=4, vocab=vocab, family="peaked", seed=vocab), None, None),
                      dtypes=(torch.bfloat16,), layouts=("contig",), tests=("test_distribution",))
    for vocab in (64, 1000))

# Finding F10: the bf16 softmax of a flat row of 1994 sums to 0.99645 and a probability sampler
# that assumes 1 gives the missing 0.00355 to the last id (8 times its share of 1 / 1994).
FLAT_BF16_ROW = (
    RegressionExample("F10: a flat bf16 row whose bf16 softmax sums to 0.99645, V = 1994",
                      TopKTopPCase(LogitsRecipe(batch=4, vocab=1994, family="flat", seed=0), None, None),
                      dtypes=(torch.bfloat16,), layouts=("contig",), tests=("test_distribution",)),
)

# Finding F11: at V = 65536 with k = 256 in every row, FlashInfer's top_k_first fast path keeps
# exactly 256 of the ~16384 ids tied on the top level, where every tie is in the law.
EXACT_K_TIES_ROWS = (
    RegressionExample("F11: k = 256 inside a tie of ~16384 ids, V = 65536",
                      TopKTopPCase(LogitsRecipe(batch=4, vocab=65536, family="ties", seed=11), (256,), None),
                      dtypes=(torch.float32,), layouts=("contig",), tests=("test_distribution",)),
)

# Finding F4 in the ids themselves: at tiny p only the maximum (and its ties) may be drawn,
# but a half-precision softmax rounds near-maximal logits to the maximum's probability (bf16:
# a few ulps below it, 128256 tokens of probability ~8e-6; fp16: one ulp below it, the
# probabilities ~3e-5 and ~1.5e-4 being subnormal or near it), and the sampler draws among
# those ties. The cases are the gate profile's failing examples on an H200 (2026-11-30),
# decoded from their Hypothesis blobs (bf16) or printed (fp16: each from-logits order failed
# on one of the two).
HALF_SOFTMAX_TIES = (
    RegressionExample("F4: a bf16 softmax ties the maximum at tiny p, V = 128256",
                      TopKTopPCase(LogitsRecipe(batch=7, vocab=128256, family="randn", scale=0.1, seed=0), None, (1e-6,)),
                      dtypes=(torch.bfloat16,), layouts=LAYOUTS, tests=("test_oracle_equivalence",)),
    RegressionExample("F4: an fp16 softmax ties the maximum at tiny p, V = 32000",
                      TopKTopPCase(FLAT_ROWS_32000, None, (1e-6,)),
                      dtypes=(torch.float16,), layouts=LAYOUTS, tests=("test_oracle_equivalence",)),
    RegressionExample("F4: an fp16 softmax ties the maximum at tiny p, V = 65535, 90% -inf",
                      TopKTopPCase(LogitsRecipe(batch=7, vocab=65535, family="randn", scale=0.1, neg_inf_fraction=0.9,
                                                seed=1843486), None, (1e-6,)),
                      dtypes=(torch.float16,), layouts=LAYOUTS, tests=("test_oracle_equivalence",)),
)

TOP_K_TOP_P_SAMPLE = register(KernelInfo(
    name="top_k_top_p_sample",
    backends=(
        Backend("torch", "samplecheck.kernels.sampling_torch:top_k_top_p_sample_torch", marks=(TORCH_SORTS, TORCH_CPU_DISTRIBUTION)),
    ) + flashinfer_sample_backends(FLASHINFER_SAMPLERS),
    cases=top_k_top_p_cases,
    make_args=sample_args(top_k_top_p_args),
    reference=without_seed(top_k_top_p_ref),
    check=check_ids,
    dtypes=TOP_K_TOP_P.dtypes,
    tolerance=TOP_K_TOP_P.tolerance,
    semantics={**TOP_K_TOP_P.semantics, "output": "int64 ids [B], one draw per row",
               "seed": "same seed, same ids (stream follows the row index)"},
    error_inputs=with_seed(TOP_K_TOP_P_ERRORS),
    law=masked_input_law,
    distribution_cases=top_k_top_p_sample_distribution_cases,
    examples=SEED_REGRESSIONS + DOMINANT_TOKEN_ROWS + FLAT_BF16_ROW + EXACT_K_TIES_ROWS + HALF_SOFTMAX_TIES,
    in_place=False,
    sample=sample_by_repeating,
    extra_memory=sample_memory,
))
