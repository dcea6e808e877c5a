"""Id lists at their declared caps (`KernelInfo.id_lists`: 128 words of 1024 tokens, 1024
allowed or biased ids, 128 stop ids): each capped list of a drawn case in turn, right-padded
with -1 (its parallel arguments with their pads) to its caps in every capped dimension, is
accepted and gives the case's own output (where the backend implements the padded call: its
`accepts`). A check that rejects the cap itself (an
off-by-one `>=`), or a tile sized for the widest list that misreads it, fails here; the
error inputs check one past the cap. The calls use the device's default value checks
(eager under the interpreter, whose device checks would take minutes at these widths)."""

import pytest
import torch
from hypothesis import given, settings, strategies as st

from samplecheck.harness.runner import prepare, run
from samplecheck.inputs.drawing import draw_case, skip_unless_accepted
from samplecheck.inputs.far_lists import at_caps, given_lists
from samplecheck.registry.checks import assert_same_output

pytestmark = pytest.mark.interpreter


@pytest.mark.matrix(dtypes=(torch.float32,), layouts=("contig",), id_lists=True)
@settings(max_examples=1)
@given(data=st.data())
def test_lists_at_caps(combo, device, budget, data):
    lists = combo.info.id_lists
    capped = [listed.param for listed in lists.lists if any(cap is not None for cap in listed.caps)]
    if not capped:
        pytest.skip(f"{combo.info.name}: no id list has a cap")

    def gives_lists(case) -> bool:
        return given_lists(lists, combo.info.make_args(case, torch.empty(case.logits.batch, case.logits.vocab)))

    case = draw_case(data, combo, combo.info.cases(budget).filter(gives_lists))
    placed, args = prepare(combo, case, device)
    expected = run(combo, placed.view.clone(), args)
    for name in capped:
        padded, shape = at_caps(lists, args, name)
        skip_unless_accepted(combo, case, f"{name} at its caps", placed.view, padded)
        output = run(combo, placed.view.clone(), padded)
        assert_same_output(combo.info, output, expected, f"{combo.id}: {name} right-padded with -1 to {list(shape)}",
                           case.logits.vocab)
