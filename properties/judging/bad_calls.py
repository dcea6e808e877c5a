"""Judging a bad call: one bad-input table entry on one backend -> its outcome, and whether a
call changed its inputs.

Outcomes (the counts the lead quotes, `samplecheck badinputs`):
- "clear error": the declared exception type, and (for our backends) a message that names
  the caller's argument as a word and states what is allowed (RANGE_WORDS);
- "documented result": no exception, and the entry's result check passes;
- "unclear": anything else (another exception, a message missing the argument, no error
  where one is declared, a result other than the documented one);
- "input changed before error": an exception left an input (logits or any other
  argument, fields of a SamplingBatch included) not bitwise equal to what was passed.
A documented result may change only what its contract writes (in-place ops: the logits).
The table itself is data (samplecheck.families.bad_inputs.TABLE), passed in by the caller.
"""

import re
from collections import Counter
from dataclasses import dataclass

import torch

from samplecheck.inputs.tensor_tree import named_tensors
from samplecheck.kernels.validation import raise_pending
from samplecheck.registry import catalog
from samplecheck.registry.records import BadInput

CLEAR, DOCUMENTED, UNCLEAR, CHANGED = ("clear error", "documented result", "unclear", "input changed before error")
OUTCOMES = (CLEAR, DOCUMENTED, UNCLEAR, CHANGED)
RANGE_WORDS = ("must", "required", "at most")  # a message states what is allowed
# The two paths by which our ops with id lists check them (samplecheck.kernels.guard), each as
# the value of INLINE_CHECK_IDS on the call's device that forces it whatever the lists' size:
# checked inside the op's own kernel, or by the fused check kernel launched before it.
CHECK_PATHS = {"in-kernel": 2**62, "launched-first": 0}


@dataclass(frozen=True)
class Outcome:
    """One of OUTCOMES (`kind`) and what happened (`detail`: the exception, or what is wrong)."""

    kind: str
    detail: str


def _bits(t: torch.Tensor):
    """A host copy of a tensor's exact contents (meta tensors: only their layout)."""
    if t.device.type == "meta":
        return (tuple(t.shape), t.dtype)
    return (tuple(t.shape), t.dtype, t.detach().cpu().contiguous().view(-1).view(torch.uint8).clone())


def _same(a, b) -> bool:
    return a[:2] == b[:2] and (len(a) == 2 or torch.equal(a[2], b[2]))


def snapshot(args, kwargs) -> dict:
    """Every tensor a call's (args, kwargs) hold (SamplingBatch fields included), by path
    ("args[0]", "params.top_k"), as a host copy of its exact bits."""
    named = [(f"args[{i}]", a) for i, a in enumerate(args)] + list(kwargs.items())
    return {path: _bits(t) for name, value in named for path, t in named_tensors(value, name)}


def changed(before: dict, args, kwargs, allowed=()) -> list[str]:
    """The paths of `before` (a `snapshot` of the same call) whose tensors are no longer
    bitwise equal, those in `allowed` left out."""
    after = snapshot(args, kwargs)
    return [path for path, bits in before.items() if path not in allowed and not _same(bits, after[path])]


def names_argument(message: str, argument: str) -> bool:
    """The argument as a word (so `k` is not found inside `top_k`), with what is allowed."""
    named = re.search(rf"(?<![\w.]){re.escape(argument)}(?!\w)", message) is not None
    return named and any(word in message for word in RANGE_WORDS)


def run(entry: BadInput, fn, device: str, *, messages: bool = True) -> Outcome:
    """Call `fn` on the entry's input on `device` and classify what happened; `messages`
    False: an error is judged by its type alone (a plug-in's wording is its own)."""
    args, kwargs = entry.make(device)
    before = snapshot(args, kwargs)
    try:
        output = fn(*args, **kwargs)
        raise_pending()  # a deferred value check's error (docs/validation.md)
    except Exception as exc:  # noqa: BLE001 - every exception is classified
        moved = changed(before, args, kwargs)
        if moved:
            return Outcome(CHANGED, f"{type(exc).__name__} after changing {', '.join(moved)}")
        if entry.error is None:
            return Outcome(UNCLEAR, f"documented result expected, raised {type(exc).__name__}: {exc}")
        if not isinstance(exc, entry.error):
            return Outcome(UNCLEAR, f"expected {entry.error.__name__}, raised {type(exc).__name__}: {exc}")
        if messages and not names_argument(str(exc), entry.argument):
            return Outcome(UNCLEAR, f"message does not name {entry.argument!r} and its range: {exc}")
        return Outcome(CLEAR, f"{type(exc).__name__}: {exc}")
    if entry.error is not None:
        return Outcome(UNCLEAR, f"expected {entry.error.__name__} naming {entry.argument!r}, got a result")
    moved = changed(before, args, kwargs, allowed=("args[0]",))
    if moved:
        return Outcome(UNCLEAR, f"the result changed inputs its contract does not write: {', '.join(moved)}")
    try:
        entry.result(output, args, kwargs)
    except Exception as exc:  # noqa: BLE001 - a check that cannot run is not the documented result
        return Outcome(UNCLEAR, f"not the documented result: {type(exc).__name__}: {exc}")
    return Outcome(DOCUMENTED, "as documented")


def cases(table, device: str, registry: dict):
    """(entry, record, backend) for every entry of `table` and every backend of its record
    that runs on `device`. The documented results (edge values) are the contract of the
    backends we ship (`Backend.ours`: samplecheck.kernels, mutants included); third-party adapters
    (FlashInfer's) and plug-ins get the error entries only, plug-ins (error_messages=False)
    by exception type; a backend whose error inputs are skipped by declaration (it validates
    nowhere, e.g. vLLM's kernels, which take state validated upstream) gets none."""
    for entry in table:
        info = registry.get(entry.kernel)
        if info is None:
            continue
        for backend in info.backends:
            unvalidated = any(m.kind == "skip" and m.test == catalog.ERROR_INPUTS for m in backend.marks)
            outside_contract = entry.error is None and not backend.ours  # a documented result: ours alone
            if device not in backend.devices or outside_contract or (entry.error and unvalidated):
                continue
            yield entry, info, backend


def tally(table, device: str, registry: dict) -> tuple[Counter, list[str]]:
    """Outcome counts over `table` on `device`, and one line per cell neither a clear error
    nor its documented result."""
    counts, notes = Counter(), []
    for entry, info, backend in cases(table, device, registry):
        outcome = run(entry, backend.resolve(), device, messages=backend.error_messages)
        counts[outcome.kind] += 1
        if outcome.kind in (UNCLEAR, CHANGED):
            notes.append(f"{info.name}/{backend.name}: {entry.description}: {outcome.detail}")
    return counts, notes
