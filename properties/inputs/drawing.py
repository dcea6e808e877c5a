"""Drawing cases inside generic tests, and replaying registry regression examples.

Generic tests take `data=st.data()` because the case strategy depends on the pytest
parameter (the kernel record). A record's `RegressionExample`s, and those that
`samplecheck regress` wrote from nightly failures (`samplecheck.inputs.regressions`, or the
file named by the environment variable SAMPLECHECK_REGRESSIONS), are attached to every
template as `@example(data=Replay(...))`; a replay that does not match the running combo is
rejected with `assume`, which Hypothesis allows for explicit examples. Each case reports
what it covers with `hypothesis.event()` (`samplecheck.inputs.coverage`).

A backend that declares `accepts` implements only the cases it accepts: `draw_case` draws
only those, and a property that builds or alters a call itself (rows off, lists padded, rows
cut or added, a case written out) asks `accepted` about it, or skips with
`skip_unless_accepted`.

An example draws every choice before its first device work (a tensor built on the device, a
backend called), so what it draws is a function of Hypothesis' choices alone. Hypothesis
extends an example by replaying its choices: one that stops drawing where an earlier one with
the same choices went on (device work that raised this time, an OOM on a GPU shared by the
workers, or a call whose result ended the test early) is reported as FlakyStrategyDefinition
("the second run stopped drawing earlier"), its traceback holding the work's own error
only as the exception it was handling.
"""

import importlib.util
import os
from dataclasses import dataclass

import pytest
import torch
from hypothesis import assume, event, example

from samplecheck.inputs.coverage import case_events
from samplecheck.kernels.value_modes import drop_pending

from samplecheck.registry.matrix import REGISTRY, Combo
from samplecheck.registry.records import RegressionExample


class ExampleCounter:
    """Cases drawn (or replayed) by the running test; conftest records it per test."""

    count = 0


@dataclass(frozen=True)
class Replay:
    kernel: str
    regression: RegressionExample

    def __repr__(self) -> str:
        return f"Replay({self.kernel!r}, {self.regression.ref!r}, {self.regression.case!r})"


def accepted(combo: Combo, case, logits: torch.Tensor | None = None, args: dict | None = None) -> bool:
    """Whether the combo's backend implements `case` (its declared `accepts`; every case where
    it declares none). With `logits` and `args`, a call a property built or altered itself
    (a case's arguments with rows off, padded, cut or added): the case those arguments
    describe, `make_args.case_of(case, logits, args)` of the record's case family, must be
    accepted; a call no case of the record describes is not (a backend that declares `accepts`
    implements only what a case states)."""
    accepts = combo.backend.accepts
    if accepts is None:
        return True
    if args is not None:
        case_of = getattr(combo.info.make_args, "case_of", None)
        if case_of is None:
            return False
        case = case_of(case, logits, args)
    return bool(accepts(case))


def accepted_cases(combo: Combo, strategy):
    """`strategy` drawing only the cases the combo's backend accepts."""
    return strategy if combo.backend.accepts is None else strategy.filter(lambda case: accepted(combo, case))


def skip_unless_accepted(combo: Combo, case, what: str, logits: torch.Tensor | None = None,
                         args: dict | None = None) -> None:
    """Skip the test (a cell that builds or alters its call itself) where the backend does not
    implement the call (`accepted`), with the reason: `what` and the backend's declared cases."""
    if not accepted(combo, case, logits, args):
        doc = (combo.backend.accepts.__doc__ or combo.backend.accepts.__name__).strip().splitlines()[0]
        pytest.skip(f"backend {combo.backend.name} implements only {doc!r}: not {what}")


def draw_case(data, combo: Combo, strategy):
    """The case for this example: drawn from `strategy`, or the replayed regression case;
    only cases the backend accepts (an API that implements a subset of the parameters)."""
    if isinstance(data, Replay):
        r = data.regression
        assume(data.kernel == combo.info.name and combo.dtype in r.dtypes and combo.layout in r.layouts
               and (r.backends is None or combo.backend.name in r.backends))
        case = r.case
        assume(accepted(combo, case))
    else:
        case = data.draw(accepted_cases(combo, strategy), label="case")
    # An earlier example's deferred value errors are its own (a call it made before it failed,
    # or was cut short): dropped, so that this example's `raise_pending()` raises only its own.
    drop_pending()
    ExampleCounter.count += 1
    for label in case_events(combo, case):
        event(label)
    _log_case(combo, case)
    return case


REGRESSIONS_ENV = "SAMPLECHECK_REGRESSIONS"


def nightly_regressions() -> tuple[tuple[str, RegressionExample], ...]:
    """(kernel, example) pairs written by `samplecheck regress`: from the file named by
    SAMPLECHECK_REGRESSIONS when it is set, else from `samplecheck.inputs.regressions`."""
    path = os.environ.get(REGRESSIONS_ENV)
    if not path:
        from samplecheck.inputs.regressions import REGRESSIONS

        return REGRESSIONS
    spec = importlib.util.spec_from_file_location("samplecheck_nightly_regressions", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.REGRESSIONS


CASE_LOG = "SAMPLECHECK_CASE_LOG"


def _log_case(combo: Combo, case) -> None:
    """With $SAMPLECHECK_CASE_LOG set, append `test <TAB> combo id <TAB> repr(case)` to that
    file, one line per drawn case (counted by samplecheck.tools.cases)."""
    path = os.environ.get(CASE_LOG)
    if path:
        test = os.environ.get("PYTEST_CURRENT_TEST", "").split("[")[0]
        text = repr(case).replace("\n", " ")
        with open(path, "a") as log:
            log.write(f"{test}\t{combo.id}\t{text}\n")


def with_regression_examples(test):
    """Attach the regression examples meant for this test template: the records' own and
    the nightly ones (`nightly_regressions`) of registered kernels."""
    pairs = [(info.name, regression) for info in REGISTRY.values() for regression in info.examples]
    pairs += [(kernel, regression) for kernel, regression in nightly_regressions() if kernel in REGISTRY]
    for kernel, regression in pairs:
        if test.__name__ in regression.tests:
            test = example(data=Replay(kernel, regression))(test)
    return test
