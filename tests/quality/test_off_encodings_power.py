"""The off-encoding property's power: for every encoding of every record, a synthetic
defect that misreads that one off value as its binding neighbour (`OffEncoding.near`:
k = V read as V - 1, p = 1 as 1 - 2**-7, a -1 pad as id 0, ...) is injected into our
PyTorch or Triton implementation, and the property's check runs on EXAMPLES drawn cases
(CPU sizes, derandomized). Every such defect must be caught in at least MIN_CAUGHT of them,
but those the property cannot see by construction (`BLIND`, strict xfails with the reason);
the detection rates are in docs/runs/ and docs/nightly.md (`-s` prints them; with
SAMPLECHECK_POWER_RATES=1 every example runs, else a hunt stops once its verdict is settled)."""

import dataclasses
import os
from collections.abc import Callable

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from samplecheck.harness.off_rows import check_off_encodings, misreading
from samplecheck.inputs.strategies import BUDGETS
from samplecheck.registry.matrix import RECORDS, Combo
from samplecheck.registry.records import Backend
from samplecheck.tests.cover.test_off_encodings import off_cases

EXAMPLES = 10
MIN_CAUGHT = 3  # of EXAMPLES: a defect caught by luck in one drawn case is not a stated power
RATES_ENV = "SAMPLECHECK_POWER_RATES"  # "1": measure every example's verdict (the rates in docs/)


def settled(caught: list[bool], needed: int) -> bool:
    """Whether a hunt holds the `needed` catches its assertion asks for, so that its remaining
    examples need not run (never while RATES_ENV asks for the whole rate)."""
    return sum(caught) >= needed and os.environ.get(RATES_ENV) != "1"


@dataclasses.dataclass(frozen=True)
class Injected(Backend):
    """A backend calling `fn` directly (a defect injected into one of ours)."""

    fn: Callable | None = None

    def resolve(self) -> Callable:
        return self.fn


ONE_ID = ("a sampler returns one id per row, checked against the admissible set: a misread off value that moves "
          "the law a little (T = 1 + 2**-7, min_p = 2**-7, k = V - 1 dropping the least likely id) shows only in "
          "the sampling tests' law, not here (measured: 0 of 10)")
# (record, parameter label) -> reason: what the property cannot see by construction (strict
# xfails: one id in the admissible set never shows these).
BLIND = {("gumbel_sample", "temperature=1.0"): ONE_ID, ("min_p_sample", "min_p=0.0"): ONE_ID,
         **{("top_k_top_p_sample", label): ONE_ID for label in ("k=0", "k=-1", "k=V", "k=V+1", "p=1.0")}}


def cells() -> list:
    """(record, encoding index) for every encoding, on the record's first backend (ours)."""
    return [pytest.param(info.name, i, id=f"{info.name}-{off.label}",
                         marks=[pytest.mark.xfail(strict=True, reason=BLIND[info.name, off.label])]
                         if (info.name, off.label) in BLIND else [])
            for info in RECORDS.values() for i, off in enumerate(info.off_encodings)]


@pytest.mark.parametrize(("record", "index"), cells())
def test_a_misread_off_encoding_is_caught(record, index):
    info = RECORDS[record]
    ours = info.backends[0]
    off = info.off_encodings[index]
    combo = Combo(info, Injected(f"misread_{off.label}", "injected:injected", fn=misreading(ours.resolve(), off)),
                  torch.float32, "contig")
    caught = []

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def hunt(data):
        case = data.draw(off_cases(combo, BUDGETS["cpu"]), label="case")
        if settled(caught, MIN_CAUGHT):  # after the draw: what Hypothesis draws may not depend on state
            return
        try:
            check_off_encodings(combo, case, torch.device("cpu"), encodings=(off,))
        except Exception:  # noqa: BLE001 (a wrong output, or the defect's own error: the property fails)
            caught.append(True)
        else:
            caught.append(False)

    hunt()
    print(f"\n{record} {off.label} (near {off.near}): caught in {sum(caught)} of {len(caught)} examples"
          + (" (stopped once settled)" if settled(caught, MIN_CAUGHT) else ""))
    assert sum(caught) >= MIN_CAUGHT, (
        f"{record}: misreading {off.label} as {off.near} caught in {sum(caught)} of {len(caught)} examples")
