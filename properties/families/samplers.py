"""The sampler family: kernels that return one int64 id per row (not in place) and are tested
by drawing (`sample`) as well as exactly. `sampler_of(masking_record, ...)` derives the
sampling record of a masking op (top_k_top_p_sample, min_p_sample): its cases, oracle
(the seed ignored: the law does not depend on it), law and error inputs (each call given
a seed) are the masking record's. Also the Gumbel-max sampler's cases, check and law.
"""

import dataclasses
from dataclasses import dataclass

import torch
from hypothesis import strategies as st

from samplecheck.families.errors import sampler_logits_errors
from samplecheck.families.rows import row_args
from samplecheck.inputs.pools import pools, row_pools, sampled_rows
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.inputs.strategies import Budget, logits_recipes
from samplecheck.kernels.gumbel import extra_bytes
from samplecheck.oracles.gumbel import GumbelReference, gumbel_law
from samplecheck.registry import catalog
from samplecheck.registry.records import ErrorInput, KernelInfo, Mark

SEED_MASK = 2**63 - 1
SAMPLER_SEMANTICS = {"output": "int64 ids [B], one draw per row",
                     "seed": "same seed, same ids (stream follows the row index)"}
TORCH_CPU_DISTRIBUTION = Mark(
    "skip", "~18k draws per row, each a full [V] masking pass on a repeated row, cost minutes on one CPU "
    "core; the law of this path is torch.multinomial over softmax(the masking torch backend's output), which "
    "the masking record's test_distribution checks on CPU; runs on --sc-device=cuda",
    test=catalog.DISTRIBUTION, device="cpu")


@dataclass(frozen=True, kw_only=True)
class SamplerInfo(KernelInfo):
    in_place: bool = False


def with_seed(make_args):
    """A record's make_args plus `seed` (from the case's logits seed, so a case reproduces),
    with its `case_of` where it has one (`samplecheck.families.rows.row_args`)."""
    def args(case, logits: torch.Tensor) -> dict:
        return {**make_args(case, logits), "seed": case.logits.seed & SEED_MASK}

    if hasattr(make_args, "case_of"):
        args.case_of = lambda case, logits, given: make_args.case_of(
            case, logits, {name: value for name, value in given.items() if name != "seed"})
    return args


def seeded_errors(errors) -> tuple[ErrorInput, ...]:
    """A masking record's error inputs, each call given seed=0."""
    def add_seed(make):
        def made(device):
            args, kwargs = make(device)
            return args, {**kwargs, "seed": 0}
        return made
    return tuple(dataclasses.replace(e, make=add_seed(e.make)) for e in errors)


def admitted_ids(original, reference) -> torch.Tensor:
    """bool [B, V]: the ids a sampler of a masking record may draw (docs/backends.md, "Edge
    values"): the oracle's kept or ambiguous entries; id 0 alone in a row with nothing to
    draw (no such entry above -inf); every id in a row whose admitted entries hold +inf or
    NaN (their softmax has no law, and the sampling records define no draw there)."""
    x = original.to(torch.float64)
    admitted = reference.kept | reference.ambiguous
    drawable = admitted & ~(x == float("-inf"))
    lawless = (drawable & ~torch.isfinite(x)).any(dim=-1)
    first = torch.zeros_like(admitted)
    first[:, :1] = True
    nothing = ~drawable.any(dim=-1)
    return torch.where(nothing[:, None], first, admitted | lawless[:, None])


def check_ids(original, output, reference, what):
    """ids: int64 [B], each in [0, V) and among `admitted_ids`."""
    batch, vocab = original.shape
    assert isinstance(output, torch.Tensor) and output.dtype == torch.int64 and output.shape == (batch,), (
        f"{what}: expected int64 ids of shape [{batch}], got "
        f"{getattr(output, 'dtype', type(output).__name__)} {tuple(getattr(output, 'shape', ()))}")
    in_range = (output >= 0) & (output < vocab)
    bad = (~in_range).nonzero().flatten()[:5].tolist()
    assert not bad, f"{what}: ids out of [0, {vocab}) in rows {bad}: {[int(output[r]) for r in bad]}"
    admitted = admitted_ids(original, reference)
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


def sample_memory(logits, args):
    """Up to four fp32 [B, V] intermediates (upcast, masked logits, probabilities,
    renormalised probabilities) plus the ids."""
    batch, vocab = logits.shape
    return 16 * batch * vocab + 16 * batch


def sampler_of(masking: KernelInfo, *, name: str, backends, semantics=None, **fields) -> SamplerInfo:
    """The sampling record of a masking op: one id per row drawn from the masking oracle's
    law (ids in its kept set, ambiguous entries admitted); `semantics` adds to or overrides
    the masking record's, and `fields` anything else (tolerance, examples, ...)."""
    derived = dict(cases=masking.cases, make_args=with_seed(masking.make_args),
                   reference=dataclasses.replace(masking.reference, ignores=("seed",)), check=check_ids,
                   tolerance=masking.tolerance, law=masking.law, error_inputs=seeded_errors(masking.error_inputs + sampler_logits_errors()),
                   semantics={**masking.semantics, **(semantics or {}), **SAMPLER_SEMANTICS},
                   sample=sample_by_repeating, extra_memory=sample_memory, off_encodings=masking.off_encodings)
    return SamplerInfo(name=name, backends=backends, **{**derived, **fields})


# --- Gumbel-max keyed by (seed, position, token id) ------------------------------------------

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# Seeds: any int64 (both 32-bit halves feed the hash); positions: >= 0, across the 2**32 edge.
SEED_EDGES = (0, 1, -1, INT64_MAX, INT64_MIN, 2**32, 2**32 - 1)
POSITION_EDGES = (0, 1, 2**31, 2**32 - 1, 2**32, INT64_MAX)
# Greedy (0), vLLM's clamp (0.01), tiny (1e-6, 1e-30: near-greedy, l / T up to ~1e32),
# 0.5, identity (1), 2, large (1e4). EXTREMES overflow l / T to +-inf in fp32 (a subnormal T)
# or flatten it (1e38); they are checked exactly but kept out of sampling tests.
TEMPERATURE_EDGES = (0.0, 1e-6, 1e-30, 0.01, 0.5, 1.0, 2.0, 1e4)
TEMPERATURE_EXTREMES = (1e-40, 1e38)
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


def gumbel_temperatures(extremes: bool = True) -> st.SearchStrategy[float]:
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


@st.composite
def gumbel_cases(draw, budget: Budget, temperatures=None) -> GumbelCase:
    recipe = draw(logits_recipes(budget))
    seeds = draw(pools(st.one_of(st.sampled_from(SEED_EDGES), st.integers(INT64_MIN, INT64_MAX))))
    positions = draw(pools(st.one_of(st.sampled_from(POSITION_EDGES), st.integers(0, INT64_MAX))))
    temperature = draw(row_pools(gumbel_temperatures() if temperatures is None else temperatures))
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
        return any(t > 0 for t in sampled_rows(case.temperature, case.logits.batch))
    return gumbel_cases(budget, sampling_temperatures()).map(small).filter(samples_a_row)


gumbel_args = row_args(seeds=("seeds", torch.int64), positions=("positions", torch.int64),
                       temperature=("temperature", torch.float32))


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


def gumbel_sampling_law(original, reference: GumbelReference, **_):
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


def sample_gumbel(call, logits, args, rows: int, n: int, seed: int) -> torch.Tensor:
    """n ids for each of the first `rows` rows: the row repeated (a stride-0 view, in calls
    of at most SAMPLE_CALL_ELEMENTS logits: the runner copies a call's input) with request
    seeds seed + i (distinct per draw and row) at the row's position and temperature."""
    draws = []
    base = seed % 2**62
    step = max(1, SAMPLE_CALL_ELEMENTS // max(logits.size(1), 1))
    for row in range(rows):
        parts = []
        for start in range(0, n, step):
            count = min(step, n - start)
            repeat = {"seeds": base + row * n + start + torch.arange(count, dtype=torch.int64, device=logits.device),
                      "positions": args["positions"][row].repeat(count),
                      "temperature": None if args["temperature"] is None else args["temperature"][row].repeat(count)}
            parts.append(call(logits[row:row + 1].expand(count, -1), repeat))
        draws.append(torch.cat(parts))
    return torch.stack(draws)


def gumbel_memory(logits, args) -> int:
    """The bytes the Gumbel kernel states it allocates beyond its inputs."""
    return extra_bytes(logits.size(0), logits.size(1), logits.device.type)
