"""Registry record for Gumbel-max sampling keyed by (seed, position, token id) (not in place)."""

import dataclasses
from dataclasses import dataclass

import torch
from hypothesis import strategies as st

from samplecheck.oracles.gumbel import GumbelReference, gumbel_law, gumbel_reference
from samplecheck.inputs.layouts import LAYOUTS
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.harness.registry import ALL_DTYPES, Backend, ErrorInput, KernelInfo, RegressionExample, register, tensor_on, zeros_on
from samplecheck.inputs.strategies import Budget, expand_pool, logits_recipes, row_pools
from samplecheck.kernels.gumbel import extra_bytes

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# Seeds: any int64 (both 32-bit halves feed the hash); positions: >= 0, across the 2**32 edge.
SEED_EDGES = (0, 1, -1, INT64_MAX, INT64_MIN, 2**32, 2**32 - 1)
POSITION_EDGES = (0, 1, 2**31, 2**32 - 1, 2**32, INT64_MAX)
# Greedy (0), vLLM's clamp (0.01), tiny (1e-6, 1e-30: near-greedy, l / T up to ~1e32),
# 0.5, identity (1), 2, large (1e4). EXTREMES overflow l / T to +-inf in fp32 (a subnormal T)
# or flatten it (1e38); they are checked exactly but kept out of sampling tests.
TEMPERATURE_EDGES = (0.0, 1e-6, 1e-30, 0.01, 0.5, 1.0, 2.0, 1e4)
TEMPERATURE_EXTREMES = (1e-40, 1e38)
MAX_POOL = 4
SAMPLED_ROWS = 4  # tests/cover/test_distribution.py samples at most the first 4 rows
# Sampling tests draw ~18k ids per row through the interpreter: vocabularies up to 32 keep
# a row's draws at ~0.6M hashed entries (the G-test has at most 20 single-token bins anyway).
DISTRIBUTION_MAX_VOCAB = 32


@dataclass(frozen=True)
class GumbelCase:
    """Logits recipe plus per-row pools (row r takes pool[r % len(pool)]); temperature None
    means the parameter is absent (every row samples at T = 1)."""

    logits: LogitsRecipe
    seeds: tuple[int, ...]
    positions: tuple[int, ...]
    temperature: tuple[float, ...] | None


def temperature_values(extremes: bool = True) -> st.SearchStrategy[float]:
    edges = TEMPERATURE_EDGES + (TEMPERATURE_EXTREMES if extremes else ())
    return st.one_of(st.sampled_from(edges), st.floats(2.0**-10, 2.0**10, width=32))


# The smallest T > 0 whose sampling law the tests claim. Below it l / T reaches ~1e5 and
# more, where the fp32 ulp of the score coarsens the noise (at l / T ~ 1e29 it absorbs it:
# tied logits then always give the lowest id), which the oracle admits but the law does not
# model.
MIN_SAMPLING_T = 2.0**-10


def sampling_temperatures() -> st.SearchStrategy[float]:
    """T for sampling tests: greedy or T >= MIN_SAMPLING_T."""
    return st.one_of(st.sampled_from([t for t in TEMPERATURE_EDGES if t == 0 or t >= MIN_SAMPLING_T]),
                     st.floats(MIN_SAMPLING_T, 2.0**10, width=32))


def _pool(values) -> st.SearchStrategy[tuple]:
    return st.lists(values, min_size=1, max_size=MAX_POOL).map(tuple)


@st.composite
def gumbel_cases(draw, budget: Budget, temperatures=None) -> GumbelCase:
    recipe = draw(logits_recipes(budget))
    seeds = draw(_pool(st.one_of(st.sampled_from(SEED_EDGES), st.integers(INT64_MIN, INT64_MAX))))
    positions = draw(_pool(st.one_of(st.sampled_from(POSITION_EDGES), st.integers(0, INT64_MAX))))
    temperature = draw(row_pools(temperature_values() if temperatures is None else temperatures, MAX_POOL))
    return GumbelCase(recipe, seeds, positions, temperature)


def gumbel_distribution_cases(budget: Budget):
    """Cases for sampling tests: vocab <= DISTRIBUTION_MAX_VOCAB (larger drawn vocabs are
    folded into 1..32), T from `sampling_temperatures`, and a sampled row (T > 0) among the
    first rows."""
    def small(case):
        vocab = case.logits.vocab
        vocab = vocab if vocab <= DISTRIBUTION_MAX_VOCAB else 1 + vocab % DISTRIBUTION_MAX_VOCAB
        return dataclasses.replace(case, logits=dataclasses.replace(case.logits, vocab=vocab))

    def samples_a_row(case):
        if case.temperature is None:
            return True
        return any(t > 0 for t in expand_pool(case.temperature, min(case.logits.batch, SAMPLED_ROWS)))
    return gumbel_cases(budget, sampling_temperatures()).map(small).filter(samples_a_row)


def gumbel_args(case: GumbelCase, logits: torch.Tensor) -> dict:
    batch, device = logits.size(0), logits.device
    args = {"seeds": torch.tensor(expand_pool(case.seeds, batch), dtype=torch.int64, device=device),
            "positions": torch.tensor(expand_pool(case.positions, batch), dtype=torch.int64, device=device),
            "temperature": None}
    if case.temperature is not None:
        args["temperature"] = torch.tensor(expand_pool(case.temperature, batch), dtype=torch.float32, device=device)
    return args


def gumbel_ref(logits, semantics, tolerance, *, seeds, positions, temperature):
    return gumbel_reference(logits, seeds, positions, temperature, band=tolerance)


def gumbel_check(original, output, reference: GumbelReference, what):
    """One int64 id per row, in [0, V), among the oracle's admissible ids (exactly the
    oracle's id in greedy rows)."""
    batch, vocab = original.shape
    assert isinstance(output, torch.Tensor) and output.shape == (batch,) and output.dtype == torch.int64, (
        f"{what}: expected int64 ids of shape ({batch},), got "
        f"{getattr(output, 'dtype', type(output).__name__)} {tuple(getattr(output, 'shape', ()))}")
    out_of_range = (output < 0) | (output >= vocab)
    assert not bool(out_of_range.any()), (
        f"{what}: ids outside [0, {vocab}) in rows {out_of_range.nonzero().flatten()[:10].tolist()}: "
        f"{output[out_of_range][:10].tolist()}")
    ok = reference.admissible.gather(1, output[:, None]).squeeze(1)
    if not bool(ok.all()):
        details = []
        for row in (~ok).nonzero().flatten()[:5].tolist():
            got = int(output[row])
            best = reference.admissible[row].nonzero().flatten()[:5].tolist()
            kind = "greedy" if reference.greedy[row] else "sampled"
            details.append(f"row {row} ({kind}): got id {got} (logit {float(original[row, got])!r}, score "
                           f"{float(reference.score[row, got])!r}), admissible {best} (score "
                           f"{float(reference.score[row, best[0]])!r})")
        raise AssertionError(f"{what}: {int((~ok).sum())} of {batch} rows drew an id the oracle does not admit; "
                             + "; ".join(details))


def gumbel_law_of(original, reference: GumbelReference, **_):
    """Law: softmax of the fp32 quotients l / T over the finite entries (the kernel's s,
    exact in fp64; a one-hot at the greedy id in T = 0 rows). Every entry of positive law
    may be drawn and must be when its mass reaches the plan's floor (the noise truncation
    only affects tokens 19.45 nats below the max, far below any floor)."""
    law = gumbel_law(reference)
    support = law > 0
    return law, support, support


def gumbel_targets(original, reference: GumbelReference):
    """Nightly steering: how close the runner-up comes to the best score in sampled rows,
    as -log2 of the gap (larger: closer; fp32 noise decides near-ties)."""
    sampled = ~reference.greedy & torch.isfinite(reference.score).any(dim=-1)
    if not bool(sampled.any()):
        return {"score_closeness": 0.0}
    top2 = reference.score[sampled].masked_fill(~torch.isfinite(reference.score[sampled]), -1e300).topk(
        min(2, reference.score.size(1)), dim=-1).values
    gap = (top2[:, 0] - top2[:, -1]).min() if top2.size(1) == 2 else torch.tensor(1.0)
    return {"score_closeness": float(-gap.clamp(min=1e-300).log2())}


def _call(logits, seeds, positions, temperature=None, **tuning):
    """make(device) for an ErrorInput: each argument is built on the device."""
    def make(device):
        kwargs = {"seeds": seeds(device), "positions": positions(device),
                  "temperature": None if temperature is None else temperature(device)}
        return (logits(device),), {**kwargs, **tuning}
    return make


_SEEDS2 = tensor_on([1, 2], torch.int64)
_POS2 = tensor_on([0, 5], torch.int64)
_T_RANGE = r"temperature must be finite and >= 0"
GUMBEL_ERRORS = (
    ErrorInput("1-D logits", _call(zeros_on(8), tensor_on([1], torch.int64), tensor_on([0], torch.int64)),
               ValueError, r"logits must be 2-D"),
    ErrorInput("float64 logits", _call(zeros_on(2, 8, dtype=torch.float64), _SEEDS2, _POS2),
               TypeError, r"logits dtype must be one of float32, bfloat16, float16"),
    ErrorInput("column-strided logits", _call(lambda d: zeros_on(2, 16)(d)[:, ::2], _SEEDS2, _POS2),
               ValueError, r"column stride 1"),
    ErrorInput("empty vocab", _call(zeros_on(2, 0), _SEEDS2, _POS2), ValueError, r"logits must have vocab >= 1"),
    ErrorInput("int32 seeds", _call(zeros_on(2, 8), tensor_on([1, 2], torch.int32), _POS2),
               TypeError, r"seeds dtype must be one of int64"),
    ErrorInput("seeds of wrong length", _call(zeros_on(2, 8), tensor_on([1], torch.int64), _POS2),
               ValueError, r"seeds must have shape \[batch\] = \[2\]"),
    ErrorInput("missing seeds", _call(zeros_on(2, 8), lambda d: None, _POS2),
               TypeError, r"seeds is required: an int64 tensor of shape \[batch\]"),
    ErrorInput("negative position", _call(zeros_on(2, 8), _SEEDS2, tensor_on([3, -1], torch.int64)),
               ValueError, r"positions must be >= 0"),
    ErrorInput("float positions", _call(zeros_on(2, 8), _SEEDS2, tensor_on([0.0, 1.0], torch.float32)),
               TypeError, r"positions dtype must be one of int64"),
    ErrorInput("positions of wrong length", _call(zeros_on(2, 8), _SEEDS2, tensor_on([0, 1, 2], torch.int64)),
               ValueError, r"positions must have shape \[batch\] = \[2\]"),
    ErrorInput("negative temperature", _call(zeros_on(2, 8), _SEEDS2, _POS2, tensor_on([0.5, -0.1], torch.float32)),
               ValueError, _T_RANGE),
    ErrorInput("NaN temperature", _call(zeros_on(2, 8), _SEEDS2, _POS2, tensor_on([float("nan"), 1.0], torch.float32)),
               ValueError, _T_RANGE),
    ErrorInput("infinite temperature", _call(zeros_on(2, 8), _SEEDS2, _POS2, tensor_on([1.0, float("inf")], torch.float32)),
               ValueError, _T_RANGE),
    ErrorInput("float64 temperature", _call(zeros_on(2, 8), _SEEDS2, _POS2, tensor_on([1.0, 1.0], torch.float64)),
               TypeError, r"temperature dtype must be one of float32"),
    ErrorInput("temperature of wrong length", _call(zeros_on(2, 8), _SEEDS2, _POS2, tensor_on([1.0], torch.float32)),
               ValueError, r"temperature must have shape \[batch\] = \[2\]"),
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


def _sample(call, logits, args, rows: int, n: int, seed: int) -> torch.Tensor:
    """n ids for each of the first `rows` rows: the row repeated n times (a stride-0 view, no
    copy) with request seeds seed + i (distinct per draw and row) at the row's position and
    temperature."""
    draws = []
    base = seed % 2**62
    for row in range(rows):
        repeat = {"seeds": base + row * n + torch.arange(n, dtype=torch.int64, device=logits.device),
                  "positions": args["positions"][row].repeat(n),
                  "temperature": None if args["temperature"] is None else args["temperature"][row].repeat(n)}
        draws.append(call(logits[row:row + 1].expand(n, -1), repeat))
    return torch.stack(draws)


def _extra_memory(logits, args) -> int:

    return extra_bytes(logits.size(0), logits.size(1), logits.device.type)


GUMBEL = register(KernelInfo(
    name="gumbel_sample",
    backends=(Backend("triton", "samplecheck.kernels.gumbel:gumbel_sample", knobs=("block_v", "splits")),),
    cases=gumbel_cases,
    make_args=gumbel_args,
    reference=gumbel_ref,
    check=gumbel_check,
    dtypes=ALL_DTYPES,
    # Relative score band (times 1 + |g| + |s|) inside which fp32 noise may reorder two
    # tokens (samplecheck.oracles.gumbel: twice the fp32 error bound). The scores are fp32 for every
    # logits dtype, so the band does not depend on it; greedy rows are exact.
    tolerance={torch.float32: 2**-19, torch.bfloat16: 2**-19, torch.float16: 2**-19},
    semantics={"noise": "Gumbel-max, u = hash(seed, position, token id) on a 2**23-point grid, fp32 g",
               "batch_invariance": "the id depends only on the row's logits, T, seed and position",
               "greedy": "T == 0: lowest argmax, no noise", "tie_policy": "lowest id",
               "non_finite": "-inf and NaN never drawn; +inf drawn first (lowest id); no candidate: id 0",
               "truncation": "tokens more than 19.45 nats below the max of l / T are never drawn"},
    error_inputs=GUMBEL_ERRORS,
    law=gumbel_law_of,
    targets=gumbel_targets,
    distribution_cases=gumbel_distribution_cases,
    examples=GUMBEL_REGRESSIONS,
    in_place=False,
    sample=_sample,
    extra_memory=_extra_memory,
))
