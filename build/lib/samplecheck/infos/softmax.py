"""Registry record for softmax with temperature: probs = softmax(l / T) per row, fp32 [B, V],
not in place (the input stays bitwise unchanged).

Contract: `fn(logits, temperature=None) -> fp32 [B, V]`; logits [B, V] fp32/bf16/fp16,
any row stride, column stride 1; temperature float32 [B], finite and > 0 (None: T = 1).
Oracle: samplecheck.oracles.softmax (fp64), with the per-entry error bound of an fp32 computation
derived there: |p - q| <= q * expm1(u (5 (|z_i| + |max z|) + V / 256 + 40)) + 2**-125,
z = l / T, u = 2**-24 for every logits dtype (the inputs are exact; the computation is
fp32 whatever the input dtype). The record's tolerance is that u.

Cases: the temperature record's recipes and per-row pools without T = 0 (greedy has no
softmax) and without the extremes (a subnormal T overflows fp32 l / T to inf, where an
fp32 softmax gives NaN and fp64 does not: outside the contract).
"""

import torch
from hypothesis import strategies as st

from samplecheck.oracles.softmax import SoftmaxReference, softmax_reference
from samplecheck.backends.flashinfer import backend as flashinfer_backend, contiguity_marks
from samplecheck.infos.temperature import MAX_POOL, TemperatureCase, temperature_args, temperature_values
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.harness.registry import (ALL_DTYPES, Backend, ErrorInput, KernelInfo, Mark, RegressionExample, register,
                                 tensor_on, zeros_on)
from samplecheck.inputs.strategies import Budget, logits_recipes

UNIT = 2.0**-24


@st.composite
def softmax_cases(draw, budget: Budget, max_vocab: int | None = None) -> TemperatureCase:
    recipe = draw(logits_recipes(budget, max_vocab))
    positive = temperature_values(extremes=False).filter(lambda t: t > 0)
    pool = draw(st.lists(positive, min_size=1, max_size=MAX_POOL).map(tuple))
    return TemperatureCase(recipe, pool)


def softmax_ref(logits, semantics, tolerance, *, temperature):
    return softmax_reference(logits, temperature, unit=tolerance)


def softmax_check(original, output, reference: SoftmaxReference, what):
    """fp32 [B, V]; on rows with a law, every |p - q| within the oracle's bound (NaN fails)."""
    assert isinstance(output, torch.Tensor) and output.dtype == torch.float32 and output.shape == original.shape, (
        f"{what}: expected fp32 {tuple(original.shape)}, got {getattr(output, 'dtype', type(output).__name__)} "
        f"{tuple(getattr(output, 'shape', ()))}")
    rows = reference.defined
    p = output.to(torch.float64)
    error = (p - reference.probs).abs()
    wrong = (~(error <= reference.bound)) & rows[:, None]
    if bool(wrong.any()):
        where = [tuple(int(i) for i in w) for w in wrong.nonzero()[:5].cpu()]
        detail = [f"{w}: logit {float(original[w])!r}, got {float(output[w])!r}, fp64 {float(reference.probs[w])!r}, "
                  f"bound {float(reference.bound[w]):.3e}" for w in where]
        raise AssertionError(f"{what}: {int(wrong.sum())} of {wrong.numel()} probabilities outside the fp32 error "
                             f"bound; " + "; ".join(detail))




def _call(logits, temperature):
    return lambda device: ((logits(device),), {"temperature": temperature(device)})


_T_RANGE = r"temperature must be finite and > 0"
SOFTMAX_ERRORS = (
    ErrorInput("1-D logits", _call(zeros_on(8), tensor_on([0.5], torch.float32)), ValueError, r"logits must be 2-D"),
    ErrorInput("float64 logits", _call(zeros_on(2, 8, dtype=torch.float64), tensor_on([0.5, 2.0], torch.float32)),
               TypeError, r"logits dtype must be one of float32, bfloat16, float16"),
    ErrorInput("column-strided logits", _call(lambda d: zeros_on(2, 16)(d)[:, ::2], tensor_on([0.5, 2.0], torch.float32)),
               ValueError, r"column stride 1"),
    ErrorInput("temperature 0", _call(zeros_on(2, 8), tensor_on([0.5, 0.0], torch.float32)), ValueError, _T_RANGE),
    ErrorInput("negative temperature", _call(zeros_on(2, 8), tensor_on([0.5, -0.1], torch.float32)), ValueError, _T_RANGE),
    ErrorInput("infinite temperature", _call(zeros_on(2, 8), tensor_on([float("inf"), 1.0], torch.float32)),
               ValueError, _T_RANGE),
    ErrorInput("NaN temperature", _call(zeros_on(2, 8), tensor_on([1.0, float("nan")], torch.float32)),
               ValueError, _T_RANGE),
    ErrorInput("float64 temperature", _call(zeros_on(2, 8), tensor_on([0.5, 0.5], torch.float64)),
               TypeError, r"temperature dtype must be one of float32"),
    ErrorInput("temperature of wrong length", _call(zeros_on(2, 8), tensor_on([0.5, 0.5, 0.5], torch.float32)),
               ValueError, r"temperature must have shape \[batch\] = \[2\]"),
)

SOFTMAX_REGRESSIONS = (
    # vllm#1623: T = 1e-4 on full-size rows (fp32 l / T ~ 1e4: one-hot-like rows), the clamp
    # value 0.01, identity and a plain T, on the padded opt-125m vocab.
    RegressionExample("vllm#1623 tiny temperatures at full vocab",
                      TemperatureCase(LogitsRecipe(batch=8, vocab=50272, family="randn", scale=1.0, seed=1623),
                                      (1e-4, 0.01, 1.0, 0.7)),
                      dtypes=(torch.bfloat16, torch.float32), layouts=("padded64",)),
)


def softmax_memory(logits, args):
    """The fp32 output, an fp32 upcast of the input and one fp32 intermediate (l / T)."""
    batch, vocab = logits.shape
    return 12 * batch * vocab


SOFTMAX = register(KernelInfo(
    name="softmax",
    backends=(
        Backend("torch", "samplecheck.kernels.sampling_torch:softmax_torch", marks=(
            Mark("skip", "the PyTorch path upcasts to fp32 and divides out of place (by design)",
                 test="test_memory_bound"),)),
        flashinfer_backend("flashinfer", "softmax", marks=contiguity_marks((torch.float32,))),
    ),
    cases=softmax_cases,
    make_args=temperature_args,
    reference=softmax_ref,
    check=softmax_check,
    dtypes=ALL_DTYPES,
    tolerance={dtype: UNIT for dtype in ALL_DTYPES},
    semantics={"compute": "fp32 from the exact inputs", "temperature": "finite and > 0, per row",
               "output": "fp32 probabilities [B, V]"},
    error_inputs=SOFTMAX_ERRORS,
    examples=SOFTMAX_REGRESSIONS,
    in_place=False,
    extra_memory=softmax_memory,
))
