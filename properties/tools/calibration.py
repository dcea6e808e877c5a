"""Measured error rates of the sampling check, against what SamplingPlan states.

    python -m samplecheck.tools.calibration [--runs 2000] [--power-runs 300] [--write docs/statistics.md]

False alarms: the full sampling check of tests/cover/test_distribution.py (support,
reachability, G-test with remainder bucket; `samplecheck.judging.stats.check_samples`) on a correct
law, repeated with fresh seeds at a large alpha (1e-2) so the count of rejections is
meaningful; the observed rate is compared with alpha through a Clopper-Pearson interval.
Power: the same check at the gate's alpha (1e-6) with the planned sample count, the sampled
law carrying an injected defect; the observed detection rate (and which check fired) is
compared with the G-test's power predicted by the noncentral chi-square for that defect
under the test's actual binning (the excess test adds to it).
"""

import argparse
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from scipy import stats as scipy_stats

from samplecheck.oracles.top_k_top_p import top_k_top_p_reference
from samplecheck.judging.stats import SamplingPlan, check_samples, g_test

VOCAB = 512


def _law(logits: torch.Tensor) -> torch.Tensor:
    return torch.softmax(logits.double(), dim=-1)


def nucleus_law(logits: torch.Tensor, p: float, extra: int = 0) -> torch.Tensor:
    """The top-p law of one row (fp64 oracle), optionally keeping `extra` tokens past the cut."""
    kept = top_k_top_p_reference(logits[None], None, torch.tensor([p]), band=0.0).kept[0]
    if extra:
        order = logits.argsort(descending=True)
        kept[order[: int(kept.sum()) + extra]] = True
    return _law(logits.masked_fill(~kept, float("-inf")))


@dataclass(frozen=True)
class Defect:
    name: str
    null: torch.Tensor     # the oracle law
    sampled: torch.Tensor  # the law the defective kernel samples from


def defects(seed: int = 0) -> list[Defect]:
    """The four injected defects of issue 4 and finding F10's, on a V=512 row of randn * 2 logits."""
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(VOCAB, generator=gen, dtype=torch.float64) * 2
    base = _law(logits)
    drop = int((base - 0.005).abs().argmin())  # the token whose mass is closest to 0.5%
    missing = base.clone()
    missing[drop] = 0
    boost = int((base - 0.01).abs().argmin())
    doubled = base.clone()
    doubled[boost] *= 2
    small = int(base.argmin())  # the F10 shape: a row's missing 0.35% given to one small token
    shifted = base * (1 - 0.0035)
    shifted[small] += 0.0035
    return [
        Defect(f"0.5% of the mass removed (token of p={base[drop]:.4f})", base, missing / missing.sum()),
        Defect(f"one token at 2x (p0={base[boost]:.4f})", base, doubled / doubled.sum()),
        Defect("top-p (0.9) boundary moved by one token", nucleus_law(logits, 0.9), nucleus_law(logits, 0.9, extra=1)),
        Defect("temperature 1% off (T=1 vs 1.01)", base, _law(logits / 1.01)),
        Defect(f"0.35% of the mass moved to the smallest token (p={base[small]:.1e})", base, shifted),
    ]


def verdicts(null: torch.Tensor, sampled: torch.Tensor, plan: SamplingPlan, runs: int, seed: int) -> list:
    """`runs` independent sampling checks of draws from `sampled` against `null`."""
    gen = torch.Generator().manual_seed(seed)
    draws = torch.multinomial(sampled.expand(runs, -1), plan.samples, replacement=True, generator=gen)
    counts = torch.zeros(runs, sampled.numel(), dtype=torch.int64).scatter_add_(1, draws, torch.ones_like(draws))
    return [check_samples(c, null, null > 0, null > 0, plan) for c in counts]


def predicted_power(null: torch.Tensor, sampled: torch.Tensor, plan: SamplingPlan) -> float:
    """Power from the noncentral chi-square, with lambda = n * sum (q_b - p_b)^2 / p_b over the
    bins the G-test forms for this null at this n."""
    binned = g_test(sampled * plan.samples, null, max_bins=plan.max_bins)
    p_bin = np.array([float(null[list(b)].sum()) for b in binned.bins])
    q_bin = np.array([float(sampled[list(b)].sum()) for b in binned.bins])
    lam = plan.samples * float(((q_bin - p_bin) ** 2 / p_bin).sum())
    crit = scipy_stats.chi2.isf(plan.share, binned.df)
    return float(scipy_stats.ncx2.sf(crit, binned.df, lam))


def interval(k: int, n: int) -> str:
    ci = scipy_stats.binomtest(k, n).proportion_ci(confidence_level=0.95)
    return f"{k / n:.4f} [{ci.low:.4f}, {ci.high:.4f}]"


def report(runs: int, power_runs: int) -> str:
    lines = ["## False-alarm rate (correct kernel law, nominal alpha 1e-2)", "",
             "| law | runs | n per run | rejections | observed rate [95% CI] |", "|---|---|---|---|---|"]
    plan = SamplingPlan(alpha=1e-2)
    cases = defects()
    for label, law in (("full softmax", cases[0].null), ("top-p 0.9 nucleus", cases[2].null)):
        k = sum(v.rejected for v in verdicts(law, law, plan, runs, seed=1))
        lines.append(f"| {label} (V={VOCAB}) | {runs} | {plan.samples} | {k} | {interval(k, runs)} |")
    plan = SamplingPlan(alpha=1e-6)
    lines += ["", f"## Power at the gate's alpha 1e-6 (n = {plan.samples} per run; reachability floor "
              f"{plan.reach_floor:.2g}; planned: G-test power >= {plan.power} against {plan.missing_mass:.1%} "
              "missing mass in a bin of its own)", "",
              "| injected defect | runs | predicted G-test power | detected [95% CI] | by |", "|---|---|---|---|---|"]
    for i, d in enumerate(cases):
        results = verdicts(d.null, d.sampled, plan, power_runs, seed=10 + i)
        k = sum(v.rejected for v in results)
        by = sorted({v.fired for v in results} - {""})
        lines.append(f"| {d.name} | {power_runs} | {predicted_power(d.null, d.sampled, plan):.4f} | "
                     f"{interval(k, power_runs)} | {', '.join(by) or '-'} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    from samplecheck.tools import flags

    parser = flags.parser("calibration", __doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--power-runs", type=int, default=300)
    parser.add_argument("--write", type=Path, default=None, help="append the tables to this Markdown file")
    args = parser.parse_args(argv)
    text = report(args.runs, args.power_runs)
    print(text)
    if args.write:
        with args.write.open("a") as f:
            f.write("\n" + text + "\n")


if __name__ == "__main__":
    main()
