"""Tests for samplecheck.judging.stats: planner numbers from the reference, G-test binning and power, the excess
test, support, seeds."""

import numpy as np
import pytest
import torch
from scipy import stats

from samplecheck.judging.laws import condition_on_kept
from samplecheck.judging.stats import (
    SamplingPlan,
    check_samples,
    excess_test,
    g_test,
    lambda_missing_mass,
    lambda_token_doubled,
    noncentrality_for_power,
    plan_samples,
    power_of,
    seed_from_id,
    support_violations,
)

ALPHA, POWER = 1e-6, 0.99

# Reference section 5, "Samples n for power 0.99 at alpha = 1e-6": (lambda1, n at df 1, 19, 99).
PLAN_ROWS = [
    pytest.param(lambda_missing_mass(0.005), (10_368, 17_055, 28_280), id="0.5%-dropped"),
    pytest.param(lambda_missing_mass(0.01), (5_158, 8_485, 14_069), id="1%-dropped"),
    pytest.param(lambda_token_doubled(0.05), (990, 1_629, 2_701), id="p0=0.05-doubled"),
    pytest.param(lambda_token_doubled(0.001), (52_048, 85_615, 141_966), id="p0=0.001-doubled"),
]


@pytest.mark.parametrize("lambda1, expected", PLAN_ROWS)
def test_plan_samples_reproduces_reference_table(lambda1, expected):
    got = tuple(plan_samples(df, ALPHA, POWER, lambda1) for df in (1, 19, 99))
    assert all(abs(g - e) <= 1 for g, e in zip(got, expected)), (got, expected)


@pytest.mark.parametrize("lambda1, expected", PLAN_ROWS)
@pytest.mark.parametrize("df", [1, 19, 99])
def test_plan_is_minimal_sample_size_with_the_power(lambda1, expected, df):
    n = plan_samples(df, ALPHA, POWER, lambda1)
    assert power_of(n, df, ALPHA, lambda1) >= POWER
    assert power_of(n - 1, df, ALPHA, lambda1) < POWER


@pytest.mark.parametrize(
    "df, alpha, power, expected",
    [(1, 1e-3, 0.99, 31.5), (19, 1e-6, 0.999, 101.3), (99, 1e-8, 0.99, 164.1), (99, 1e-8, 0.999, 187.4)],
)
def test_noncentrality_matches_reference_lambda_star(df, alpha, power, expected):
    assert noncentrality_for_power(df, alpha, power) == pytest.approx(expected, abs=0.05)


@pytest.mark.parametrize("df, alpha, power", [(0, 1e-6, 0.99), (1, 0.5, 0.4), (1, 1e-6, 1.0)])
def test_noncentrality_rejects_bad_arguments(df, alpha, power):
    with pytest.raises(ValueError):
        noncentrality_for_power(df, alpha, power)


def test_per_sample_noncentralities():
    assert lambda_missing_mass(0.005) == pytest.approx(0.005 + 0.005**2 / 0.995, rel=1e-15)
    assert lambda_token_doubled(0.05) == pytest.approx(0.05 / 0.95, rel=1e-15)


def _geometric(v=200, r=0.95):
    return r ** np.arange(v, dtype=np.float64)  # unnormalised on purpose: g_test renormalises


def test_g_test_accepts_samples_from_the_null():
    weights = _geometric()
    rng = np.random.default_rng(12345)
    counts = rng.multinomial(20_000, weights / weights.sum())
    res = g_test(counts, weights)
    assert res.df >= 2
    assert res.pvalue > 1e-3, res


def test_g_test_rejects_five_percent_token_removed():
    weights = _geometric()
    assert 0.045 < weights[0] / weights.sum() < 0.055
    q = weights.copy()
    q[0] = 0.0  # the kernel never samples token 0 and renormalises the rest
    rng = np.random.default_rng(12345)
    counts = rng.multinomial(20_000, q / q.sum())
    res = g_test(counts, weights)
    assert res.pvalue < 1e-6, res


def _flat_bf16_row_law(vocab=1994) -> np.ndarray:
    """Finding F10's law: a flat bf16 softmax (summing to 0.99645 at V = 1994) whose missing mass
    a sampler gives to the last id."""
    probs = torch.softmax(torch.zeros(vocab, dtype=torch.bfloat16), dim=-1).double().numpy()
    probs[-1] += 1.0 - probs.sum()
    return probs


def test_excess_test_finds_what_the_g_test_pools_away():
    plan = SamplingPlan(alpha=ALPHA)
    law = np.full(1994, 1 / 1994)
    counts = np.random.default_rng(10).multinomial(plan.samples, _flat_bf16_row_law())
    verdict = check_samples(counts, law, law > 0, law > 0, plan)
    assert verdict.gtest.pvalue > plan.share, "the last id sits in the G-test's remainder bin"
    assert verdict.excess.token == 1993 and verdict.excess.pvalue < plan.share, verdict.describe()
    assert verdict.rejected and verdict.fired == "excess"


def test_excess_test_accepts_samples_from_the_null():
    weights = _geometric()
    counts = np.random.default_rng(12345).multinomial(20_000, weights / weights.sum())
    res = excess_test(counts, weights)
    assert res.pvalue > 1e-3, res


def test_excess_test_allows_one_draw_at_the_fp32_resolution():
    """The gate's case (run 7): a V = 17 peaked row whose last id (mass ~1e-17) torch.multinomial
    on CUDA drew once in 18051 draws; rates below EXCESS_RATE_FLOOR are not claimed."""
    probs = np.full(17, 1e-17)
    probs[3] = 1.0
    counts = np.zeros(17, dtype=np.int64)
    counts[3], counts[16] = 18050, 1
    res = excess_test(counts, probs)
    assert res.pvalue > 1e-3, res
    counts[3], counts[16] = 18045, 6  # six draws at the floor's rate is another matter
    assert excess_test(counts, probs).pvalue < 1e-12


def test_excess_test_is_the_adjusted_binomial_tail():
    probs = np.array([0.5, 0.3, 0.2, 0.0])
    res = excess_test(np.array([40, 30, 30, 0]), probs)
    assert (res.token, res.observed) == (2, 30)
    assert res.expected == pytest.approx(20.0, rel=1e-12)
    assert res.pvalue == pytest.approx(3 * stats.binom.sf(29, 100, 0.2), rel=1e-9)


def test_g_test_statistic_is_the_likelihood_ratio():
    weights = _geometric(v=30, r=0.8)
    counts = np.random.default_rng(7).multinomial(5_000, weights / weights.sum())
    res = g_test(torch.as_tensor(counts), torch.as_tensor(weights))
    o, e = res.observed, res.expected
    assert o.sum() == pytest.approx(e.sum(), rel=1e-12)
    assert res.statistic == pytest.approx(2 * np.sum(o * np.log(o / e)), rel=1e-9)
    assert res.pvalue == pytest.approx(stats.chi2.sf(res.statistic, res.df), rel=1e-9)
    assert res.df == len(res.bins) - 1


def test_g_test_bins_respect_max_bins_and_order():
    probs = np.linspace(2.0, 1.0, 100)  # strictly decreasing, every expected count large
    counts = np.full(100, 1_000)
    res = g_test(counts, probs, max_bins=5)
    assert res.bins == [(0,), (1,), (2,), (3,), (4,), tuple(range(5, 100))]
    assert res.df == 5


def test_g_test_ties_keep_lower_ids_first():
    res = g_test(np.full(100, 1_000), np.ones(100), max_bins=5)
    assert res.bins == [(0,), (1,), (2,), (3,), (4,), tuple(range(5, 100))]


def test_g_test_expected_equal_to_min_expected_gets_its_own_bin():
    probs = np.array([0.5, 0.25, 0.125, 0.125])  # n = 160: expected 80, 40, 20, 20 exactly
    res = g_test(np.array([80, 40, 20, 20]), probs, min_expected=20.0)
    assert res.bins == [(0,), (1,), (2,), (3,)]


def test_g_test_bins_respect_min_expected():
    weights = _geometric()
    counts = np.random.default_rng(3).multinomial(20_000, weights / weights.sum())
    res = g_test(counts, weights, min_expected=20.0, max_bins=1_000)
    assert np.all(res.expected >= 20.0)
    singles = [b[0] for b in res.bins if len(b) == 1]
    pooled = [t for b in res.bins if len(b) > 1 for t in b]
    n, p = counts.sum(), weights / weights.sum()
    assert np.all(n * p[singles] >= 20.0)
    assert np.all(n * p[pooled] < 20.0)
    assert sorted(singles + pooled) == list(range(200))


def test_g_test_merges_small_remainder_into_smallest_kept_bin():
    probs = np.array([500.0, 300.0, 100.0, 5.0, 5.0]) / 910.0
    counts = np.array([510, 290, 95, 8, 7])
    res = g_test(counts, probs)
    assert res.bins == [(0,), (1,), (2, 3, 4)]
    np.testing.assert_allclose(res.observed, [510, 290, 110])
    np.testing.assert_allclose(res.expected, [500, 300, 110])
    assert res.df == 2


def test_g_test_keeps_large_remainder_as_its_own_bin():
    probs = np.array([500.0, 300.0, 100.0, 30.0, 30.0])
    counts = np.array([500, 300, 100, 30, 30])
    res = g_test(counts, probs)
    assert res.bins == [(0,), (1,), (2,), (3,), (4,)]
    res = g_test(counts, probs, max_bins=2)
    assert res.bins == [(0,), (1,), (2, 3, 4)]
    assert res.statistic == 0.0 and res.pvalue == 1.0  # perfect fit: not nan


def test_g_test_excludes_zero_probability_tokens():
    probs = np.array([0.5, 0.0, 0.5])
    counts = np.array([400, 999, 600])
    res = g_test(counts, probs)
    assert res.bins == [(0,), (2,)]
    np.testing.assert_allclose(res.expected, [500.0, 500.0])
    assert res.pvalue < 1e-6


@pytest.mark.parametrize(
    "counts, probs",
    [
        pytest.param([1_000, 0], [1.0, 0.0], id="single-token-support"),
        pytest.param([5, 3, 2], [0.5, 0.3, 0.2], id="all-below-min-expected"),
        pytest.param([0, 0, 0], [0.5, 0.3, 0.2], id="no-samples"),
    ],
)
def test_g_test_single_bin_is_vacuous(counts, probs):
    res = g_test(np.array(counts), np.array(probs))
    assert len(res.bins) == 1
    assert (res.statistic, res.pvalue, res.df) == (0.0, 1.0, 0)


def test_g_test_rejects_mismatched_or_invalid_input():
    with pytest.raises(ValueError):
        g_test(np.ones(3), np.ones(4))
    with pytest.raises(ValueError):
        g_test(np.ones(2), np.array([0.5, -0.1]))
    with pytest.raises(ValueError):
        g_test(np.ones(2), np.zeros(2))


def test_support_violations_finds_out_of_support_and_out_of_range_ids():
    allowed = torch.tensor([True, True, False, True, False, True])  # allowed[-1] is True: no wrap-around
    samples = torch.tensor([0, 1, 2, 4, -1, 7, 7, 3, 2, 6, 5])
    assert support_violations(samples, allowed) == [-1, 2, 4, 6, 7]
    assert support_violations(samples.numpy(), allowed.numpy()) == [-1, 2, 4, 6, 7]


def test_support_violations_empty_when_all_samples_allowed():
    allowed = np.array([True, False, True])
    assert support_violations(np.array([0, 2, 2, 0]), allowed) == []
    assert support_violations(np.array([], dtype=np.int64), allowed) == []


def test_seed_from_id_is_a_stable_known_answer():
    # sha256-based: a fixed value across processes and Python versions (hash() would be salted).
    assert seed_from_id("a") == 5374906597990186443
    assert seed_from_id("tests/x.py::test_y[1]") == seed_from_id("tests/x.py::test_y[1]")


def test_seed_from_id_differs_between_ids_and_is_in_range():
    ids = [f"tests/test_sampling.py::test_top_k[{i}]" for i in range(1_000)]
    seeds = [seed_from_id(i) for i in ids]
    assert len(set(seeds)) == len(ids)
    assert all(0 <= s < 2**63 - 1 for s in seeds)
    torch.Generator().manual_seed(seeds[0])  # usable as a torch seed


def test_a_law_conditioned_on_the_kept_set_judges_the_set_chosen():
    """Four tied ids of which any may be kept (position-cut ties): drawing from the two a
    backend kept passes once the law is conditioned on them, fails against the guess of all
    four, and an undetermined law still gets its support and reachability tested."""
    plan = SamplingPlan(alpha=ALPHA)
    law = torch.tensor([0.25, 0.25, 0.25, 0.25, 0.0], dtype=torch.float64)
    support, required = law > 0, torch.zeros(5, dtype=torch.bool)
    kept = torch.tensor([True, False, True, False, False])
    counts = torch.from_numpy(np.random.default_rng(4).multinomial(plan.samples, [0.5, 0, 0.5, 0, 0]))
    assert check_samples(counts, law, support, required, plan).rejected
    given = condition_on_kept(law, support, required, kept)
    assert given.tolist() == [0.5, 0.0, 0.5, 0.0, 0.0]
    assert not check_samples(counts, given, support, required, plan).rejected
    counts[4] = 1
    verdict = check_samples(counts, given, support, required, plan, rates=False)
    assert verdict.fired == "support" and verdict.gtest.pvalue == 1.0
