"""The graph-replay property (samplecheck.harness.graph_replay) fails where it must: on a
temperature backend that reads a value back to the host (the capture raises), on one that
reads a Python value at each call (a replay keeps the value of the capture), and on one that
keeps host-side state chosen at capture time (a copy of its temperature per tensor object:
replays never see the values copied into the captured buffer, eager calls on their own
tensors always do). The same plain PyTorch backend without these defects passes, so
each failure is the defect's.

On CPU, the same checks run with `capture` replaced by an eager stand-in (a "replay" calls
the backend again on the captured buffers and copies its outputs into the captured ones):
they show the copying and comparing half of the property, not CUDA's capture."""

import dataclasses
from collections.abc import Callable

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from samplecheck.harness import graph_replay
from samplecheck.inputs.drawing import draw_case
from samplecheck.inputs.strategies import BUDGETS
from samplecheck.registry.checks import output_tensors
from samplecheck.registry.matrix import RECORDS, Combo
from samplecheck.registry.records import Backend

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
    """`divide` by a copy of the temperature made the first time a tensor object comes and
    reused whenever the same object comes back: a host-side cache keyed by identity (it keeps
    every copy alive, so a graph reads the copy it captured, never freed memory)."""

    def __init__(self):
        self.copies: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def __call__(self, logits: torch.Tensor, temperature: torch.Tensor | None = None) -> torch.Tensor:
        if temperature is None:
            return logits
        if id(temperature) not in self.copies:
            self.copies[id(temperature)] = (temperature, temperature.clone())
        return divide(logits, self.copies[id(temperature)][1])


class CountsCalls:
    """`divide`, then adds the number of calls so far (a Python value read at each call) to
    every logit: a graph replays the count its capture saw."""

    def __init__(self):
        self.calls = 0

    def __call__(self, logits: torch.Tensor, temperature: torch.Tensor | None = None) -> torch.Tensor:
        self.calls += 1
        return divide(logits, temperature).add_(self.calls)


class EagerReplay:
    """Stands in for a CUDA graph on CPU: `replay()` calls again and copies the new output
    tensors into the first call's (the graph's static outputs)."""

    def __init__(self, call: Callable[[], object]):
        self.call = call
        self.output = call()

    def replay(self) -> None:
        for static, new in zip(output_tensors(self.output), output_tensors(self.call())):
            if static is not new:
                static.copy_(new)


def eager_capture(call: Callable[[], object]) -> tuple[EagerReplay, object]:
    call()  # the warm-up
    graph = EagerReplay(call)
    return graph, graph.output


def outcomes(make_fn: Callable[[], Callable], device, backend: Backend | None = None) -> list[str]:
    """The property's outcome on EXAMPLES temperature cases (fp32, padded rows), for the
    injected `make_fn()` (or `backend`): "" where it passed, else its failure message."""
    info = RECORDS["temperature"]
    found = []

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def hunt(data):
        combo = Combo(info, backend or Injected("injected", "injected:injected", fn=make_fn()), torch.float32,
                      "padded64")
        strategy = info.cases(BUDGETS[device.type])
        case = draw_case(data, combo, strategy)
        try:
            graph_replay.check_graph_replay(combo, data, case, strategy, device)
        except AssertionError as failure:
            found.append(str(failure))
        else:
            found.append("")

    hunt()
    return found


@pytest.fixture(params=["cuda graph", "eager stand-in"])
def replaying(request, device, monkeypatch):
    """The device, with CUDA graphs on a GPU, or with the eager stand-in on CPU."""
    if request.param == "cuda graph":
        if device.type != "cuda":
            pytest.skip("needs a CUDA device: run with --sc-device=cuda")
    else:
        if device.type != "cpu":
            pytest.skip("the eager stand-in replaces CUDA graphs on CPU only")
        monkeypatch.setattr(graph_replay, "capture", eager_capture)
    return device


def test_a_sync_free_backend_passes(replaying):
    assert outcomes(lambda: divide, replaying) == [""] * EXAMPLES


@pytest.mark.interpreter
def test_our_temperature_kernel_passes(replaying):
    assert outcomes(None, replaying, RECORDS["temperature"].backends[0]) == [""] * EXAMPLES


@pytest.mark.gpu
def test_a_host_sync_fails_the_capture_naming_the_backend(device):
    failures = outcomes(lambda: syncing, device)
    assert all("backend injected" in f and "capturing one call in a CUDA graph raised" in f for f in failures), failures


def test_a_python_value_read_at_each_call_fails_every_replay(replaying):
    failures = outcomes(CountsCalls, replaying)
    assert all("graph replay 0" in f and "differ bitwise" in f for f in failures), failures


@pytest.mark.gpu
def test_host_state_chosen_at_capture_fails_a_replay(device):
    """Not on the eager stand-in: its "replay" runs the Python again, which finds the cache
    entry of the captured tensor and divides by the values the capture saw, as eager calls do
    for their own tensors; only a real graph keeps the captured copy."""
    failures = outcomes(StaleCopy, device)
    print(f"\nstale host-side copy caught in {sum(map(bool, failures))} of {EXAMPLES} examples")
    assert any("graph replay" in f and "differ bitwise" in f for f in failures), failures
    assert all(not f or "graph replay" in f for f in failures), failures
