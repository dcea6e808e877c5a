"""The graph-replay property (samplecheck.judging.graph_replay) fails where it must, GPU only:
on a temperature backend that reads a value back to the host (the capture raises), and on one
that keeps host-side state chosen at capture time (a copy of its temperature, refreshed only
when a new tensor object comes: replays never see the values copied into the captured buffer,
eager calls always do). The same plain PyTorch backend without either defect passes, so each
failure is the defect's."""

import dataclasses
from collections.abc import Callable

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from samplecheck.harness.registry import RECORDS, Backend, Combo
from samplecheck.inputs.drawing import draw_case
from samplecheck.inputs.strategies import BUDGETS
from samplecheck.judging.graph_replay import check_graph_replay

pytestmark = pytest.mark.gpu

EXAMPLES = 10


@dataclasses.dataclass(frozen=True)
class Injected(Backend):
    """A capturable backend calling `fn` directly."""

    fn: Callable | None = None
    capturable: bool = True

    def resolve(self) -> Callable:
        return self.fn


def divide(logits: torch.Tensor, temperature: torch.Tensor | None = None) -> torch.Tensor:
    """Plain PyTorch temperature scaling, in place (T = 0 rows divided by 1): no host sync."""
    if temperature is not None:
        scale = torch.where(temperature == 0, 1.0, temperature)
        logits.copy_((logits.to(torch.float32) / scale[:, None]).to(logits.dtype))
    return logits


def syncing(logits: torch.Tensor, temperature: torch.Tensor | None = None) -> torch.Tensor:
    """`divide` after reading the row maxima back to the host, as a value check would."""
    logits.amax(dim=-1).tolist()
    return divide(logits, temperature)


class StaleCopy:
    """`divide` by a copy of the temperature taken when a new tensor object comes and reused
    while the same object comes back: a host-side cache keyed by identity."""

    def __init__(self):
        self.source, self.copy = None, None

    def __call__(self, logits: torch.Tensor, temperature: torch.Tensor | None = None) -> torch.Tensor:
        if temperature is not self.source:
            self.source, self.copy = temperature, None if temperature is None else temperature.clone()
        return divide(logits, self.copy)


def outcomes(make_fn: Callable[[], Callable], device) -> list[str]:
    """The property's outcome on EXAMPLES temperature cases (fp32, padded rows): "" where it
    passed, else its failure message."""
    info = RECORDS["temperature"]
    found = []

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def hunt(data):
        combo = Combo(info, Injected("injected", "injected:injected", fn=make_fn()), torch.float32, "padded64")
        strategy = info.cases(BUDGETS["cuda"])
        case = draw_case(data, combo, strategy)
        try:
            check_graph_replay(combo, data, case, strategy, device)
        except AssertionError as failure:
            found.append(str(failure))
        else:
            found.append("")

    hunt()
    return found


def test_a_sync_free_backend_passes(device):
    assert outcomes(lambda: divide, device) == [""] * EXAMPLES


def test_a_host_sync_fails_the_capture_naming_the_backend(device):
    failures = outcomes(lambda: syncing, device)
    assert all("backend injected" in f and "capturing one call in a CUDA graph raised" in f for f in failures), failures


def test_host_state_chosen_at_capture_fails_the_replay(device):
    failures = outcomes(StaleCopy, device)
    print(f"\nstale host-side copy caught in {sum(map(bool, failures))} of {EXAMPLES} examples")
    assert any("graph replay" in f and "differ bitwise" in f for f in failures), failures
    assert all(not f or "graph replay" in f for f in failures), failures
