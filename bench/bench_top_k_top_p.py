"""Benchmark: top-k/top-p, our Triton kernels vs the PyTorch sort-based fallback and FlashInfer.

    PYTHONPATH=. python bench/bench_top_k_top_p.py [--out FILE.md]

Needs a CUDA GPU; the FlashInfer columns need flashinfer (else "n/a"). Inputs: bf16 logits
from randn, per-row tensors k = 50 and p = 0.9 (the sizes of
shared/reference/performance-anchors.md). Columns:
- mask k+p: in-place masking, ours (samplecheck.kernels.top_k_top_p) and the torch sort fallback;
- mask k: top-k alone, ours (p off) and flashinfer.sampling.top_k_mask_logits (int32 k
  tensor; out of place, so no restore);
- sample k+p: one id per row from the masked logits, ours (mask, then samplecheck.kernels.gumbel) and
  flashinfer.sampling.top_k_top_p_sampling_from_logits (joint order, deterministic, out of
  place).
The in-place calls first restore the logits from a pristine copy; the copy alone is timed
too and subtracted ("net"). Figures are medians of triton.testing.do_bench(warmup=25, rep=100).
"""

import argparse
import importlib.util
from pathlib import Path

import torch
import triton

from samplecheck.kernels.gumbel import gumbel_sample
from samplecheck.kernels.top_k_top_p import apply_top_k_top_p
from samplecheck.kernels.top_k_top_p_torch import apply_top_k_top_p_torch

SHAPES = [(1, 32000), (64, 32000), (256, 32000), (1024, 32000),
          (1, 151936), (64, 151936), (256, 151936), (1024, 151936)]
COLUMNS = ("restore copy", "ours mask k+p (net)", "torch mask k+p (net)", "ours mask k (net)",
           "flashinfer mask k", "ours sample k+p (net)", "flashinfer sample k+p", "read once at 4.3 TB/s")


def time_us(fn) -> float:
    return 1000 * triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def row(batch: int, vocab: int, gen: torch.Generator, fi) -> list[str]:
    """The COLUMNS for one shape, formatted."""
    pristine = torch.randn(batch, vocab, generator=gen, device="cuda").bfloat16()
    work = torch.empty_like(pristine)
    k = torch.full((batch,), 50, dtype=torch.int64, device="cuda")
    k32 = k.int()
    p = torch.full((batch,), 0.9, dtype=torch.float32, device="cuda")
    seeds = torch.arange(batch, device="cuda")
    positions = torch.zeros(batch, dtype=torch.int64, device="cuda")
    copy = time_us(lambda: work.copy_(pristine))

    def net(fn) -> str:
        return f"{time_us(fn) - copy:.1f} us"

    def flashinfer(fn) -> str:
        return f"{time_us(fn):.1f} us" if fi else "n/a"

    return [
        f"{copy:.1f} us",
        net(lambda: apply_top_k_top_p(work.copy_(pristine), k, p)),
        net(lambda: apply_top_k_top_p_torch(work.copy_(pristine), k, p)),
        net(lambda: apply_top_k_top_p(work.copy_(pristine), k, None)),
        flashinfer(lambda: fi.top_k_mask_logits(pristine, k32)),
        net(lambda: gumbel_sample(apply_top_k_top_p(work.copy_(pristine), k, p), seeds=seeds, positions=positions)),
        flashinfer(lambda: fi.top_k_top_p_sampling_from_logits(pristine, k32, p, filter_apply_order="joint",
                                                                deterministic=True, seed=0, offset=0)),
        f"{pristine.numel() * pristine.element_size() / 4.3e12 * 1e6:.2f} us",
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    fi = importlib.import_module("flashinfer.sampling") if importlib.util.find_spec("flashinfer") else None
    gen = torch.Generator(device="cuda").manual_seed(0)
    versions = f"torch {torch.__version__}, triton {triton.__version__}"
    if fi:
        versions += f", flashinfer {importlib.import_module('flashinfer').__version__}"
    lines = [f"Device: {torch.cuda.get_device_name()}, {versions}", "",
             "| B x V | " + " | ".join(COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    for batch, vocab in SHAPES:
        lines.append(f"| {batch} x {vocab} | " + " | ".join(row(batch, vocab, gen, fi)) + " |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
