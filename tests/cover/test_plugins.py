"""Implementations from outside the repo plug in with --sc-backend / entry points."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings

from samplecheck.harness import plugins
from samplecheck.harness.registry import RECORDS, Backend, Combo
from samplecheck.inputs.strategies import Budget

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "external_topk"


def test_backend_option_parses_and_reads_declared_support():
    kernel, backend = plugins.parse_backend_option("top_k_top_p=samplecheck.kernels.top_k_top_p_torch:apply_top_k_top_p_torch")
    assert (kernel, backend.name, backend.devices, backend.error_messages) == (
        "top_k_top_p", "apply_top_k_top_p_torch", ("cpu", "cuda"), False)


@pytest.mark.parametrize("text", ["top_k_top_p", "top_k_top_p=", "top_k_top_p=samplecheck.kernels.top_k_top_p_torch"])
def test_backend_option_rejects_malformed(text):
    with pytest.raises(ValueError, match="package.module:callable"):
        plugins.parse_backend_option(text)


DECLARED_TARGET = "samplecheck.kernels.top_k_top_p_torch:apply_top_k_top_p_torch"


def _declaring(monkeypatch, declaration: dict) -> None:
    """DECLARED_TARGET's callable carries `declaration` for this test."""
    monkeypatch.setattr(Backend("x", DECLARED_TARGET).resolve(), "samplecheck", declaration, raising=False)


def test_fixed_vocabs_declaration_draws_only_the_declared_sizes(monkeypatch):
    _declaring(monkeypatch, {"fixed_vocabs": (17, 8193)})
    backend = plugins.backend_from_target("declared", DECLARED_TARGET)
    combo = Combo(RECORDS["top_k_top_p"], backend, torch.float32, "contig")
    budget = Budget(max_elements=2**16, max_batch=4, max_random_vocab=2048)

    @settings(max_examples=30, database=None)
    @given(case=combo.info.cases(budget))
    def vocab_is_declared(case):
        assert case.logits.vocab in (17, 8193)

    vocab_is_declared()


@pytest.mark.parametrize("declared", [(), (0, 17), ("8192",)])
def test_fixed_vocabs_declaration_rejects_malformed(monkeypatch, declared):
    _declaring(monkeypatch, {"fixed_vocabs": declared})
    with pytest.raises(ValueError, match="fixed_vocabs must be True, False or a non-empty tuple"):
        plugins.backend_from_target("declared", DECLARED_TARGET)


def test_unknown_mutant_is_rejected():
    with pytest.raises(ValueError, match="--sc-mutant must be one of"):
        plugins.mutant_backend("no_such_mutant")


def test_example_package_passes_the_suite_alone(device):
    """The example under examples/ runs the whole fast suite as the only backend, and passes."""
    command = [sys.executable, "-m", "pytest", "tests/cover", "-p", "no:cacheprovider", "-p", "no:xdist", "-q",
               f"--sc-device={device.type}", "--sc-profile=ci", "--sc-backend-only",
               "--sc-backend", "top_k_top_p=external_topk:top_k_top_p_mask", "-k", "not test_plugins"]
    # The example alone: the vLLM pack (plugged when SAMPLECHECK_VLLM_KERNELS is set) stays out.
    env = {**{k: v for k, v in os.environ.items() if k != "SAMPLECHECK_VLLM_KERNELS"}, "PYTHONPATH": f"{EXAMPLE}:{ROOT}"}
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env, timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "passed" in result.stdout.splitlines()[-1]

