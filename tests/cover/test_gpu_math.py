"""`samplecheck.harness.gpu_math`: the interpreter's fp32 `/` modelled as a GPU computes it (a
product with a reciprocal within an ulp), which a kernel correct on a GPU must tolerate; the CPU
reproducer of finding V12 (tests/cover/test_vllm_findings.py) and `--sc-gpu-math` use it."""

import subprocess
import sys

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from samplecheck.harness.gpu_math import gpu_exp, gpu_fp32_math, gpu_quotient
from samplecheck.inputs.recipes import LogitsRecipe, materialize
from samplecheck.kernels.top_k_top_p import apply_top_k_top_p
from samplecheck.oracles.top_k_top_p import top_k_top_p_reference
from samplecheck.oracles.ulp import ulp32

pytestmark = [pytest.mark.interpreter, pytest.mark.cpu_subject]


@triton.jit
def _ratios(x_ptr, out_ptr, exact_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < N, other=1.0)
    tl.store(out_ptr + offs, x / x, mask=offs < N)
    tl.store(exact_ptr + offs, tl.div_rn(x, x), mask=offs < N)


@triton.jit
def _exps(x_ptr, out_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < N, other=0.0)
    tl.store(out_ptr + offs, tl.exp(x), mask=offs < N)


def _ulps(got: np.ndarray, x: np.ndarray) -> np.ndarray:
    """|got - exp(x)| in units of the fp32 spacing at exp(x), as the H100's probe counted them."""
    exact = np.exp(x.astype(np.float64))
    return np.abs(got.astype(np.float64) - exact) / ulp32(torch.from_numpy(exact)).numpy()


def test_exp_is_off_as_a_gpus_is():
    """The model's exp on [-100, 0] is off by what an H100 measured for Triton's fp32 `tl.exp`
    (session 51, docs/runs/2026-12-07-h100-s51.md: at most 62.3 ulp, mean 10.3, above half an
    ulp for 86% of x; numpy's exp is within 2), the same on every call, and the H100's bits at a
    few values."""
    x = np.random.default_rng(0).uniform(-100, 0, 400_000).astype(np.float32)
    ulps = _ulps(gpu_exp(x), x)
    assert 50 < ulps.max() < 70 and 8 < ulps.mean() < 13 and 0.8 < (ulps > 0.5).mean() < 0.9
    assert _ulps(np.exp(x), x).max() < 3
    assert np.array_equal(gpu_exp(x), gpu_exp(x))
    # The H100's tl.exp at these x (exp(-1): torch's is 0.3678794801235199); at x = 2 its ex2.approx
    # itself is an ulp off the model's (not modelled).
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 0.5, -1.0], dtype=np.float32)
    on_the_h100 = np.array([1.0, 1.0, np.inf, 0.0, np.nan, 2.7182817459106445, 1.6487212181091309,
                            0.3678794503211975], dtype=np.float32)
    assert np.array_equal(gpu_exp(specials), on_the_h100, equal_nan=True)


def test_quotients_stay_within_two_ulp_and_exact_by_powers_of_two():
    """The model's quotients are within 2 ulp of the exact ones (PTX's bound for `div.full.f32`),
    the same on every call, exact where the divisor is a power of two (x / 1 is x), and numpy's
    at the special values."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(4096, dtype=np.float32), rng.standard_normal(4096, dtype=np.float32)
    exact, model = a / b, gpu_quotient(a, b)
    ulps = np.abs(model.view(np.int32).astype(np.int64) - exact.view(np.int32).astype(np.int64))
    assert ulps.max() <= 2 and 0.2 < (ulps > 0).mean() < 0.9
    assert np.array_equal(model, gpu_quotient(a, b))
    assert np.array_equal(gpu_quotient(a, np.float32(1)), a)
    assert np.array_equal(gpu_quotient(a, np.float32(0.25)), a * 4)
    specials = np.array([[0, 0], [1, 0], [np.inf, np.inf], [np.nan, 1], [1, np.inf], [3, 1e-40]], dtype=np.float32)
    with np.errstate(all="ignore"):
        expected = specials[:, 0] / specials[:, 1]
    assert np.array_equal(gpu_quotient(specials[:, 0], specials[:, 1]), expected, equal_nan=True)


def test_x_over_x_leaves_one_under_gpu_math_only():
    """A kernel's x / x is 1 with the interpreter's exact division, above or below 1 for some x
    under `gpu_fp32_math` (as on an H100: docs/findings-vllm.md, V12), never for `tl.div_rn`;
    the division in force before the block is back after it."""
    from triton.runtime.interpreter import InterpreterBuilder

    before = InterpreterBuilder.create_fdiv
    x = torch.linspace(1.0, 1000.0, 1024)
    out, exact = torch.empty_like(x), torch.empty_like(x)
    with gpu_fp32_math():
        _ratios[(1,)](x, out, exact, 1024, BLOCK=1024)
    assert bool((out > 1).any()) and bool((out < 1).any()) and bool((exact == 1).all())
    assert InterpreterBuilder.create_fdiv is before


def test_a_kernels_exp_is_the_models_under_gpu_math():
    """A kernel's `tl.exp` is `gpu_exp` inside `gpu_fp32_math`, and the exp in force before the
    block is back after it (numpy's outside: `test_kernels_follow_the_run_s_math`)."""
    from triton.runtime.interpreter import InterpreterBuilder

    before = InterpreterBuilder.create_exp
    x = torch.linspace(-100.0, 0.0, 1024)
    out = torch.empty_like(x)
    with gpu_fp32_math():
        _exps[(1,)](x, out, 1024, BLOCK=1024)
    assert np.array_equal(out.numpy(), gpu_exp(x.numpy())) and InterpreterBuilder.create_exp is before


def test_our_top_p_masks_peaked_rows_as_the_oracle_under_gpu_math():
    """Our top-p decides by integer masses, not by a quotient: the rows V12 leaves unmasked under
    a GPU's division are masked here as the oracle masks them."""
    logits = materialize(LogitsRecipe(512, 8193, "peaked", 3.0, seed=0), torch.float32, "cpu")[:16]
    p = torch.full((16,), 0.5)
    with gpu_fp32_math():
        out = apply_top_k_top_p(logits.clone(), None, p)
    kept = top_k_top_p_reference(logits, None, p).kept
    assert torch.equal(out > float("-inf"), kept)


def test_kernels_follow_the_run_s_math(request):
    """Under `--sc-gpu-math` every test's kernels divide and exponentiate as a GPU does; without
    it, as numpy does (`test_the_option_reaches_the_kernels` runs this test both ways)."""
    x = torch.linspace(1.0, 1000.0, 1024)
    out, exact = torch.empty_like(x), torch.empty_like(x)
    _ratios[(1,)](x, out, exact, 1024, BLOCK=1024)
    _exps[(1,)](-x / 10, exact, 1024, BLOCK=1024)
    on = request.config.getoption("--sc-gpu-math")
    assert bool((out == 1).all()) is not on
    assert np.array_equal(exact.numpy(), (gpu_exp if on else np.exp)((-x / 10).numpy()))


@pytest.mark.parametrize("option", [[], ["--sc-gpu-math"]])
def test_the_option_reaches_the_kernels(tmp_path, option):
    from samplecheck.harness.suite_files import config_args, suite_path

    result = subprocess.run(
        [sys.executable, "-m", "pytest",
         f"{suite_path() / 'test_gpu_math.py'}::test_kernels_follow_the_run_s_math", *config_args(),
         "-p", "no:cacheprovider", "-p", "no:xdist", "--sc-device=cpu", *option],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "1 passed" in result.stdout, result.stdout[-2000:]
