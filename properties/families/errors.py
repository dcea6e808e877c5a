"""Error-input sets: the one builder of a bad call and the inputs every kernel rejects.

An `ErrorInput.make(device)` (and a bad-input table entry's, samplecheck.families.bad_inputs)
returns (args, kwargs); `call` builds it from the logits and the arguments, each either a
function of the device (a tensor made there) or a plain value passed as given, so a record
writes only what is wrong with the call. The argument builders below (`ids`, `floats`,
`full`, `every_other`, `strided_columns`, `on_other_device`, `on_meta`) are the one
vocabulary of both.
"""

from collections.abc import Callable

import torch

from samplecheck.registry.records import ErrorInput, tensor_on, zeros_on

NAN, INF = float("nan"), float("inf")
B, V = 2, 8  # the size of every bad call: 2 rows of a vocabulary of 8
LOGITS = zeros_on(B, V)  # the valid logits of every error input


def built(value, device):
    """An argument as a call receives it: a function of the device called there, any other
    value as given."""
    return value(device) if callable(value) else value


def call(logits=LOGITS, **params):
    """make(device) for an ErrorInput: `logits` and each parameter `built` on the device."""
    def make(device):
        return (built(logits, device),), {name: built(value, device) for name, value in params.items()}
    return make


def ids(values, dtype=torch.int64):
    """Token ids (or any integer argument) as given, on the device."""
    return tensor_on(values, dtype)


def floats(values, dtype=torch.float32):
    """A float argument as given (float32 unless another dtype is the error), on the device."""
    return tensor_on(values, dtype)


def full(shape, value, dtype=torch.int64):
    """A tensor of `shape` filled with `value`, on the device (lists over a cap)."""
    return lambda device: torch.full(shape, value, dtype=dtype, device=device)


def every_other(values, dtype=torch.float32):
    """A strided [len / 2] view of `values` on the device (a non-contiguous per-row argument)."""
    return lambda device: tensor_on(values, dtype)(device)[::2]


def strided_columns(make):
    """Every other column of the 2-D tensor `make(device)`: a view of column stride 2."""
    return lambda device: make(device)[:, ::2]


def other_device(device: str) -> str:
    """A device that is not the call's: meta beside the CPU, the CPU beside any other."""
    return "meta" if device == "cpu" else "cpu"


def on_other_device(make):
    """The argument `make` builds, made on the `other_device` of the call's."""
    return lambda device: make(other_device(device))


def on_meta(make):
    """The argument `make` builds, made on the meta device whatever the call's."""
    return lambda device: make("meta")


def logits_errors(**valid) -> tuple[ErrorInput, ...]:
    """The bad logits every kernel rejects first (1-D, float64, a column-strided view), each
    beside the record's `valid` other arguments for two rows."""
    return (
        ErrorInput("1-D logits", call(zeros_on(8), **valid), ValueError, r"logits must be 2-D", argument="logits"),
        ErrorInput("float64 logits", call(zeros_on(2, 8, dtype=torch.float64), **valid),
                   TypeError, r"logits dtype must be one of float32, bfloat16, float16", argument="logits"),
        ErrorInput("column-strided logits", call(strided_columns(zeros_on(2, 16)), **valid),
                   ValueError, r"column stride 1", argument="logits"),
    )


def sampler_logits_errors(**valid) -> tuple[ErrorInput, ...]:
    """The bad logits a sampler also rejects: an empty vocabulary (no id to sample), beside the
    record's `valid` other arguments for two rows."""
    return rejected("logits", ValueError, r"logits must have vocab >= 1", {"empty vocab": zeros_on(2, 0)}, **valid)


def row_shape(name: str) -> str:
    """The message of a per-row argument of the wrong shape (two rows)."""
    return rf"{name} must have shape \[batch\] = \[2\]"


def dtype_message(name: str, allowed: str) -> str:
    return rf"{name} dtype must be one of {allowed}"


def rejected(argument: str, error: type[Exception], match: str, bad: dict, **valid) -> tuple[ErrorInput, ...]:
    """One ErrorInput per entry of `bad` (description -> the bad value of `argument`), each
    a call with the record's `valid` arguments but that one, raising `error` matching `match`."""
    return tuple(ErrorInput(description, call(**{**valid, argument: value}), error, match, argument=argument)
                 for description, value in bad.items())


def id_range(argument: str, padding: str = "") -> str:
    """The start of the message for an id list outside its allowed ids (at V = 8): ids in
    [0, 8), -1 as padding, and `padding` for a list that also pads with V (", 8")."""
    return rf"{argument} must hold token ids in \[0, 8\) or -1 \(padding\){padding}"


def id_ends(argument: str, allowed: str, holding: Callable[[int], Callable], ends: tuple[int, int] = (-2, 8),
            reject=rejected, **valid) -> tuple[ErrorInput, ...]:
    """The ids just outside both ends of an id list's allowed set: by default -2 (below the
    pad -1) and V = 8 (above [0, V)); a list that also accepts V as padding passes (-2, 9).
    `holding(bad)` is the list's 2-row value holding `bad` once; `allowed` the start of the
    message (up to "; got"). `reject`: `rejected`, or the sampler's builder over its
    SamplingBatch fields (same signature)."""
    return sum((reject(argument, ValueError, rf"{allowed}; got {bad}", {f"{argument} id {bad}": holding(bad)}, **valid)
                for bad in ends), ())
