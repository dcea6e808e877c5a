"""Valid input passes the device-side value checks (docs/validation.md): in deferred mode a
drawn case gives bitwise the output of an eager-mode call, and `raise_pending()` raises
nothing. (On a GPU every property already runs deferred; on CPU this is where the device
checks meet valid input.)"""

import pytest
import torch
from hypothesis import given, strategies as st

from samplecheck.harness.runner import prepare, run
from samplecheck.inputs.drawing import draw_case
from samplecheck.kernels.validation import raise_pending, value_checks
from samplecheck.registry.checks import assert_same_output

pytestmark = pytest.mark.interpreter


OURS = "samplecheck.kernels."


@pytest.mark.matrix(layouts=("contig",), dtypes=(torch.bfloat16,))
@given(data=st.data())
def test_device_checks_pass_valid_input(combo, device, budget, data):
    if not combo.backend.target.startswith(OURS):
        pytest.skip("device checks guard our kernels; other implementations validate as they do")
    case = draw_case(data, combo, combo.info.cases(budget))
    placed, args = prepare(combo, case, device)
    eager_logits = placed.view.clone()
    with value_checks("eager"):
        expected = run(combo, eager_logits, args)
    with value_checks("deferred"):
        output = run(combo, placed.view, args)
        raise_pending()
    assert_same_output(combo.info, output, expected, f"{combo.id}: deferred vs eager value checks", case.logits.vocab)
