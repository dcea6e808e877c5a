"""The value family (temperature, logit_bias, penalties, bad_words): in place, and the oracle
gives the exact output in the logits' dtype (`ValueInfo.expected`), so the law is the softmax
of those values and the checks are bitwise (or within a stated number of ulps). Also the
temperature cases, which softmax shares, and each value kernel's check.
"""

import functools
from dataclasses import dataclass
from typing import Callable

import torch
from hypothesis import strategies as st

from samplecheck.families.rows import row_args
from samplecheck.inputs.pools import pools, sampled_rows
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.inputs.strategies import Budget, logits_recipes
from samplecheck.judging.laws import exact_output_law
from samplecheck.oracles.logit_bias import logit_bias_reference
from samplecheck.registry import checks
from samplecheck.registry.layouts import as_bits
from samplecheck.registry.records import KernelInfo


def expected_field(original, reference) -> torch.Tensor:
    """The exact output of an oracle that returns it as `.expected`."""
    return reference.expected


def _exact_law(expected: Callable, original, reference, **_):
    return exact_output_law(expected(original, reference))


@dataclass(frozen=True, kw_only=True)
class ValueInfo(KernelInfo):
    """`expected(original, reference)`: the exact output the oracle's verdict states, in the
    logits' dtype; the law (unless the record names another) is its softmax in fp64
    (`samplecheck.judging.laws.exact_output_law`). The law of the values *in the logits'
    dtype*, not of the unrounded fp64 results: a bf16 output of l / T is legitimately
    rounded to 8 significand bits (probability ratios off by up to exp(4) at |l / T| =
    1000), and the law of the rounded values is exactly what a correct kernel's output
    induces. Rows an op leaves alone (T = 0 or 1, no penalty) keep the softmax of the
    unchanged logits, so a kernel that corrupts them fails."""

    expected: Callable = expected_field

    def __post_init__(self):
        super().__post_init__()
        if self.law is None:
            object.__setattr__(self, "law", functools.partial(_exact_law, self.expected))


# --- temperature (and softmax, which takes the same cases) -----------------------------------

# Edges: greedy (0), vLLM's greedy epsilon and clamp (1e-5, 0.01), tiny (1e-6, 1e-30),
# 0.5, identity (1), 2, large (1e4). EXTREMES reach the overflow and subnormal ranges
# (a subnormal T, and a T so large that |l| / T is subnormal); they are checked bitwise
# but kept out of sampling tests, where +-inf logits have no law.
TEMPERATURE_EDGES = (0.0, 1e-6, 1e-30, 1e-5, 0.01, 0.5, 1.0, 2.0, 1e4)
TEMPERATURE_EXTREMES = (1e-40, 1e38)


@dataclass(frozen=True)
class TemperatureCase:
    """Logits recipe plus a per-row pool of temperatures (row r takes pool[r % len(pool)])."""

    logits: LogitsRecipe
    temperature: tuple[float, ...]


def temperature_values(extremes: bool = True) -> st.SearchStrategy[float]:
    """T per row, edges first, then any float32 in [2**-10, 2**10]."""
    edges = TEMPERATURE_EDGES + (TEMPERATURE_EXTREMES if extremes else ())
    return st.one_of(st.sampled_from(edges), st.floats(2.0**-10, 2.0**10, width=32))


@st.composite
def temperature_cases(draw, budget: Budget, max_vocab: int | None = None, extremes: bool = True) -> TemperatureCase:
    recipe = draw(logits_recipes(budget, max_vocab))
    return TemperatureCase(recipe, draw(pools(temperature_values(extremes))))


def temperature_distribution_cases(budget: Budget):
    """Cases for sampling tests: vocab <= 4096 (binnable), no T that can overflow a bf16
    logit (|l| <= ~170 in every recipe, so T >= 1e-30 keeps |l / T| < 2e32), and at least
    one sampled row with 0 < T != 1 (T = 0 and T = 1 rows are sampled too: their law is
    the softmax of the unchanged logits)."""
    return temperature_cases(budget, max_vocab=4096, extremes=False).filter(
        lambda case: any(t not in (0.0, 1.0) for t in sampled_rows(case.temperature, case.logits.batch)))


@st.composite
def softmax_cases(draw, budget: Budget, max_vocab: int | None = None) -> TemperatureCase:
    """The temperature cases without T = 0 (greedy has no softmax) and without the extremes."""
    recipe = draw(logits_recipes(budget, max_vocab))
    return TemperatureCase(recipe, draw(pools(temperature_values(extremes=False).filter(lambda t: t > 0))))


temperature_args = row_args(temperature=("temperature", torch.float32))


def _ordered(t: torch.Tensor) -> torch.Tensor:
    """Integer keys in float order, one step per ulp (-0.0 and +0.0 both map to 0)."""
    bits = as_bits(t).to(torch.int64)
    magnitude = bits & ((1 << (8 * t.element_size() - 1)) - 1)
    return torch.where(bits < 0, -magnitude, magnitude)


def check_scaled(original, output, reference, what):
    """Bitwise equal to the oracle's output in the logits' dtype (within `ulps` when nonzero;
    NaN must match NaN)."""
    expected = reference.expected
    assert output.shape == expected.shape and output.dtype == expected.dtype, (
        f"{what}: output {tuple(output.shape)} {output.dtype} vs oracle {tuple(expected.shape)} {expected.dtype}")
    if reference.ulps == 0:
        wrong = as_bits(output) != as_bits(expected)
    else:
        distance = (_ordered(output) - _ordered(expected)).abs()
        wrong = (distance > reference.ulps) | (output.isnan() != expected.isnan())
    wrong &= ~(output.isnan() & expected.isnan())
    if bool(wrong.any()):
        where = [tuple(int(i) for i in w) for w in wrong.nonzero()[:5].cpu()]
        detail = [f"{w}: input {float(original[w])!r}, got {float(output[w])!r}, "
                  f"expected {float(expected[w])!r} (fp64 l/T {float(reference.scaled[w])!r}, "
                  f"{'scaled' if reference.active[w[0]] else 'unchanged'} row)" for w in where]
        rows = sorted({int(r) for r in wrong.nonzero()[:, 0].unique()[:20].cpu()})
        raise AssertionError(f"{what}: {int(wrong.sum())} of {wrong.numel()} entries differ from the oracle "
                             f"by more than {reference.ulps} ulp (rows {rows}); " + "; ".join(detail))


def temperature_targets(original, reference):
    """Nightly steering: entries where the contract's fp32 intermediate matters (rounding l / T
    straight to the dtype would give another value: double-rounding cases), and the largest
    finite |l / T| (overflow edge)."""
    direct = reference.scaled.to(original.dtype)
    double_rounded = (as_bits(direct) != as_bits(reference.expected)) & reference.active[:, None]
    finite = reference.scaled[torch.isfinite(reference.scaled)]
    return {"double_rounding_cases": float(double_rounded.sum()),
            "log2_max_abs_scaled": float(finite.abs().max().clamp(min=1e-300).log2()) if finite.numel() else 0.0}


def check_probabilities(original, output, reference, what):
    """fp32 [B, V]; on rows with a law, every |p - q| within the oracle's bound (NaN fails)."""
    assert isinstance(output, torch.Tensor) and output.dtype == torch.float32 and output.shape == original.shape, (
        f"{what}: expected fp32 {tuple(original.shape)}, got {getattr(output, 'dtype', type(output).__name__)} "
        f"{tuple(getattr(output, 'shape', ()))}")
    rows = reference.defined
    error = (output.to(torch.float64) - reference.probs).abs()
    wrong = (~(error <= reference.bound)) & rows[:, None]
    if bool(wrong.any()):
        where = [tuple(int(i) for i in w) for w in wrong.nonzero()[:5].cpu()]
        detail = [f"{w}: logit {float(original[w])!r}, got {float(output[w])!r}, fp64 {float(reference.probs[w])!r}, "
                  f"bound {float(reference.bound[w]):.3e}" for w in where]
        raise AssertionError(f"{what}: {int(wrong.sum())} of {wrong.numel()} probabilities outside the fp32 error "
                             f"bound; " + "; ".join(detail))


# --- the token-list ops' checks --------------------------------------------------------------

@dataclass(frozen=True)
class BiasReference:
    """The logit_bias oracle's output (`expected`) and the entries a bias computes
    (`biased`, bool [B, V]: every other entry is kept or masked, bits and all)."""

    expected: torch.Tensor
    biased: torch.Tensor


def logit_bias_verdict(logits: torch.Tensor, **args) -> BiasReference:
    """`samplecheck.oracles.logit_bias.logit_bias_reference` and the entries its biases reach."""
    biased = torch.zeros(logits.shape, dtype=torch.bool, device=logits.device)
    ids = args.get("logit_bias_ids")
    if ids is not None:
        given = (ids >= 0) & (ids < logits.size(1))
        rows = torch.arange(ids.size(0), device=ids.device)[:, None].expand_as(ids)
        biased[rows[given], ids[given].long()] = True
    return BiasReference(logit_bias_reference(logits, **args), biased)


def check_biased(original, output, reference: BiasReference, what):
    """Bitwise the oracle's output, but where a bias computes a NaN (NaN + b, IEEE): any NaN."""
    computed_nan = reference.biased & output.isnan() & reference.expected.isnan()
    checks.assert_bitwise_equal(torch.where(computed_nan, reference.expected, output), reference.expected,
                                f"{what}: output vs the oracle")


def check_banned(original, output, reference, what):
    """Exact: the banned entries are -inf, every other entry is bitwise the input."""
    checks.assert_masked_like(original, output, ~reference.banned, torch.zeros_like(reference.banned), what)


def check_penalised(original, output, reference, what):
    """Entries outside prompt ∪ output (and whole rows with every penalty off) bitwise the
    input; penalised entries equal to the oracle (assert_close within `rtol`, and bitwise,
    signed zeros included, when rtol is 0)."""
    expected = reference.expected

    def fail_where(wrong: torch.Tensor, problem: str) -> None:
        if bool(wrong.any()):
            where = [tuple(int(i) for i in w) for w in wrong.nonzero()[:5].cpu()]
            detail = [f"{w}: input {float(original[w])!r}, got {float(output[w])!r}, expected "
                      f"{float(expected[w])!r} (output count {int(reference.counts[w])})" for w in where]
            raise AssertionError(f"{what}: {int(wrong.sum())} entries {problem}; " + "; ".join(detail))

    # An untouched NaN stays NaN, whichever NaN: a device may canonicalise it on a load/store.
    fail_where((as_bits(output) != as_bits(original)) & ~reference.touched & ~(output.isnan() & original.isnan()),
               "changed outside prompt ∪ output or in rows with every penalty off")
    torch.testing.assert_close(output, expected, rtol=reference.rtol, atol=0.0, equal_nan=True,
                               msg=lambda detail: f"{what}: penalised entries differ from the oracle: {detail}")
    if reference.rtol == 0:  # a penalised NaN stays NaN (IEEE), whichever NaN
        fail_where((as_bits(output) != as_bits(expected)) & ~(output.isnan() & expected.isnan()),
                   "differ bitwise from the oracle (signed zeros)")
