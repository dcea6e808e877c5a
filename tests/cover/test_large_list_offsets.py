"""Token-id lists more than 2**31 entries apart: a kernel that computes a row's list offset
(row * width) in int32 wraps there and reads another row's list, or memory before the
tensor. For every record that declares id-list arguments (`KernelInfo.id_lists`), each list
in turn is placed far (`samplecheck.inputs.far_lists`): a drawn case's rows go behind filler
rows (every list -1 padding, every other per-row parameter off, logits zero), with the far
list right-padded towards its caps so that its first real row starts past entry 2**31 (an
int32 list of 8+ GiB; the row width stays below 2**30, so only the product overflows).
 1. Far rows compute right (test_large_list_offsets): the case's rows of the output are
    bitwise (the record's `same_output`) the output of the case alone, a small contiguous
    batch; the filler rows stay zero.
 2. Far rows are checked (test_large_list_offsets_checked; skipped with the error inputs
    where a backend declares that its caller validates): with one invalid id (V + 1) as the
    last entry of the last row's far list, the call raises the ValueError naming that list
    and its range, and changes nothing.
Value checks run deferred (the GPU's default): the device check (the guard kernel, which
reads the lists at the same offsets) decides, and the error comes from `raise_pending()`;
eager checks run in PyTorch, whose indexing cannot wrap.

Both are GPU only (a far list holds 8 GiB, or 16 with its bias values; the interpreter
cannot scan it), and skipped, naming both sizes, on a GPU with less memory in all than the far
batch's expected peak (`far_peak_bytes`: 20-36 GiB). test_list_offsets_at_small_far and test_list_offsets_checked_at_small_far
run the same code with the lists 2**8 entries apart, on any device (wider lists cost the
interpreter minutes: the logit_bias guard compares a row's bias ids pairwise). No offset
wraps there, so they check the layout and the comparisons, not the int32 wrap itself;
tests/quality/test_large_list_offsets_power.py shows that they catch kernels whose list
offsets wrap at that distance.
"""

import pytest
import torch
from hypothesis import given, settings, strategies as st

from samplecheck.harness.big_buffers import big_buffers
from samplecheck.harness.runner import run
from samplecheck.inputs.drawing import draw_case, skip_unless_accepted
from samplecheck.inputs.far_lists import (Scale, far_args, far_budget, far_bytes, far_layout, far_logits, given_lists,
                                         with_bad_id)
from samplecheck.inputs.recipes import materialize
from samplecheck.kernels.validation import raise_pending, value_checks
from samplecheck.registry import catalog
from samplecheck.registry.checks import assert_bitwise_equal, assert_same_output, output_rows

# 2**31 entries apart; uncapped lists 4096 wide (2**19 filler rows); logits of at most 2 GiB;
# the per-row arguments of a far batch within 18 GiB (a far logit_bias_ids list and its
# values take 16).
AT_2_31 = Scale(far=2**31, open_width=2**12, logits_bytes=2**31, max_vocab=4096)
AT_2_31_ARGS_BYTES = 18 * 2**30
# A far batch's peak of device memory, per byte of its per-row arguments (`far_bytes`), its far
# logits counted twice besides: the largest ratio the backends reached in the H100 gate of
# session 35 (peaks 35.2, 21.4 and 20.0 GiB for logit_bias, penalties and bad_words with 16, 8
# and 8 GiB of far lists). A GPU with less memory in all skips the test, saying so.
PEAK_PER_ARGS_BYTE = 2.7
SMALL = Scale(far=2**8, open_width=2**5, logits_bytes=2**20, max_vocab=1024)
SMALL_ARGS_BYTES = 2**24


def draw_far_case(data, combo, budget, scale: Scale, args_bytes: int):
    """A case of the record's own strategy, at vocabularies whose far logits fit the scale,
    giving every declared list, whose far batches fit `args_bytes` whichever list is far."""
    lists = combo.info.id_lists
    small = far_budget(budget, lists, scale, combo.dtype.itemsize)

    def fits(case) -> bool:
        if case.logits.vocab > small.max_random_vocab:
            return False
        args = combo.info.make_args(case, torch.empty(case.logits.batch, case.logits.vocab))
        return given_lists(lists, args) and all(far_bytes(lists, args, l.param, scale) <= args_bytes
                                                for l in lists.lists)

    return draw_case(data, combo, combo.info.cases(small).filter(fits))


def launch_knobs(combo, args: dict) -> dict:
    """The record's launch knobs for far lists; skips a backend that does not declare one."""
    knobs = combo.info.id_lists.knobs
    missing = [knob for knob in knobs if knob not in combo.backend.knobs]
    if missing:
        pytest.skip(f"backend {combo.backend.name} has no launch knob {', '.join(missing)}: its default launch "
                    "allocates scratch over every list entry")
    return {knob: value(args) for knob, value in knobs.items()}


# The far batch's shape at its smallest (two filler rows, lists at their own widths): what a
# backend's `accepts` is asked about (the case's rows behind rows with every parameter off).
NEAR = Scale(far=2, open_width=1, logits_bytes=0, max_vocab=0)


def check_every_list(combo, case, device, scale: Scale, check) -> None:
    """`check` with each of the record's lists far in turn, one far batch per GPU at a time,
    where the backend implements such a batch (its `accepts`)."""
    values = materialize(case.logits, combo.dtype, device)
    args = combo.info.make_args(case, values)
    for listed in combo.info.id_lists.lists:
        logits, placed, _ = far_batch(combo, values, args, listed.param, NEAR)
        skip_unless_accepted(combo, case, "the case's rows behind filler rows", logits, placed)
        with big_buffers(device, far_peak_bytes(combo, values, args, listed.param, scale),
                         f"a far {listed.param} ({scale.far} entries apart)"):
            check(combo, values, args, listed.param, scale)


def far_peak_bytes(combo, values: torch.Tensor, args: dict, name: str, scale: Scale) -> int:
    """The device memory a far batch with list `name` far is expected to peak at
    (PEAK_PER_ARGS_BYTE), without building it."""
    fillers, _ = far_layout(combo.info.id_lists, args, name, scale)
    logits_bytes = (fillers + values.size(0)) * values.size(1) * values.element_size()
    return int(PEAK_PER_ARGS_BYTE * far_bytes(combo.info.id_lists, args, name, scale)) + 2 * logits_bytes


def far_batch(combo, values: torch.Tensor, args: dict, name: str, scale: Scale):
    """(logits, arguments, F) of the far batch with list `name` far (module docstring)."""
    placed, fillers = far_args(combo.info.id_lists, combo.info.off_encodings, args, name, values.size(1), scale)
    return far_logits(values, fillers), placed, fillers


def assert_fillers_zero(logits: torch.Tensor, fillers: int, what: str) -> None:
    assert_bitwise_equal(logits[:fillers], logits.new_zeros(1, logits.size(1)).expand(fillers, -1),
                         f"{what}: filler rows (every parameter off) written")


def check_far_rows_compute(combo, values, args, name: str, scale: Scale) -> None:
    with value_checks("deferred"):
        expected = run(combo, values.clone(), args)
        raise_pending()
    logits, placed, fillers = far_batch(combo, values, args, name, scale)
    what = f"{combo.id}: rows whose {name} start past entry {scale.far} of it"
    with value_checks("deferred"):
        output = run(combo, logits, {**placed, **launch_knobs(combo, placed)})
        raise_pending()
    rows = list(range(fillers, fillers + values.size(0)))
    assert_same_output(combo.info, output_rows(output, rows), expected, f"{what} vs the case alone", values.size(1))
    assert_fillers_zero(logits, fillers, what)


def check_far_rows_checked(combo, values, args, name: str, scale: Scale) -> None:
    logits, placed, fillers = far_batch(combo, values, args, name, scale)
    vocab = values.size(1)
    with_bad_id(combo.info.id_lists, placed, name, vocab + 1)
    what = f"{combo.id}: id {vocab + 1} at the last entry of the last row of {name}, past entry {scale.far}"
    match = rf"{name} must hold token ids in \[0, {vocab}\)" if combo.backend.error_messages else None
    with pytest.raises(ValueError, match=match):
        with value_checks("deferred"):
            run(combo, logits, {**placed, **launch_knobs(combo, placed)})
            raise_pending()
    assert_bitwise_equal(logits[fillers:], values, f"{what}: the case's rows changed")
    assert_fillers_zero(logits, fillers, what)


def far_list_test(name: str, scale: Scale, args_bytes: int, check, where):
    """The property `name`: `check` with each declared list far in turn, at `scale`, on the
    devices `where` (a marker) selects."""
    def test(combo, device, budget, data):
        check_every_list(combo, draw_far_case(data, combo, budget, scale, args_bytes), device, scale, check)

    test.__name__ = test.__qualname__ = name  # Hypothesis keys its database by the name
    matrix = pytest.mark.matrix(dtypes=(torch.bfloat16,), layouts=("contig",), id_lists=True)
    return where(matrix(settings(max_examples=2)(given(data=st.data())(test))))


test_large_list_offsets = far_list_test(
    catalog.LARGE_LIST_OFFSETS, AT_2_31, AT_2_31_ARGS_BYTES, check_far_rows_compute, pytest.mark.gpu)
test_large_list_offsets_checked = far_list_test(
    catalog.LARGE_LIST_OFFSETS_CHECKED, AT_2_31, AT_2_31_ARGS_BYTES, check_far_rows_checked, pytest.mark.gpu)
test_list_offsets_at_small_far = far_list_test(
    catalog.LIST_OFFSETS_AT_SMALL_FAR, SMALL, SMALL_ARGS_BYTES, check_far_rows_compute, pytest.mark.interpreter)
test_list_offsets_checked_at_small_far = far_list_test(
    catalog.LIST_OFFSETS_CHECKED_AT_SMALL_FAR, SMALL, SMALL_ARGS_BYTES, check_far_rows_checked,
    pytest.mark.interpreter)
