"""Registry record for temperature scaling (l / T per row, in place)."""

from dataclasses import dataclass

import torch
from hypothesis import strategies as st

from samplecheck.oracles.temperature import TemperatureReference, temperature_reference
from samplecheck.judging.laws import exact_output_law
from samplecheck.inputs.layouts import LAYOUTS, as_bits
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.harness.registry import ALL_DTYPES, Backend, Mark, ErrorInput, KernelInfo, RegressionExample, register, tensor_on, zeros_on
from samplecheck.inputs.strategies import Budget, expand_pool, logits_recipes

# Edges: greedy (0), vLLM's greedy epsilon and clamp (1e-5, 0.01), tiny (1e-6, 1e-30),
# 0.5, identity (1), 2, large (1e4). EXTREMES reach the overflow and subnormal ranges
# (a subnormal T, and a T so large that |l| / T is subnormal); they are checked bitwise
# but kept out of sampling tests, where +-inf logits have no law.
TEMPERATURE_EDGES = (0.0, 1e-6, 1e-30, 1e-5, 0.01, 0.5, 1.0, 2.0, 1e4)
TEMPERATURE_EXTREMES = (1e-40, 1e38)
MAX_POOL = 4
SAMPLED_ROWS = 4  # tests/cover/test_distribution.py samples at most the first 4 rows


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
    pool = draw(st.lists(temperature_values(extremes), min_size=1, max_size=MAX_POOL).map(tuple))
    return TemperatureCase(recipe, pool)


def temperature_distribution_cases(budget: Budget):
    """Cases for sampling tests: vocab <= 4096 (binnable), no T that can overflow a bf16
    logit (|l| <= ~170 in every recipe, so T >= 1e-30 keeps |l / T| < 2e32), and at least
    one sampled row with 0 < T != 1 (T = 0 and T = 1 rows are sampled too: their law is
    the softmax of the unchanged logits)."""
    def scales_a_sampled_row(case):
        rows = expand_pool(case.temperature, min(case.logits.batch, SAMPLED_ROWS))
        return any(t not in (0.0, 1.0) for t in rows)
    return temperature_cases(budget, max_vocab=4096, extremes=False).filter(scales_a_sampled_row)


def temperature_args(case: TemperatureCase, logits: torch.Tensor) -> dict:
    values = expand_pool(case.temperature, logits.size(0))
    return {"temperature": torch.tensor(values, dtype=torch.float32, device=logits.device)}


def temperature_ref(logits, semantics, tolerance, *, temperature):
    return temperature_reference(logits, temperature, ulps=int(tolerance))


def _ordered(t: torch.Tensor) -> torch.Tensor:
    """Integer keys in float order, one step per ulp (-0.0 and +0.0 both map to 0)."""
    bits = as_bits(t).to(torch.int64)
    magnitude = bits & ((1 << (8 * t.element_size() - 1)) - 1)
    return torch.where(bits < 0, -magnitude, magnitude)


def temperature_check(original, output, reference: TemperatureReference, what):
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


def temperature_law(original, reference: TemperatureReference, **_):
    """The oracle's sampling law, the ids that may be drawn and those that must be.

    Law: softmax in fp64 of the oracle's output *in the logits' dtype*. The kernel stores
    l / T in bf16, so its output is legitimately rounded to 8 significand bits: an error of
    up to 2**-9 * |l / T| in logit space, i.e. probability ratios off by up to exp(4) at
    |l / T| = 1000. A law from the unrounded fp64 quotients would make correct kernels fail
    the G-test; the law of the rounded values is exactly what a correct kernel's output
    induces. Greedy (T = 0) and T = 1 rows keep their input, so their law is the softmax of
    the unchanged logits (a kernel that scales or corrupts them fails).
    """
    return exact_output_law(reference.expected)


def temperature_targets(original, reference: TemperatureReference):
    """Nightly steering: entries where the contract's fp32 intermediate matters (rounding l / T
    straight to the dtype would give another value: double-rounding cases), and the largest
    finite |l / T| (overflow edge)."""
    direct = reference.scaled.to(original.dtype)
    double_rounded = (as_bits(direct) != as_bits(reference.expected)) & reference.active[:, None]
    finite = reference.scaled[torch.isfinite(reference.scaled)]
    return {"double_rounding_cases": float(double_rounded.sum()),
            "log2_max_abs_scaled": float(finite.abs().max().clamp(min=1e-300).log2()) if finite.numel() else 0.0}


def _call(logits, temperature):
    """make(device) for an ErrorInput: each argument is built on the device."""
    return lambda device: ((logits(device),), {"temperature": temperature(device)})


_T_RANGE = r"temperature must be finite and >= 0"
TEMPERATURE_ERRORS = (
    ErrorInput("1-D logits", _call(zeros_on(8), tensor_on([0.5], torch.float32)), ValueError, r"logits must be 2-D"),
    ErrorInput("float64 logits", _call(zeros_on(2, 8, dtype=torch.float64), tensor_on([0.5, 2.0], torch.float32)),
               TypeError, r"logits dtype must be one of float32, bfloat16, float16"),
    ErrorInput("column-strided logits", _call(lambda d: zeros_on(2, 16)(d)[:, ::2], tensor_on([0.5, 2.0], torch.float32)),
               ValueError, r"column stride 1"),
    ErrorInput("negative temperature", _call(zeros_on(2, 8), tensor_on([0.5, -0.1], torch.float32)), ValueError, _T_RANGE),
    ErrorInput("temperature -1", _call(zeros_on(2, 8), tensor_on([-0.0, -1.0], torch.float32)),
               ValueError, _T_RANGE),
    ErrorInput("infinite temperature", _call(zeros_on(2, 8), tensor_on([float("inf"), 1.0], torch.float32)),
               ValueError, _T_RANGE),
    ErrorInput("strided temperature", _call(zeros_on(2, 8), lambda d: tensor_on([0.5, 1.0, 2.0, 1.0], torch.float32)(d)[::2]),
               ValueError, r"temperature must be contiguous"),
    ErrorInput("NaN temperature", _call(zeros_on(2, 8), tensor_on([1.0, float("nan")], torch.float32)),
               ValueError, _T_RANGE),
    ErrorInput("float64 temperature", _call(zeros_on(2, 8), tensor_on([0.5, 0.5], torch.float64)),
               TypeError, r"temperature dtype must be one of float32"),
    ErrorInput("bfloat16 temperature", _call(zeros_on(2, 8), tensor_on([0.5, 0.5], torch.bfloat16)),
               TypeError, r"temperature dtype must be one of float32"),
    ErrorInput("temperature of wrong length", _call(zeros_on(2, 8), tensor_on([0.5, 0.5, 0.5], torch.float32)),
               ValueError, r"temperature must have shape \[batch\] = \[2\]"),
    ErrorInput("2-D temperature", _call(zeros_on(2, 8), tensor_on([[0.5], [0.5]], torch.float32)),
               ValueError, r"temperature must have shape \[batch\] = \[2\]"),
)


# Full-size rows: opt-125m's vocab 50272 padded to 50304 (a strided view), batch 8, with
# the tiny temperatures of vllm#1623 / #3063 (1e-4 overflowed fp16 logits / T before the
# 0.01 clamp of vllm#2937), the clamp value, greedy and identity rows.
OPT125M = LogitsRecipe(batch=8, vocab=50272, family="randn", scale=1.0, seed=1623)
TEMPERATURE_REGRESSIONS = (
    # Every edge in one small batch, in every dtype and layout: greedy, identity, tiny (fp16
    # overflows), subnormal T (everything overflows), huge T (subnormal quotients), plain.
    RegressionExample("edges: greedy, identity, tiny, subnormal and huge T",
                      TemperatureCase(LogitsRecipe(batch=6, vocab=1019, family="randn", scale=3.0,
                                                   neg_inf_fraction=0.5, seed=12),
                                      (0.0, 1.0, 1e-6, 1e-40, 1e38, 0.7)),
                      dtypes=ALL_DTYPES, layouts=LAYOUTS),
    # bf16 subnormals scaled into the normal range: the interpreter's plain bf16 load flushed
    # them (findings F9), so the kernel read 0 where the oracle reads the value.
    RegressionExample("findings F9: subnormal logits at tiny T",
                      TemperatureCase(LogitsRecipe(batch=4, vocab=1019, family="randn", scale=1e-39, seed=9),
                                      (1e-6, 1e-30, 1.0, 0.7)),
                      dtypes=ALL_DTYPES, layouts=LAYOUTS),
    RegressionExample("vllm#1623 tiny temperatures at full vocab",
                      TemperatureCase(OPT125M, (1e-4, 0.01, 0.0, 1.0, 0.7)),
                      dtypes=(torch.bfloat16, torch.float32), layouts=("padded64",)),
)

TEMPERATURE = register(KernelInfo(
    name="temperature",
    backends=(
        Backend("triton", "samplecheck.kernels.temperature:apply_temperature"),
        Backend("torch", "samplecheck.kernels.temperature:apply_temperature_torch", marks=(
            Mark("skip", "the PyTorch fallback divides an fp32 copy of the scaled rows (by design)",
                 test="test_memory_bound"),)),
    ),
    cases=temperature_cases,
    make_args=temperature_args,
    reference=temperature_ref,
    check=temperature_check,
    dtypes=ALL_DTYPES,
    # Admissible distance from the oracle in ulps of the logits' dtype: none. The oracle
    # reproduces the fp32 quotient exactly and rounds it like the kernel (samplecheck.oracles.temperature).
    tolerance={torch.float32: 0, torch.bfloat16: 0, torch.float16: 0},
    semantics={"division": "fp32 IEEE round-to-nearest, then round-to-nearest-even to the logits' dtype",
               "greedy": "T == 0 rows unchanged", "identity": "T == 1 rows bitwise unchanged",
               "overflow": "l / T may be +-inf (no clamp); never NaN from finite l"},
    error_inputs=TEMPERATURE_ERRORS,
    law=temperature_law,
    targets=temperature_targets,
    distribution_cases=temperature_distribution_cases,
    examples=TEMPERATURE_REGRESSIONS,
))
