"""Rows more than 2**31 elements apart: a kernel that computes offsets in int32 wraps and
reads or writes the wrong memory. The rows of a case are placed at a row stride such that
the last row starts past element 2**31 (a ~4.3 GB bf16 buffer); with three rows or more the
row stride itself fits in int32, so only the product row * stride overflows (with two, the
stride is >= 2**31 and Triton passes it as int64, which hides an int32 row index). Two
shapes, so that each launch shape of a kernel meets the far rows: many short rows (one
program per row) and a few wide ones (wider than every kernel's split width, e.g. min_p's
2048 and gumbel's 8192 columns: each row spread over programs, the chunk kernels' own row
offsets). The output must be bitwise the output of the contiguous copy, and the elements
after each row stay untouched. The drawn shapes do not reach every launch path (on a GPU
top-k/top-p's k split takes 33-128 rows of more than 8192 columns, its top-p split at most 32
rows of 65536 or more): a third kind of case, `test_large_offsets_on_each_launch_path`, places
the rows of each launch path a backend declares as far apart (`Backend.path_shapes`: the
path's shape on this device; `Backend.path_parameters`: what its call is given), having
checked that the call takes that path. GPU only: the interpreter cannot allocate and scan
such buffers in a CPU budget."""

import pytest
import torch
from hypothesis import given, settings, strategies as st

from samplecheck.harness.big_buffers import big_buffers
from samplecheck.harness.runner import poison_for, run
from samplecheck.inputs.drawing import draw_case
from samplecheck.inputs.recipes import materialize
from samplecheck.inputs.strategies import Budget
from samplecheck.judging.memory import stated_bound
from samplecheck.registry.checks import assert_bitwise_equal, assert_same_output
from samplecheck.tests.cover.launch_paths import on_each_path

pytestmark = pytest.mark.gpu

FAR = 2**31  # elements: the first offset an int32 cannot hold
# A bound on a case's device memory, in elements of its dtype: the far buffer (at most 1.5 FAR
# with three rows or more) and the case's own copies and outputs.
FAR_PEAK_ELEMENTS = 2 * FAR
# The copies of a case's logits alive at once beside the far buffer, each of at most B x V
# elements: the contiguous logits, the copy the expected output is computed on or a call's copy
# of its input (`run`, a kernel not in place), and the copy of the elements after each row.
CASE_COPIES = 3
SHORT_ROWS = 4096  # columns at most, in the many-rows shape
WIDE_ROWS = 8192  # columns beyond, in the wide shape: past every kernel's split width
# shape -> (the budget cases are drawn from, given the device's; the cases kept)
SHAPES = {
    "many_short_rows": (lambda budget: budget, lambda c: c.logits.batch >= 3 and c.logits.vocab <= SHORT_ROWS),
    "few_wide_rows": (lambda budget: Budget(max_elements=2**18, max_batch=8, max_random_vocab=4 * WIDE_ROWS,
                                            vocabs=(32000,)),
                      lambda c: c.logits.batch >= 3 and c.logits.vocab > WIDE_ROWS),
}


def place_far(values: torch.Tensor, poison: float) -> tuple[torch.Tensor, torch.Tensor]:
    """A [B, V] view whose last row starts at element >= 2**31, and the poisoned stretch of
    up to V elements after every row but the last."""
    batch, vocab = values.shape
    stride = -(-max(vocab + 64, -(-FAR // max(batch - 1, 1))) // 64) * 64
    buffer = torch.empty((batch - 1) * stride + vocab, dtype=values.dtype, device=values.device)
    view = buffer.as_strided((batch, vocab), (stride, 1))
    view.copy_(values)
    after = buffer.as_strided((batch - 1, min(vocab, stride - vocab)), (stride, 1), vocab)
    after.fill_(poison)
    return view, after


@pytest.mark.matrix(dtypes=(torch.bfloat16,), layouts=("contig",))
@pytest.mark.parametrize("shape", SHAPES)
@settings(max_examples=1)  # an int32 offset wraps on every case of a shape; the buffers are the cost
@given(data=st.data())
def test_large_offsets(combo, shape, device, budget, data):
    shaped_budget, kept = SHAPES[shape]
    case = draw_case(data, combo, combo.info.cases(shaped_budget(budget)).filter(kept))
    with big_buffers(device, FAR_PEAK_ELEMENTS * combo.dtype.itemsize, "rows 2**31 elements apart"):
        check_far_apart(combo, case, device)


@pytest.mark.matrix(dtypes=(torch.bfloat16,), layouts=("contig",), launch_paths=True)
@settings(max_examples=1)
@given(data=st.data())
def test_large_offsets_on_each_launch_path(combo, device, budget, data):
    """The drawn case at each launch path's shape on this device, given the path's parameters
    (`samplecheck.tests.cover.launch_paths.on_each_path`), its rows 2**31 elements apart."""
    drawn = draw_case(data, combo, combo.info.cases(budget))
    for path, case in on_each_path(combo, drawn, device):  # the path the case takes asserted first
        batch, vocab = case.logits.batch, case.logits.vocab
        # Two rows would take a row stride >= 2**31, which Triton passes as int64.
        assert batch >= 3, f"the {path} path's shape [{batch}, {vocab}]: rows far apart need three or more"
        with big_buffers(device, FAR_PEAK_ELEMENTS * combo.dtype.itemsize, f"the {path} path's rows 2**31 apart"):
            check_far_apart(combo, case, device, path)


def check_far_apart(combo, case, device, path: str | None = None) -> None:
    """`path`: the launch path the case was built for (`on_each_path`: the path takes no account
    of the row stride), whose buffers must stay within FAR_PEAK_ELEMENTS (None: a drawn shape)."""
    values = materialize(case.logits, combo.dtype, device)
    view, after = place_far(values, poison_for(case, combo.dtype))
    args = combo.info.make_args(case, view)
    if path is not None:
        peak = view.untyped_storage().nbytes() + CASE_COPIES * values.nbytes + stated_bound(combo, view, args)
        assert peak <= FAR_PEAK_ELEMENTS * values.element_size(), (
            f"{combo.id}: the {path} path's case {tuple(view.shape)} needs {peak} bytes, past FAR_PEAK_ELEMENTS")
    after_before = after.clone()
    expected = run(combo, values.clone(), args)
    output = run(combo, view, args)
    assert_same_output(combo.info, output, expected, f"{combo.id}: rows 2**31 elements apart vs contiguous",
                       case.logits.vocab)
    assert_bitwise_equal(after, after_before, f"{combo.id}: elements after each row")
