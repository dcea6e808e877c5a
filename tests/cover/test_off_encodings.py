"""Every documented "off" encoding of every per-row parameter matches the oracle, in rows of
a drawn batch: in the row with the most finite entries, its other parameters and the other
rows as drawn (mostly binding), and in the next rows where it alone decides, on distinct,
tied and fp32-underflowing values, the record's other parameters off there and those it acts
with armed (samplecheck.harness.off_rows, samplecheck.inputs.off_encodings). Drawn cases reach each
encoding only by chance; here each one is tried on every example, for every record that
lists them (`KernelInfo.off_encodings`), the sampler included; the records' regression
examples meant for it are replayed first. tests/quality/test_off_encodings_power.py measures
what it catches."""

import pytest
from hypothesis import given, strategies as st

from samplecheck.harness.off_rows import check_off_encodings
from samplecheck.inputs.drawing import draw_case, with_regression_examples

pytestmark = pytest.mark.interpreter


@pytest.mark.matrix(layouts=("contig",), off_encodings=True)
@with_regression_examples
@given(data=st.data())
def test_off_encodings(combo, device, budget, data):
    check_off_encodings(combo, draw_case(data, combo, off_cases(combo, budget)), device)


def off_cases(combo, budget):
    """Batches of two rows or more, of two tokens or more (a row of one token has nothing to
    filter), with no drawn -inf (a filter wrongly left on hides behind masked entries)."""
    return combo.info.cases(budget).filter(
        lambda c: c.logits.batch >= 2 and c.logits.vocab >= 2 and c.logits.neg_inf_fraction == 0)
