"""Drawing cases inside generic tests, and replaying registry regression examples.

Generic tests take `data=st.data()` because the case strategy depends on the pytest
parameter (the kernel record). A record's `RegressionExample`s are attached to every
template as `@example(data=Replay(...))`; a replay that does not match the running
combo is rejected with `assume`, which Hypothesis allows for explicit examples.
"""

import os
from dataclasses import dataclass

from hypothesis import assume, example

from samplecheck.harness.registry import REGISTRY, Combo, RegressionExample


class ExampleCounter:
    """Cases drawn (or replayed) by the running test; conftest records it per test."""

    count = 0


@dataclass(frozen=True)
class Replay:
    kernel: str
    regression: RegressionExample

    def __repr__(self) -> str:
        return f"Replay({self.kernel!r}, {self.regression.ref!r}, {self.regression.case!r})"


def draw_case(data, combo: Combo, strategy):
    """The case for this example: drawn from `strategy`, or the replayed regression case;
    only cases the backend accepts (an API that implements a subset of the parameters)."""
    accepts = combo.backend.accepts
    if isinstance(data, Replay):
        r = data.regression
        assume(data.kernel == combo.info.name and combo.dtype in r.dtypes and combo.layout in r.layouts)
        case = r.case
        assume(accepts is None or accepts(case))
    else:
        case = data.draw(strategy if accepts is None else strategy.filter(accepts), label="case")
    ExampleCounter.count += 1
    _log_case(combo, case)
    return case


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
    """Attach the registered regression examples meant for this test template."""
    for info in REGISTRY.values():
        for regression in info.examples:
            if test.__name__ in regression.tests:
                test = example(data=Replay(info.name, regression))(test)
    return test
