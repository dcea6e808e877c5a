"""Registry record for temperature scaling (l / T per row, in place)."""

import torch

from samplecheck.families.errors import INF, NAN, dtype_message, every_other, floats, logits_errors, rejected, row_shape
from samplecheck.families.values import (TemperatureCase, ValueInfo, check_scaled, temperature_args, temperature_cases,
                                       temperature_distribution_cases, temperature_targets)
from samplecheck.inputs.off_encodings import TEMPERATURE_OFF
from samplecheck.inputs.recipes import LogitsRecipe
from samplecheck.oracles.temperature import temperature_reference
from samplecheck.registry.layouts import LAYOUTS
from samplecheck.registry.matrix import register
from samplecheck.registry.records import ALL_DTYPES, Oracle, RegressionExample, triton_and_torch

TEMPERATURE_ERRORS = (
    logits_errors(temperature=floats([0.5, 2.0]))
    + rejected("temperature", ValueError, r"temperature must be finite and >= 0", {
        "negative temperature": floats([0.5, -0.1]), "temperature -1": floats([-0.0, -1.0]),
        "infinite temperature": floats([INF, 1.0]), "NaN temperature": floats([1.0, NAN])})
    + rejected("temperature", ValueError, r"temperature must be contiguous", {
        "strided temperature": every_other([0.5, 1.0, 2.0, 1.0])})
    + rejected("temperature", TypeError, dtype_message("temperature", "float32"), {
        "float64 temperature": floats([0.5, 0.5], torch.float64),
        "bfloat16 temperature": floats([0.5, 0.5], torch.bfloat16)})
    + rejected("temperature", ValueError, row_shape("temperature"), {
        "temperature of wrong length": floats([0.5, 0.5, 0.5]), "2-D temperature": floats([[0.5], [0.5]])})
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

TEMPERATURE = register(ValueInfo(
    name="temperature",
    off_encodings=TEMPERATURE_OFF,
    backends=triton_and_torch("samplecheck.kernels.temperature:apply_temperature",
                              "samplecheck.kernels.temperature:apply_temperature_torch",
                              "the PyTorch fallback divides an fp32 copy of the scaled rows (by design)"),
    cases=temperature_cases, make_args=temperature_args, distribution_cases=temperature_distribution_cases,
    reference=Oracle(temperature_reference, tolerance="ulps"),
    check=check_scaled,
    # Admissible distance from the oracle in ulps of the logits' dtype: none. The oracle
    # reproduces the fp32 quotient exactly and rounds it like the kernel (samplecheck.oracles.temperature).
    tolerance={torch.float32: 0, torch.bfloat16: 0, torch.float16: 0},
    semantics={"division": "fp32 IEEE round-to-nearest, then round-to-nearest-even to the logits' dtype",
               "greedy": "T == 0 rows unchanged", "identity": "T == 1 rows bitwise unchanged",
               "overflow": "l / T may be +-inf (no clamp); never NaN from finite l"},
    error_inputs=TEMPERATURE_ERRORS,
    targets=temperature_targets,
    examples=TEMPERATURE_REGRESSIONS,
))
