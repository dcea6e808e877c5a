"""Statistical checks for sampler outputs: sample-size planning, G-test, excess test, support check.

All distributions come from scipy.stats; formulas and reference numbers are in
section 5 of the testing-methods reference. The support check is exact (alpha = 0)
and should run before the goodness-of-fit test, which ignores zero-probability tokens.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats


def lambda_missing_mass(eps: float) -> float:
    """Per-sample noncentrality when mass `eps` (0 < eps < 1) is dropped and the rest renormalised."""
    return eps + eps**2 / (1.0 - eps)


def lambda_token_doubled(p0: float) -> float:
    """Per-sample noncentrality when a token of mass `p0` (0 < p0 < 0.5) is sampled at twice its rate."""
    return p0 / (1.0 - p0)


def noncentrality_for_power(df: int, alpha: float, power: float) -> float:
    """Total noncentrality lambda* at which a level-`alpha` chi2(df) test has the given power.

    Requires df >= 1 and 0 < alpha < power < 1. Solves ncx2.sf(chi2.isf(alpha, df), df, lam) == power.
    """
    if df < 1 or not 0.0 < alpha < power < 1.0:
        raise ValueError(f"need df >= 1 and 0 < alpha < power < 1, got {df=}, {alpha=}, {power=}")
    crit = stats.chi2.isf(alpha, df)

    def gap(lam: float) -> float:
        return stats.ncx2.sf(crit, df, lam) - power

    hi = crit + df
    while gap(hi) <= 0.0:
        hi *= 2.0
    return optimize.brentq(gap, 0.0, hi, xtol=1e-10)


def plan_samples(df: int, alpha: float, power: float, lambda1: float) -> int:
    """Smallest n with n * lambda1 >= lambda*(df, alpha, power); lambda1 is the per-sample noncentrality."""
    return math.ceil(noncentrality_for_power(df, alpha, power) / lambda1)


def power_of(n: int, df: int, alpha: float, lambda1: float) -> float:
    """Power of a level-`alpha` chi2(df) test with n samples and per-sample noncentrality lambda1."""
    return float(stats.ncx2.sf(stats.chi2.isf(alpha, df), df, n * lambda1))


def reachability_floor(n: int, alpha: float) -> float:
    """Smallest eps with (1/eps) * (1 - eps)**n <= alpha: the chance that some token of mass
    >= eps (at most 1/eps of them) is never drawn in n samples is then <= alpha."""
    def excess(log_eps: float) -> float:
        eps = math.exp(log_eps)
        return -log_eps + n * math.log1p(-eps) - math.log(alpha)
    return math.exp(optimize.brentq(excess, math.log(1e-12), math.log(0.5)))


@dataclass(frozen=True)
class SamplingPlan:
    """A sampling check's stated error rates. False alarms <= `alpha` per check, split evenly
    (`share` each) between reachability (every token of mass >= `reach_floor` drawn at least
    once), a G-test over at most `max_bins` single-token bins plus a remainder (df <= max_bins)
    and the excess test (no token drawn far above its own rate); the support check (no draw
    outside the allowed set) has no false alarms. The sample count gives the G-test power >=
    `power` against a bin of `missing_mass` vanishing."""

    alpha: float
    power: float = 0.99
    missing_mass: float = 0.005
    max_bins: int = 20

    @property
    def share(self) -> float:
        return self.alpha / 3

    @property
    def samples(self) -> int:
        return plan_samples(self.max_bins, self.share, self.power, lambda_missing_mass(self.missing_mass))

    @property
    def reach_floor(self) -> float:
        return reachability_floor(self.samples, self.share)


@dataclass(frozen=True)
class SamplingVerdict:
    """Outcome of `check_samples`: ids drawn outside the support, ids of mass >= the
    reachability floor never drawn, the G-test and the excess test."""

    outside: list[int]
    unreached: list[int]
    gtest: "GTest"
    excess: "ExcessTest"
    plan: SamplingPlan

    @property
    def rejected(self) -> bool:
        return bool(self.fired)

    @property
    def fired(self) -> str:
        """Which check rejected: support, reachability, G or excess (the first that did), or ''."""
        for name, fires in (("support", self.outside), ("reachability", self.unreached),
                            ("G", self.gtest.pvalue < self.plan.share),
                            ("excess", self.excess.pvalue < self.plan.share)):
            if fires:
                return name
        return ""

    def record(self) -> list:
        """[G p, excess p, the level of each, the check that fired or '', G's degrees of
        freedom (0: one bin, the G-test is vacuous)]: what the nightly report records."""
        return [self.gtest.pvalue, self.excess.pvalue, self.plan.share, self.fired, self.gtest.df]

    def describe(self) -> str:
        g, e = self.gtest, self.excess
        return (f"outside support: {self.outside[:10]}; unreached (mass >= {self.plan.reach_floor:.2g}): "
                f"{self.unreached[:10]}; G = {g.statistic:.1f}, df {g.df}, p = {g.pvalue:.3g}; most excessive "
                f"token {e.token}: {e.observed} drawn, {e.expected:.1f} expected, p = {e.pvalue:.3g} (both reject "
                f"below {self.plan.share:.3g}); G bins observed {g.observed.tolist()}, expected "
                f"{[round(x, 1) for x in g.expected.tolist()]}")


# Callables given every verdict `check_samples` and `rare_events.check_rare_events` return
# (the nightly report records each one's `record()` this way); they observe, never change it.
VERDICT_OBSERVERS: list = []


def check_samples(counts, law, support, required, plan: SamplingPlan, *, rates: bool = True) -> SamplingVerdict:
    """Support, reachability, G-test and excess test of per-token draw `counts` against `law`
    (fp64, length V). `support` marks the ids that may be drawn; `required` those that must be
    drawn when their mass reaches the plan's floor (ids whose inclusion is ambiguous are in
    neither obligation). `rates=False`: the law is not determined (e.g. a sampler whose
    admissible kept sets differ by more mass than its draws can resolve): support and
    reachability only, the rate tests vacuous and not observed."""
    counts_np = _as_numpy(counts).astype(np.int64)
    law_np = _as_numpy(law).astype(np.float64)
    allowed = _as_numpy(support).astype(bool)
    needed = _as_numpy(required).astype(bool) & (law_np >= plan.reach_floor)
    outside = [int(t) for t in np.flatnonzero((counts_np > 0) & ~allowed)]
    unreached = [int(t) for t in np.flatnonzero(needed & (counts_np == 0))]
    if not rates:
        return SamplingVerdict(outside, unreached, GTest(0.0, 1.0, 0, [], np.zeros(0), np.zeros(0)),
                               ExcessTest(-1, 0, 0.0, 1.0), plan)
    verdict = SamplingVerdict(outside, unreached, g_test(counts_np, law_np, max_bins=plan.max_bins),
                              excess_test(counts_np, law_np), plan)
    for observe in VERDICT_OBSERVERS:
        observe(verdict)
    return verdict


@dataclass(frozen=True)
class GTest:
    """Result of `g_test`. bins[i] holds the token ids pooled into bin i (sorted ascending)."""

    statistic: float
    pvalue: float
    df: int
    bins: list[tuple[int, ...]]
    observed: np.ndarray
    expected: np.ndarray


def _as_numpy(x) -> np.ndarray:
    """1-D numpy view of a numpy array or (possibly GPU) torch tensor."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x).reshape(-1)


def _null(counts, probs):
    """(counts, probs renormalised in float64, ids of positive probability, samples on them),
    after checking that counts and probs have one length and probs is a distribution's weights."""
    obs = _as_numpy(counts).astype(np.float64)
    p = _as_numpy(probs).astype(np.float64)
    if obs.shape != p.shape:
        raise ValueError(f"counts and probs differ in length: {obs.shape} vs {p.shape}")
    if not (np.all(np.isfinite(p)) and np.all(p >= 0) and p.sum() > 0):
        raise ValueError("probs must be finite, non-negative and not all zero")
    support = np.flatnonzero(p > 0)
    return obs, p / p.sum(), support, obs[support].sum()


def g_test(counts, probs, *, min_expected: float = 20.0, max_bins: int = 20) -> GTest:
    """G-test (log-likelihood ratio) of per-token sample `counts` against null `probs` (length V each).

    probs is renormalised in float64 over its sum; tokens with prob 0 and their counts are excluded
    (use `support_violations` for them), so n = number of samples on positive-probability tokens.
    Bins: one per token with expected count n*p >= min_expected, at most `max_bins` of them (largest
    expected first, ties by lower id), plus one remainder bin holding every other positive-probability
    token; a remainder with expected count < min_expected is merged into the smallest kept bin.
    So there are at most max_bins + 1 bins and df = bins - 1. With a single bin the test is vacuous:
    statistic 0.0, pvalue 1.0, df 0.
    """
    obs, p, support, n = _null(counts, probs)
    order = support[np.argsort(-p[support], kind="stable")]
    n_kept = min(int(np.count_nonzero(n * p[order] >= min_expected)), max_bins)
    bins = [[int(t)] for t in order[:n_kept]]
    rest = sorted(int(t) for t in order[n_kept:])
    if rest:
        if bins and n * p[rest].sum() < min_expected:
            bins[-1] += rest
        else:
            bins.append(rest)
    labels = [tuple(sorted(b)) for b in bins]
    f_obs = np.array([obs[list(b)].sum() for b in labels])
    p_bin = np.array([p[list(b)].sum() for b in labels])
    f_exp = n * (p_bin / p_bin.sum())
    if len(labels) < 2:
        return GTest(0.0, 1.0, 0, labels, f_obs, f_exp)
    df = len(labels) - 1
    # G >= 0 in exact arithmetic; roundoff can leave about -1e-13 on a perfect fit, for which
    # scipy reports pvalue nan, so clamp and take the chi2(df) tail of the clamped value.
    g = max(float(stats.power_divergence(f_obs, f_exp, lambda_="log-likelihood").statistic), 0.0)
    return GTest(g, float(stats.chi2.sf(g, df)), df, labels, f_obs, f_exp)


@dataclass(frozen=True)
class ExcessTest:
    """Result of `excess_test`: the token least likely to be drawn as often as it was, its count,
    the count its (floored) rate expects, and that probability, Bonferroni-adjusted over the
    positive-probability tokens."""

    token: int
    observed: int
    expected: float
    pvalue: float


# The per-draw rate below which the excess test does not hold a token to its law: one step of
# an fp32 uniform in [0.5, 1), the resolution of samplers that draw fp32 uniforms (torch.multinomial
# on CUDA, which test_distribution uses for masking kernels, drew an id of mass 1e-17 once in
# 18051 draws: findings F12; FlashInfer's and our Gumbel sampler's uniforms are fp32 too).
EXCESS_RATE_FLOOR = 2.0**-24


def excess_test(counts, probs) -> ExcessTest:
    """One-sided per-token test of sample `counts` against null `probs` (length V each, renormalised
    in float64 over the positive ones, as in `g_test`): for each token t of probability p_t > 0,
    P(Binomial(n, max(p_t, EXCESS_RATE_FLOOR)) >= counts_t); returns the smallest, times the
    number of such tokens (capped at 1). It sees what the G-test's pooled remainder hides: one
    token of small mass drawn at a multiple of its rate (findings F10: 8x, one id in 1994);
    it claims nothing about rates below the floor."""
    obs, p, support, n = _null(counts, probs)
    rate = np.maximum(p[support], EXCESS_RATE_FLOOR)
    tails = stats.binom.sf(obs[support] - 1, int(n), rate)
    worst = int(np.argmin(tails))
    token = int(support[worst])
    return ExcessTest(token, int(obs[token]), n * float(rate[worst]), min(1.0, float(tails[worst]) * support.size))


def support_violations(samples, allowed) -> list[int]:
    """Sorted distinct sampled ids outside the bool mask `allowed` (length V), including ids outside [0, V).

    This is the exact support check (false-alarm rate 0).
    """
    ids = _as_numpy(samples).astype(np.int64)
    mask = _as_numpy(allowed).astype(bool)
    in_range = (ids >= 0) & (ids < mask.size)
    bad = ~in_range
    bad[in_range] = ~mask[ids[in_range]]
    return [int(t) for t in np.unique(ids[bad])]


def seed_from_id(test_id: str) -> int:
    """Seed in [0, 2**63 - 1) from sha256 of `test_id`; stable across processes and Python versions."""
    digest = hashlib.sha256(test_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % (2**63 - 1)
