"""Valid input passes the device-side value checks (docs/validation.md): in deferred mode a
drawn case gives bitwise the output of an eager-mode call, and `raise_pending()` raises
nothing. (On a GPU every property already runs deferred; on CPU this is where the device
checks meet valid input.)

Beside an empty vocabulary (test_device_checks_beside_an_empty_vocabulary): a drawn case's
call with its logits cut to no column has the same outcome in both modes: it returns in
both, raising nothing, or it raises the same ValueError in both (its id lists hold ids
outside [0, 0), or the op refuses an empty vocabulary), having changed nothing. A call on
logits of no element launches no op kernel, so its checks run elsewhere (e.g. a guard
kernel of their own), a path no case with columns takes."""

import pytest
import torch
from hypothesis import given, strategies as st

from samplecheck.harness.runner import prepare, run
from samplecheck.judging.bad_calls import changed, snapshot
from samplecheck.inputs.drawing import draw_case
from samplecheck.kernels.validation import raise_pending, value_checks
from samplecheck.registry.checks import assert_same_output

pytestmark = pytest.mark.interpreter


def drawn_call(combo, device, budget, data):
    """(case, placed logits, arguments) of a drawn case; skips a backend that is not ours."""
    if not combo.backend.ours:
        pytest.skip("device checks guard our kernels; other implementations validate as they do")
    case = draw_case(data, combo, combo.info.cases(budget))
    return (case, *prepare(combo, case, device))


@pytest.mark.matrix(layouts=("contig",), dtypes=(torch.bfloat16,))
@given(data=st.data())
def test_device_checks_pass_valid_input(combo, device, budget, data):
    case, placed, args = drawn_call(combo, device, budget, data)
    eager_logits = placed.view.clone()
    with value_checks("eager"):
        expected = run(combo, eager_logits, args)
    with value_checks("deferred"):
        output = run(combo, placed.view, args)
        raise_pending()
    assert_same_output(combo.info, output, expected, f"{combo.id}: deferred vs eager value checks", case.logits.vocab)


def checked_call(combo, logits: torch.Tensor, args: dict, mode: str):
    """(output, None) of the call in value-check mode `mode`, its deferred checks raised, or
    (None, the ValueError it raised); any other exception propagates."""
    try:
        with value_checks(mode):
            output = run(combo, logits, args)
            raise_pending()
    except ValueError as error:
        return None, error
    return output, None


@pytest.mark.matrix(layouts=("contig", "padded64"), dtypes=(torch.float32,))
@given(data=st.data())
def test_device_checks_beside_an_empty_vocabulary(combo, device, budget, data):
    case, placed, args = drawn_call(combo, device, budget, data)
    before = snapshot((), args)
    where = f"{combo.id}: logits [{case.logits.batch}, 0]"
    expected, eager_error = checked_call(combo, placed.view[:, :0], args, "eager")
    output, error = checked_call(combo, placed.view[:, :0], args, "deferred")
    assert (error is None) == (eager_error is None), (
        f"{where}: eager checks {'raised ' + repr(eager_error) if eager_error else 'passed'}, deferred "
        f"checks {'raised ' + repr(error) if error else 'passed'}")
    if error is None:
        assert_same_output(combo.info, output, expected, f"{where}: deferred vs eager value checks", 0)
    else:
        assert str(error) == str(eager_error), f"{where}: deferred checks raised {error!r}, eager ones {eager_error!r}"
        assert not changed(before, (), args), f"{where}: the call changed its parameters before raising"
