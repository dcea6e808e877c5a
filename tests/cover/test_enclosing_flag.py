"""A backend that honours an enclosing call's guard flag (`Backend.guard_flag`: our kernels,
docs/validation.md) is called inside `unchecked_values(flag)`, as the sampler calls each op
after checking every field once: with the flag set (a bad value somewhere in the enclosing
call) it writes nothing, the logits buffer (gaps included) and every argument stay bitwise
as they were; with the flag clear its output is bitwise that of a call with no flag. The flag
is one slot of a zeroed pool, as `samplecheck.kernels.value_modes` hands them out, so a kernel
that reads another slot or ignores the flag is seen."""

import pytest
import torch
from hypothesis import given, strategies as st

from samplecheck.harness.call_inputs import CallInputs, clone_inputs
from samplecheck.harness.runner import prepare, run
from samplecheck.inputs.drawing import draw_case
from samplecheck.kernels.validation import unchecked_values
from samplecheck.registry.checks import assert_bitwise_equal, assert_same_output

pytestmark = pytest.mark.interpreter

SLOTS = 3  # the flag is the middle slot: clear neighbours on both sides


def pool_slot(device, value: int) -> torch.Tensor:
    pool = torch.zeros(SLOTS, dtype=torch.int32, device=device)
    flag = pool[SLOTS // 2:SLOTS // 2 + 1]
    flag.fill_(value)
    return flag


def call_with_flag(combo, inputs: CallInputs, flag):
    with unchecked_values(flag):
        return run(combo, inputs.placed.view, inputs.args)


@pytest.mark.matrix(layouts=("padded64",), guard_flag=True)
@given(data=st.data())
def test_enclosing_flag(combo, device, budget, data):
    case = draw_case(data, combo, combo.info.cases(budget))
    inputs = CallInputs(*prepare(combo, case, device))
    unflagged, clear, flagged = clone_inputs(inputs), clone_inputs(inputs), clone_inputs(inputs)
    expected = call_with_flag(combo, unflagged, None)
    output = call_with_flag(combo, clear, pool_slot(device, 0))
    assert_same_output(combo.info, output, expected, f"{combo.id}: clear enclosing flag vs no flag",
                       case.logits.vocab)
    call_with_flag(combo, flagged, pool_slot(device, 1))  # `run` checks that no argument was written
    assert_bitwise_equal(flagged.placed.buffer, inputs.placed.buffer,
                         f"{combo.id}: the logits buffer after a call under a set enclosing flag")
