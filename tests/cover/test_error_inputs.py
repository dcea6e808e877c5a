"""Bad input raises the declared error, whose message names the parameter and its range
(plugged-in backends: the declared exception type, whatever the wording), and changes
nothing: in each value-check mode that raises (docs/validation.md).
- "eager" raises in the call;
- "deferred" checks on the device, writes nothing, and raises from `raise_pending()` (a
  layout error still raises in the call), on each path by which our ops check id lists
  (bad_calls.CHECK_PATHS: in the op's kernel, or by a check kernel launched first, each forced
  through INLINE_CHECK_IDS whatever the case's size; other backends just run twice);
- "deferred-from-flag": deferred, with no call kept to describe (value_modes.RECENT = 0), so
  a value error is raised from the flag's bits alone: the failed checks it names must be
  the error input's `argument` alone (that check's bit is set, and no other parameter's);
- "deferred-row-by-row": for a value error (raised from `raise_pending()`), each row alone
  (every per-row tensor, SamplingBatch fields included, cut to that row) in deferred mode:
  a row that raises raises the declared type and changes nothing, and some row raises (a
  one-row call's device check sees its bad value).
The last two apply to value errors only; a layout error raised in the call skips them.

On each launch path (`test_error_inputs_on_each_launch_path`): a backend whose call's sizes
pick among launch paths, each checking values in kernels of its own (`Backend.path_shapes`),
gets each error input again at each declared shape: zero logits of that shape and each
argument's rows repeated to its batch (row r: row r % 2); one whose paths are forced by knobs
(`Backend.paths`) gets it with each path's knobs. Deferred, the call raises the declared error
and changes nothing, whichever path the input's parameters take there. Inputs about the logits
or an id list (whose allowed ids change with the vocabulary) keep their own shape; layout
errors (raised in the call, before any path) are left out.

Beside an empty vocabulary (`test_error_inputs_beside_an_empty_vocabulary`): the same bad
argument with the logits cut to [2, 0] still raises the declared type, in eager and deferred
mode and on each id-check path (the message is not judged: see `expected_raise`), and
changes nothing. A call on logits of no element launches no op kernel, so a check left to
one would pass the bad value unseen. A backend that rejects an empty vocabulary itself may
raise that ValueError about the logits instead."""

import re

import pytest
import torch

from samplecheck.families.errors import B, V
from samplecheck.harness.call_inputs import cut_rows
from samplecheck.judging.bad_calls import CHECK_PATHS, changed, snapshot
from samplecheck.kernels import value_modes
from samplecheck.kernels.guard import INLINE_CHECK_IDS
from samplecheck.kernels.validation import raise_pending, value_checks

pytestmark = pytest.mark.interpreter

FROM_FLAG, ROW_BY_ROW = "deferred-from-flag", "deferred-row-by-row"
# value_modes._FlagPool.raise_failed: the error of a failed call it can no longer describe.
NAMES_ONLY = re.compile(r"\w+: the value check of (.*) failed in a deferred call, which wrote nothing")


def deferred_call(call, args, kwargs) -> tuple[str | None, Exception | None]:
    """Call in deferred mode, then `raise_pending()`: where an exception came from ("call",
    "raise_pending", or None when nothing raised) and the exception."""
    with value_checks("deferred"):
        try:
            call(*args, **kwargs)
        except Exception as raised:  # judged by the caller against the declared error
            return "call", raised
        try:
            raise_pending()
        except Exception as raised:
            return "raise_pending", raised
    return None, None


def deferred_on_each_path(call, args, kwargs, device, monkeypatch):
    """(path, the exception or None) of a `deferred_call` on each path of CHECK_PATHS, forced
    through INLINE_CHECK_IDS on the call's device."""
    for path, inline_ids in CHECK_PATHS.items():
        monkeypatch.setitem(INLINE_CHECK_IDS, torch.device(device).type, inline_ids)
        yield path, deferred_call(call, args, kwargs)[1]


def value_error(error, backend, call, args, kwargs) -> Exception:
    """The declared error of a deferred call, raised from `raise_pending()`; skips the test
    for a layout error (raised in the call: no flag to judge)."""
    where, raised = deferred_call(call, args, kwargs)
    assert isinstance(raised, error.error), f"deferred call: expected {error.error.__name__}, got {raised!r}"
    if where == "call":
        pytest.skip("raised in the call (a layout error, or an implementation with no guarded kernel)")
    return raised


def check_rows_alone(error, call, args, kwargs) -> None:
    batch = args[0].size(0)
    raising = []
    for row in range(batch):
        rows = slice(row, row + 1)
        row_args, row_kwargs = cut_rows(args, rows, batch), cut_rows(kwargs, rows, batch)
        before = snapshot(row_args, row_kwargs)
        _, raised = deferred_call(call, row_args, row_kwargs)
        if raised is None:
            continue
        assert isinstance(raised, error.error), f"row {row} alone: expected {error.error.__name__}, got {raised!r}"
        assert not changed(before, row_args, row_kwargs), f"row {row} alone changed its inputs before raising"
        raising.append(row)
    assert raising, f"no row alone raised (of {batch}): a one-row call's device check missed the bad value"


@pytest.mark.parametrize("mode", ["eager", "deferred", FROM_FLAG, ROW_BY_ROW])
def test_error_inputs(error_case, device, mode, monkeypatch):
    info, backend, error = error_case
    call = backend.resolve()
    args, kwargs = error.make(device)
    before = snapshot(args, kwargs)
    if mode == "eager":
        with value_checks(mode), pytest.raises(error.error, match=error.match if backend.error_messages else None):
            call(*args, **kwargs)
            raise_pending()
    elif mode == "deferred":
        for path, raised in deferred_on_each_path(call, args, kwargs, device, monkeypatch):
            assert isinstance(raised, error.error), (
                f"ids checked {path}: expected {error.error.__name__}, got {raised!r}")
            assert not backend.error_messages or re.search(error.match, str(raised)), (
                f"ids checked {path}: {str(raised)!r} does not match {error.match!r}")
            assert not changed(before, args, kwargs), f"ids checked {path}: the call changed its inputs before raising"
    elif mode == FROM_FLAG:
        monkeypatch.setattr(value_modes, "RECENT", 0)
        monkeypatch.setattr(value_modes, "_POOLS", {})
        message = str(value_error(error, backend, call, args, kwargs))
        if backend.error_messages:
            described = NAMES_ONLY.match(message)
            assert described, f"expected the names-only message of a deferred call, got {message!r}"
            assert described.group(1).split(", ") == [error.argument], (
                f"the flag's failed checks are not {error.argument!r} alone: {message!r}")
    else:
        value_error(error, backend, call, args, kwargs)
        check_rows_alone(error, call, args, kwargs)
    assert not changed(before, args, kwargs), f"{mode}: the call changed its inputs before raising"


def beside_common_logits(error, args) -> bool:
    """Whether the error input is about an argument other than the logits, on the common
    [B, V] logits (so the logits can be reshaped around it)."""
    return error.argument != "logits" and isinstance(args[0], torch.Tensor) and tuple(args[0].shape) == (B, V)


def empty_vocabulary(error, device) -> tuple[tuple, dict]:
    """The error input's call with its logits cut to no column; skips an input whose error is
    about the logits themselves or whose logits are not the common [B, V]."""
    args, kwargs = error.make(device)
    if not beside_common_logits(error, args):
        pytest.skip("the error is about the logits, or the input has logits of its own shape")
    return (args[0][:, :0], *args[1:]), kwargs


def expected_raise(error, raised, where: str) -> None:
    """`raised` is the declared error type, or a ValueError about the logits (a backend that
    refuses an empty vocabulary). The message is not judged: beside no column the input's
    valid id lists hold ids out of range too, and may be the error reported first."""
    refused = isinstance(raised, ValueError) and "logits" in str(raised)
    assert isinstance(raised, error.error) or refused, (
        f"{where}, logits [{B}, 0]: expected {error.error.__name__}, got {raised!r}")


@pytest.mark.parametrize("mode", ["eager", "deferred"])
def test_error_inputs_beside_an_empty_vocabulary(error_case, device, mode, monkeypatch):
    info, backend, error = error_case
    call = backend.resolve()
    args, kwargs = empty_vocabulary(error, device)
    before = snapshot(args, kwargs)
    if mode == "eager":
        with value_checks(mode), pytest.raises(Exception) as raised:
            call(*args, **kwargs)
            raise_pending()
        expected_raise(error, raised.value, mode)
    else:
        for path, raised in deferred_on_each_path(call, args, kwargs, device, monkeypatch):
            expected_raise(error, raised, f"ids checked {path}")
    assert not changed(before, args, kwargs), f"{mode}, logits [{B}, 0]: the call changed its inputs before raising"


def at_shape(error, info, device, batch: int, vocab: int) -> tuple[tuple, dict] | None:
    """The error input's call at [batch, vocab]: zero logits, every argument of B rows with its
    rows repeated (row r takes row r % B); None for an input about the logits or an id list, or
    whose logits are not the common [B, V]."""
    args, kwargs = error.make(device)
    lists = {listed.param for listed in info.id_lists.lists} if info.id_lists else set()
    if not beside_common_logits(error, args) or error.argument in lists:
        return None
    rows = torch.arange(batch, device=device) % B
    return (args[0].new_zeros(batch, vocab), *cut_rows(args[1:], rows, B)), cut_rows(kwargs, rows, B)


def on_each_launch_path(error, info, backend, device):
    """(where, args, kwargs) of the error input on each launch path the backend declares: at
    each path's shape (`Backend.path_shapes`; none for an input `at_shape` leaves alone), and
    with each path's knobs (`Backend.paths`) at its own shape, its own knobs kept."""
    for path, shapes in backend.path_shapes.items():
        batch, vocab = shapes[torch.device(device).type]
        assert batch >= B, f"the {path} path's declared shape has {batch} rows, fewer than an error input's {B}"
        call = at_shape(error, info, device, batch, vocab)
        if call is not None:
            yield f"the {path} path's shape, logits [{batch}, {vocab}]", *call
    for path, knobs in backend.paths.items():
        args, kwargs = error.make(device)
        yield f"the {path} (knobs {knobs})", args, {**knobs, **kwargs}


def test_error_inputs_on_each_launch_path(error_case, device):
    info, backend, error = error_case
    if not backend.path_shapes and not backend.paths:
        pytest.skip(f"backend {backend.name} declares no launch paths")
    call = backend.resolve()
    if deferred_call(call, *error.make(device))[0] == "call":
        pytest.skip("raised in the call (a layout error), before any launch path")
    calls = list(on_each_launch_path(error, info, backend, device))
    if not calls:
        pytest.skip(f"backend {backend.name} declares no launch paths that this input can be run on")
    for where, args, kwargs in calls:
        before = snapshot(args, kwargs)
        _, raised = deferred_call(call, args, kwargs)
        assert isinstance(raised, error.error), f"{where}: expected {error.error.__name__}, got {raised!r}"
        assert not backend.error_messages or re.search(error.match, str(raised)), (
            f"{where}: {str(raised)!r} does not match {error.match!r}")
        assert not changed(before, args, kwargs), f"{where}: the call changed its inputs before raising"
