"""The rare-events check: one row's draws in large numbers against its law, for faults that
show in a small fraction of draws (a per-draw event at rates around 1e-7 to 1e-5, e.g. a
rounding in a random-number path that draws a masked id, or that favours one id).

Two checks on the per-token counts of n draws of one row:
- support (exact, no false alarm): no draw of an id outside the law's support (an id masked
  by a filter, a -inf or NaN entry, an id outside [0, V));
- excess (`stats.excess_test`, per token, false alarms <= alpha): no token drawn far above
  its rate under the law, conditioned on the ambiguous ids the draws show kept (an ambiguous
  id never drawn is left out, which only raises the other ids' rates: no false alarm from
  ambiguity). Rates below `stats.EXCESS_RATE_FLOOR` are held to the floor.

Stated power of n draws against a fault that, at a per-draw rate r,
- draws an id outside the support: 1 - (1 - r)**n (`power_outside`);
- draws one id of law mass q instead of the row's law: P(Binomial(n, q + r) >= c), with c
  the smallest count the excess test rejects at alpha among m support ids (`power_excess`).
`reachable_rate` inverts either for a wanted power: the smallest rate a run of n draws
catches that often.
"""

import math
from dataclasses import dataclass

import torch
from scipy import optimize, stats

from samplecheck.judging.laws import condition_on_kept
from samplecheck.judging.stats import EXCESS_RATE_FLOOR, VERDICT_OBSERVERS, ExcessTest, excess_test


@dataclass(frozen=True)
class RareEventsVerdict:
    """Ids drawn outside the support, and the excess test of the conditioned law."""

    draws: int
    outside: list[int]
    excess: ExcessTest
    alpha: float

    @property
    def fired(self) -> str:
        """Which check rejected: support or excess (the first that did), or ''."""
        return "support" if self.outside else "excess" if self.excess.pvalue < self.alpha else ""

    @property
    def rejected(self) -> bool:
        return bool(self.fired)

    def record(self) -> list:
        """As `SamplingVerdict.record`, with no G-test (degrees of freedom 0)."""
        return [1.0, self.excess.pvalue, self.alpha, self.fired, 0]

    def describe(self) -> str:
        e = self.excess
        return (f"{self.draws} draws; outside the support: {self.outside[:10]}; most excessive token {e.token}: "
                f"{e.observed} drawn, {e.expected:.3g} expected, p = {e.pvalue:.3g} (rejects below {self.alpha:.3g})")


def check_rare_events(counts: torch.Tensor, law: torch.Tensor, support: torch.Tensor, required: torch.Tensor,
                      alpha: float) -> RareEventsVerdict:
    """Per-token `counts` (int, length V) of one row's draws against its `law` (fp64), with
    the ids that may be drawn (`support`) and must be kept (`required`). Observed like
    `stats.check_samples`' verdicts (the nightly report's calibration in the wild)."""
    drawn = counts > 0
    outside = drawn & ~support
    kept_law = condition_on_kept(law, support, required, drawn)
    verdict = RareEventsVerdict(int(counts.sum()), outside.nonzero().flatten().tolist(),
                                excess_test(counts, kept_law), alpha)
    for observe in VERDICT_OBSERVERS:
        observe(verdict)
    return verdict


def power_outside(draws: int, rate: float) -> float:
    """Chance that n draws hold at least one draw of a fault at per-draw `rate` that draws
    outside the support (the support check has no false alarm)."""
    return -math.expm1(draws * math.log1p(-rate))


def critical_count(draws: int, mass: float, support_size: int, alpha: float) -> int:
    """The smallest count of one id of law `mass` that the excess test rejects at `alpha`
    among `support_size` ids."""
    rate = max(mass, EXCESS_RATE_FLOOR)
    return int(stats.binom.isf(alpha / support_size, draws, rate)) + 1


def power_excess(draws: int, rate: float, mass: float, support_size: int, alpha: float) -> float:
    """Chance that the excess test catches a fault that draws one id of law `mass` at an extra
    per-draw `rate`."""
    return float(stats.binom.sf(critical_count(draws, mass, support_size, alpha) - 1, draws, min(1.0, mass + rate)))


def reachable_rate(power_at, power: float = 0.95) -> float:
    """The smallest per-draw rate at which `power_at(rate)` reaches `power` (searched over
    rates 1e-12 ... 0.5, in logs)."""
    return math.exp(optimize.brentq(lambda log_rate: power_at(math.exp(log_rate)) - power,
                                    math.log(1e-12), math.log(0.5)))
