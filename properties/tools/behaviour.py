"""Did the dtype-preserving bf16 sampler change the distribution? (the vLLM #48641 question)

    samplecheck behaviour [--device auto|cpu|cuda] [--rows N] [--report FILE.md]

For each setting (vocab size x temperature x top-k/top-p/min-p x penalties), the same
bf16 logits go through `samplecheck.kernels.sampling_params.apply_sampling_params` twice: once in
place on the bf16 tensor (every intermediate stored in bf16), once on an fp32 copy (the
pre-#48641 behaviour). Both processed tensors become fp64 softmax distributions p (bf16)
and q (fp32 copy), compared exactly, without sampling:
- TV = 1/2 sum |p - q| and KL(q || p) (inf when the bf16 path drops a token q keeps),
- the fraction of rows whose kept set (finite entries) differs,
- the samples a user would need to notice: the smaller of the support-check count
  (ln(1/(1 - power)) / p-mass outside q's support) and the G-test count planned by
  `samplecheck.judging.stats.plan_samples` (alpha 1e-6, power 0.99, df 20, the chi-square
  divergence sum (p - q)^2 / q as per-sample noncentrality).
Rows are LM-like logits (Gaussian, std 2.5, half of them with a dominant token), from
fixed seeds. The table reports the median and the worst row of each setting.
"""

import argparse
import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from samplecheck.judging.stats import plan_samples

ALPHA, POWER, DF = 1e-6, 0.99, 20
VOCABS = {"cpu": (32000, 50272), "cuda": (32000, 50272, 128256, 151936, 262144)}


@dataclass(frozen=True)
class Setting:
    name: str
    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    min_p: float | None = None
    penalties: bool = False


SETTINGS = (
    Setting("T=1 (plain)"),
    Setting("T=0.7", temperature=0.7),
    Setting("T=1.3", temperature=1.3),
    Setting("T=0.7 top-p 0.9", temperature=0.7, top_p=0.9),
    Setting("T=1 top-k 50 top-p 0.95", top_k=50, top_p=0.95),
    Setting("T=0.8 min-p 0.05", temperature=0.8, min_p=0.05),
    Setting("T=0.7 penalties", temperature=0.7, penalties=True),
    Setting("T=0.6 top-k 20 top-p 0.8 min-p 0.1 penalties", temperature=0.6, top_k=20, top_p=0.8, min_p=0.1,
            penalties=True),
)


def lm_logits(rows: int, vocab: int, device, seed: int) -> torch.Tensor:
    """bf16 [rows, vocab]: N(0, 2.5^2), every other row with one token lifted by 8."""
    gen = torch.Generator(device=device).manual_seed(seed)
    x = torch.randn(rows, vocab, generator=gen, device=device) * 2.5
    top = torch.randint(0, vocab, (rows,), generator=gen, device=device)
    lifted = torch.arange(rows, device=device) % 2 == 0
    x[lifted, top[lifted]] += 8.0
    return x.to(torch.bfloat16)


def batch_params(setting: Setting, rows: int, vocab: int, device, seed: int):
    from samplecheck.kernels.sampling_params import SamplingBatch

    def full(value, dtype=torch.float32):
        return None if value is None else torch.full((rows,), value, dtype=dtype, device=device)

    extra = {}
    if setting.penalties:
        gen = torch.Generator(device=device).manual_seed(seed + 1)
        extra = dict(prompt_token_ids=torch.randint(0, vocab, (rows, 64), generator=gen, device=device),
                     output_token_ids=torch.randint(0, vocab, (rows, 32), generator=gen, device=device),
                     repetition_penalty=full(1.1), frequency_penalty=full(0.3), presence_penalty=full(0.2))
    return SamplingBatch(seeds=torch.arange(rows, device=device), positions=torch.zeros(rows, dtype=torch.int64,
                                                                                            device=device),
                         temperature=full(setting.temperature), top_k=full(setting.top_k, torch.int32),
                         top_p=full(setting.top_p), min_p=full(setting.min_p), **extra)


def samples_to_notice(p: torch.Tensor, q: torch.Tensor) -> float:
    """Samples from p that reveal p != q (reference q): support check or G-test (module doc)."""
    outside = float(p[q == 0].sum())
    on = q > 0
    divergence = float(((p[on] - q[on]) ** 2 / q[on]).sum())
    by_support = math.log(1 / (1 - POWER)) / outside if outside > 0 else math.inf
    by_gtest = plan_samples(DF, ALPHA, POWER, divergence) if divergence > 0 else math.inf
    return min(by_support, by_gtest)


def compare(setting: Setting, vocab: int, rows: int, device, seed: int) -> dict:
    from samplecheck.kernels.sampling_params import apply_sampling_params

    logits = lm_logits(rows, vocab, device, seed)
    params = batch_params(setting, rows, vocab, device, seed)
    in_bf16 = apply_sampling_params(logits.clone(), params).processed_logits.double()
    in_fp32 = apply_sampling_params(logits.float(), params).processed_logits.double()
    p, q = torch.softmax(in_bf16, dim=-1), torch.softmax(in_fp32, dim=-1)
    tv = 0.5 * (p - q).abs().sum(dim=-1)
    kl = torch.where(q > 0, q * (q.log() - p.log()), 0.0).sum(dim=-1)
    changed = (torch.isfinite(in_bf16) != torch.isfinite(in_fp32)).any(dim=-1)
    notice = [samples_to_notice(p[r], q[r]) for r in range(rows)]
    return {"tv": tv.tolist(), "kl": kl.tolist(), "changed": float(changed.double().mean()), "notice": notice}


def _fmt(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.2e}"


def report(device, rows: int) -> str:
    lines = ["| vocab | setting | TV median | TV max | KL median | KL max | kept set changed | "
             "samples to notice (median row) | (most affected row) |", "|" + "---|" * 9]
    for vocab in VOCABS[device.type]:
        for i, setting in enumerate(SETTINGS):
            r = compare(setting, vocab, rows, device, seed=1000 * vocab + i)
            lines.append(f"| {vocab} | {setting.name} | {_fmt(statistics.median(r['tv']))} | {_fmt(max(r['tv']))} | "
                         f"{_fmt(statistics.median(r['kl']))} | {_fmt(max(r['kl']))} | {r['changed']:.0%} | "
                         f"{_fmt(statistics.median(r['notice']))} | {_fmt(min(r['notice']))} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    from samplecheck.tools import flags

    parser = flags.parser("behaviour", __doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    flags.add_device(parser)
    parser.add_argument("--rows", type=int, default=None, help="rows per setting (default: cpu 4, cuda 64)")
    parser.add_argument("--report", type=Path, default=None, help="also write the table to this markdown file")
    args = parser.parse_args(argv)
    from samplecheck.kernels.runtime import use_device

    device = torch.device(use_device(flags.resolve_device(parser, args.device)))
    rows = args.rows or (64 if device.type == "cuda" else 4)
    start = time.perf_counter()
    table = report(device, rows)
    name = torch.cuda.get_device_name() if device.type == "cuda" else "CPU (Triton interpreter)"
    text = (f"bf16 in-place pipeline vs the same pipeline on an fp32 copy: {rows} rows per setting on {name}, "
            f"{time.perf_counter() - start:.0f} s\n\n{table}\n")
    print(text)
    if args.report:
        args.report.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
