"""A call allocates no more GPU memory than its record states (outputs and scratch
included); in particular no fp32 copy of bf16 logits. GPU only: the bound is read from
torch.cuda's allocator statistics."""

import pytest
import torch
from hypothesis import given, strategies as st

from samplecheck.inputs.drawing import draw_case
from samplecheck.judging.memory import largest_allocations, peak_extra_bytes, stated_bound
from samplecheck.harness.runner import prepare

pytestmark = pytest.mark.gpu


@pytest.mark.matrix(dtypes=(torch.bfloat16,), layouts=("padded64",))
@given(data=st.data())
def test_memory_bound(combo, device, budget, data):
    case = draw_case(data, combo, combo.info.cases(budget))
    placed, args = prepare(combo, case, device)
    call = combo.backend.resolve()
    call(placed.view, **args)  # warm-up: compile and cache outside the measurement
    _, extra = peak_extra_bytes(lambda: call(placed.view, **args))
    bound = stated_bound(combo, placed.view, args)
    batch, vocab = placed.view.shape
    assert extra <= bound, (  # the message, with the allocator's history, is built only on failure
        f"{combo.id}: allocated {extra} bytes beyond its inputs, stated bound {bound} (an fp32 copy of these "
        f"[{batch}, {vocab}] logits is {4 * batch * vocab} bytes); largest allocations of the call:\n  "
        + "\n  ".join(largest_allocations(lambda: call(placed.view, **args))))
