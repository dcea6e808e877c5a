"""The rare-events check's stated power, measured the way samplecheck.tools.calibration
measures the sampling check's: draws from a known law (torch.multinomial, CPU), a synthetic
fault of the class injected at a per-draw rate, the check run TRIALS times, detections
counted. Each fault's rate is the one where the stated power is 1/2 (where a wrong statement
shows most); the detections must agree with the statement (two-sided binomial test), and
without a fault the check must stay within its false-alarm rate. Deterministic (fixed
generator seeds); `-s` prints the numbers, recorded in docs/nightly.md."""

import pytest
import torch
from scipy import stats

from samplecheck.judging.rare_events import (check_rare_events, power_excess, power_outside, reachable_rate)

VOCAB, MASKED, DRAWS, TRIALS, ALPHA = 1000, 250, 2**16, 200, 1e-3


def law() -> torch.Tensor:
    """fp64 [V]: the first MASKED ids masked (mass 0), the rest softmax of 2 * N(0, 1)."""
    scores = 2 * torch.randn(VOCAB, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    scores[:MASKED] = float("-inf")
    return torch.softmax(scores, dim=0)


def detections(fault_ids: torch.Tensor | None, rate: float) -> int:
    """Trials (of TRIALS) the check rejects when each draw, at `rate`, is replaced by an id drawn
    uniformly from `fault_ids` (None: no fault)."""
    p = law()
    support = p > 0
    gen = torch.Generator().manual_seed(1)
    caught = 0
    for _ in range(TRIALS):
        ids = torch.multinomial(p, DRAWS, replacement=True, generator=gen)
        if fault_ids is not None:
            hit = torch.rand(DRAWS, generator=gen) < rate
            ids[hit] = fault_ids[torch.randint(len(fault_ids), (int(hit.sum()),), generator=gen)]
        caught += check_rare_events(torch.bincount(ids, minlength=VOCAB), p, support, support, ALPHA).rejected
    return caught


def agrees(caught: int, power: float) -> bool:
    return stats.binomtest(caught, TRIALS, power).pvalue > 1e-3


def test_no_fault_stays_within_the_false_alarm_rate():
    caught = detections(None, 0.0)
    print(f"\nno fault: {caught} of {TRIALS} rejected (alpha {ALPHA})")
    assert stats.binom.sf(caught - 1, TRIALS, ALPHA) > 1e-3, f"{caught} false alarms in {TRIALS} at alpha {ALPHA}"


def test_a_fault_drawing_masked_ids_is_caught_as_stated():
    rate = reachable_rate(lambda r: power_outside(DRAWS, r), 0.5)
    caught = detections(torch.arange(MASKED), rate)
    print(f"\nmasked ids at rate {rate:.3g}: caught in {caught} of {TRIALS}, stated power 0.5")
    assert agrees(caught, 0.5), f"caught {caught} of {TRIALS}, stated power 0.5"


@pytest.mark.parametrize("which", ["least likely", "median"])
def test_a_fault_favouring_one_id_is_caught_as_stated(which):
    p = law()
    finite = torch.arange(MASKED, VOCAB)
    order = finite[p[finite].argsort()]
    token = int(order[0] if which == "least likely" else order[len(order) // 2])
    mass = float(p[token])
    rate = reachable_rate(lambda r: power_excess(DRAWS, r, mass, VOCAB - MASKED, ALPHA), 0.5)
    caught = detections(torch.tensor([token]), rate)
    print(f"\nid {token} ({which}, mass {mass:.3g}) at rate {rate:.3g}: caught in {caught} of {TRIALS}, stated 0.5")
    assert agrees(caught, 0.5), f"caught {caught} of {TRIALS}, stated power 0.5"
