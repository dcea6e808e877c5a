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

from samplecheck.families.errors import INF, NAN, dtype_message, floats, logits_errors, rejected, row_shape
from samplecheck.families.values import TemperatureCase, check_probabilities, softmax_cases, temperature_args
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.oracles.softmax import softmax_reference
from samplecheck.registry.matrix import register
from samplecheck.registry.records import Backend, KernelInfo, Oracle, RegressionExample, beyond_memory_bound, per_dtype

SOFTMAX_ERRORS = (
    logits_errors(temperature=floats([0.5, 2.0]))
    + rejected("temperature", ValueError, r"temperature must be finite and > 0", {
        "temperature 0": floats([0.5, 0.0]), "negative temperature": floats([0.5, -0.1]),
        "infinite temperature": floats([INF, 1.0]), "NaN temperature": floats([1.0, NAN])})
    + rejected("temperature", TypeError, dtype_message("temperature", "float32"), {
        "float64 temperature": floats([0.5, 0.5], torch.float64)})
    + rejected("temperature", ValueError, row_shape("temperature"), {
        "temperature of wrong length": floats([0.5, 0.5, 0.5])})
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
            beyond_memory_bound("the PyTorch path upcasts to fp32 and divides out of place (by design)"),),
            capturable=True,  # upcast, divide, softmax: no host sync
            batch_invariant=False),  # torch.softmax on CUDA reduces a row in a batch-dependent order (F16)
    ),
    cases=softmax_cases, make_args=temperature_args,
    reference=Oracle(softmax_reference, tolerance="unit"),
    check=check_probabilities,
    tolerance=per_dtype(2.0**-24),  # u, fp32's unit roundoff
    semantics={"compute": "fp32 from the exact inputs", "temperature": "finite and > 0, per row",
               "output": "fp32 probabilities [B, V]"},
    error_inputs=SOFTMAX_ERRORS,
    examples=SOFTMAX_REGRESSIONS,
    in_place=False,
    extra_memory=softmax_memory,
))
