"""A backend that declares itself capturable (`Backend.capturable`) captures in a CUDA graph,
and each replay on new inputs copied into the captured buffers equals, bitwise, an eager call
on the same inputs: the output, the logits buffer with its row-stride gaps, and every tensor
argument (samplecheck.harness.graph_replay). GPU only: CUDA graphs need a CUDA device.

The helpers that build and copy the inputs run on CPU too: tested here without a graph."""

import dataclasses

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from samplecheck.harness import call_inputs
from samplecheck.harness.runner import prepare, run
from samplecheck.registry.matrix import RECORDS, Combo
from samplecheck.harness.call_inputs import (CallInputs, clone_inputs, copy_inputs, draw_fresh_inputs, resample_rows,
                                            signature)
from samplecheck.harness.graph_replay import check_graph_replay
from samplecheck.inputs.drawing import draw_case
from samplecheck.inputs.strategies import BUDGETS
from samplecheck.inputs.tensor_tree import tensors_of
from samplecheck.registry.layouts import as_bits, place
from samplecheck.tests.cover.draw_order import DrawOrder


@pytest.mark.gpu
@pytest.mark.matrix(layouts=("contig", "padded64"), capturable=True)
@given(data=st.data())
def test_graph_replay(combo, device, budget, data):
    strategy = combo.info.cases(budget)
    case = draw_case(data, combo, strategy)
    check_graph_replay(combo, data, case, strategy, device)


# --- the input helpers, on CPU ------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Batch:
    ids: torch.Tensor
    scale: torch.Tensor | None
    count: int


def _inputs() -> CallInputs:
    placed = place(torch.arange(12, dtype=torch.float32).reshape(3, 4), "padded64", float("nan"))
    ids = torch.arange(12).reshape(4, 3).t()  # a transposed (non-contiguous) [3, 4] per-row tensor
    return CallInputs(placed, {"batch": Batch(ids, torch.tensor([0.5, 1.0, 2.0]), 7), "k": None,
                               "pair": (torch.ones(2), 3)})


def test_signature_names_layouts_and_python_values():
    inputs = _inputs()
    assert signature(inputs.args) == signature(_inputs().args)
    other = _inputs()
    assert signature({**other.args, "k": 1}) != signature(inputs.args)
    assert signature({**other.args, "pair": (torch.ones(2), 4)}) != signature(inputs.args)
    contiguous = dataclasses.replace(other.args["batch"], ids=other.args["batch"].ids.contiguous())
    assert signature({**other.args, "batch": contiguous}) != signature(inputs.args)  # same values, other strides
    scale_off = dataclasses.replace(other.args["batch"], scale=None)
    assert signature({**other.args, "batch": scale_off}) != signature(inputs.args)


def test_clone_keeps_layouts_and_shares_nothing():
    inputs = _inputs()
    copy = clone_inputs(inputs)
    assert signature(copy.args) == signature(inputs.args)
    assert copy.placed.view.stride() == inputs.placed.view.stride()
    assert torch.equal(as_bits(copy.placed.buffer), as_bits(inputs.placed.buffer))  # NaN gaps included
    originals = [inputs.placed.buffer] + tensors_of(inputs.args)
    copies = [copy.placed.buffer] + tensors_of(copy.args)
    assert all(c.data_ptr() != o.data_ptr() for c, o in zip(copies, originals))
    assert all(torch.equal(c, o) for c, o in zip(copies[1:], originals[1:]))


def test_copy_inputs_writes_every_byte_into_the_target():
    target, source = _inputs(), _inputs()
    source.placed.buffer.fill_(-1.0)  # gaps too
    for t in tensors_of(source.args):
        t.fill_(5)
    pointers = [target.placed.buffer.data_ptr()] + [t.data_ptr() for t in tensors_of(target.args)]
    copy_inputs(source, target)
    assert [target.placed.buffer.data_ptr()] + [t.data_ptr() for t in tensors_of(target.args)] == pointers
    assert bool((target.placed.buffer == -1.0).all())
    assert all(bool((t == 5).all()) for t in tensors_of(target.args))
    with pytest.raises(ValueError, match="differ in structure"):
        copy_inputs(CallInputs(source.placed, {**source.args, "k": 2}), target)


def test_resample_rows_moves_rows_together_and_keeps_layouts():
    inputs = _inputs()
    rows = torch.tensor([2, 2, 0])
    moved = resample_rows(inputs.args, rows, batch=3)
    assert signature(moved) == signature(inputs.args)
    assert torch.equal(moved["batch"].ids, inputs.args["batch"].ids[rows])
    assert torch.equal(moved["batch"].scale, torch.tensor([2.0, 2.0, 0.5]))
    assert torch.equal(moved["pair"][0], inputs.args["pair"][0])  # not per-row: copied as it is
    assert moved["batch"].count == 7


def _first_backends() -> list:
    return [pytest.param(Combo(info, info.backends[0], torch.float32, "padded64"), id=info.name)
            for info in RECORDS.values()]


@pytest.mark.interpreter
@pytest.mark.parametrize("fresh_combo", _first_backends())
@settings(max_examples=3, derandomize=True, database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fresh_inputs_are_valid_new_values_of_the_same_signature(fresh_combo, device, data):
    """What the graph property replays: inputs of the case's signature, with new logits, that
    the backend accepts (an eager call on them raises nothing)."""
    combo, budget = fresh_combo, BUDGETS[device.type]
    strategy = combo.info.cases(budget)
    case = draw_case(data, combo, strategy)
    [fresh] = draw_fresh_inputs(data, combo, case, strategy, device)
    static = CallInputs(*prepare(combo, case, device))
    assert signature(fresh.args) == signature(static.args)
    assert fresh.placed.buffer.shape == static.placed.buffer.shape
    assert fresh.placed.view.stride() == static.placed.view.stride()
    run(combo, fresh.placed.view, fresh.args)


@given(data=st.data())
@settings(max_examples=3, deadline=None)
def test_fresh_inputs_are_all_drawn_before_any_is_built(device, data):
    """What the graph property draws does not depend on building its inputs (an OOM there)."""
    combo = Combo(RECORDS["temperature"], RECORDS["temperature"].backends[0], torch.float32, "padded64")
    strategy = combo.info.cases(BUDGETS[device.type])
    order = DrawOrder(data)
    case = draw_case(order, combo, strategy)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(call_inputs, "materialize", order.device(call_inputs.materialize, "materialize"))
        draw_fresh_inputs(order, combo, case, strategy, device, count=2)
    assert order.steps.count("materialize") == 2
    assert order.draws_after_device() == [], order.steps
