"""Per-test results as JSON, for the nightly report (`samplecheck.tools.report`).

    pytest ... --sc-results=PATH.json [--sc-deadline=EPOCH]

With `--sc-results`, every test leaves one record: node id, property (the test
function), kernel/backend/dtype/layout (from its `combo` or `error_case` parameter),
outcome, duration, examples drawn, the reproduce command and Hypothesis blob of a failure
with its falsifying case and message, the coverage labels its cases reported with
`hypothesis.event()` (examples per label), its `hypothesis.target()` maxima, its slowest
case, the p-values of every sampling check it ran (`check_samples`), what a passing test
measured of a behaviour its backend does not declare (`MEASURED`), and the Triton compiles
its call caused (samplecheck.harness.compiles). The worker that
runs a test gathers these into `item.user_properties` (so they travel through
pytest-xdist); the controlling process writes the file when the session ends, also when it
is interrupted.

Hypothesis features come from its documented observability callbacks, with coverage
tracing off (`OBSERVABILITY_COLLECT_COVERAGE`, exposed for speed): tracing every line of a
kernel under the Triton interpreter would cost more than the test.

With `--sc-deadline`, a test that would start after that time (seconds since the
epoch) is skipped with the reason that the run's time budget is spent: the nightly
command's stopping rule.
"""

import json
import platform
import re
import time
from collections import Counter
from pathlib import Path

import pytest

BUDGET_SPENT = "nightly time budget spent before this test started"
# A test's user property naming what it measured of a behaviour the backend does not declare
# (test_batch_invariance: "not declared batch invariant, and it is not: ..."); the test passes,
# and the reports show the measurement in its cell.
MEASURED = "measured"
MESSAGE_CHARS = 600
CASE_CHARS = 1500


def configure(config) -> None:
    """Register the recorders the options ask for (in every process, xdist workers included;
    the file is written by the controlling process only)."""
    path = config.getoption("--sc-results")
    if path:
        config.pluginmanager.register(CaseRecorder(), "samplecheck-case-recorder")
        if not hasattr(config, "workerinput"):
            config.pluginmanager.register(ResultsWriter(Path(path), config), "samplecheck-results-writer")
    deadline = config.getoption("--sc-deadline")
    if deadline is not None:
        config.pluginmanager.register(Deadline(deadline), "samplecheck-deadline")


class Deadline:
    def __init__(self, epoch: float):
        self.epoch = epoch

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        if time.time() > self.epoch:
            pytest.skip(BUDGET_SPENT)


class CaseRecorder:
    """Gathers a test's matrix cell, Hypothesis features and sampling p-values into its
    user properties."""

    def __init__(self):
        from hypothesis.internal import observability

        from samplecheck.harness.compiles import CompileRecorder

        observability.OBSERVABILITY_COLLECT_COVERAGE = False
        self.compiles = CompileRecorder()
        self.compiles.install()

    def pytest_unconfigure(self, config):
        self.compiles.uninstall()

    def pytest_collection_modifyitems(self, items):
        from samplecheck.registry.matrix import Combo
        from samplecheck.registry.records import DTYPE_NAMES

        for item in items:
            params = getattr(getattr(item, "callspec", None), "params", {})
            combo, error_case = params.get("combo"), params.get("error_case")
            if isinstance(combo, Combo):
                item.user_properties += [("kernel", combo.info.name), ("backend", combo.backend.name),
                                         ("dtype", DTYPE_NAMES[combo.dtype]), ("layout", combo.layout)]
            elif isinstance(error_case, tuple):  # (record, backend, error input); an empty matrix gives NOTSET
                info, backend, _ = error_case
                item.user_properties += [("kernel", info.name), ("backend", backend.name)]

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item):
        """Each sampling check is recorded as [G p, excess p, level of each, the check that
        fired or '', G-test degrees of freedom (0: a single bin, the G-test is vacuous)]."""
        from hypothesis.internal.observability import with_observability_callback

        from samplecheck.judging.stats import VERDICT_OBSERVERS

        events, targets, checks, slowest = Counter(), {}, [], [0.0, ""]
        cases = [0]

        def observe(observation):
            if observation.type != "test_case" or observation.status == "gave_up":
                return
            cases[0] += 1
            for key, value in observation.features.items():
                if key.startswith("target:"):
                    label = key.removeprefix("target:")
                    targets[label] = max(targets.get(label, float("-inf")), float(value))
                else:
                    events[key] += 1
            seconds = sum(observation.timing.values())
            if seconds > slowest[0]:
                slowest[:] = [seconds, observation.representation[:CASE_CHARS]]

        def note_verdict(verdict):
            gp, ep, share, fired, df = verdict.record()
            checks.append([_round(gp), _round(ep), _round(share), fired, df])

        VERDICT_OBSERVERS.append(note_verdict)
        self.compiles.take()
        try:
            with with_observability_callback(observe):
                return (yield)
        finally:
            VERDICT_OBSERVERS.remove(note_verdict)
            item.user_properties += [("cases", cases[0]), ("events", dict(events)), ("targets", targets),
                                     ("checks", checks), ("compiles", self.compiles.take())]
            if cases[0]:
                item.user_properties.append(("slowest_case", {"seconds": round(slowest[0], 4), "case": slowest[1]}))


def _round(x: float) -> float:
    return float(f"{x:.4g}")


class ResultsWriter:
    """Collects one record per test from the reports and writes them at session end."""

    def __init__(self, path: Path, config):
        self.path = path
        self.config = config
        self.records: dict[str, dict] = {}
        self.started = time.time()

    def pytest_runtest_logreport(self, report):
        first_problem = report.when == "setup" and not report.passed
        if report.when == "call" or first_problem or (report.when == "teardown" and report.failed
                                                      and report.nodeid not in self.records):
            self.records[report.nodeid] = test_record(report)
        elif report.when == "teardown" and report.nodeid in self.records:
            # The reproduce properties are added to the item after its call report is made.
            props = dict(report.user_properties)
            record = self.records[report.nodeid]
            for key in ("reproduce", "hypothesis_blob"):
                if key in record and props.get(key):
                    record[key] = props[key]

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        """Written first, before pytest-xdist stops its workers, so an interrupt during
        that shutdown cannot lose the records."""
        config = self.config
        meta = {
            "started": self.started, "finished": time.time(), "exit_status": int(exitstatus),
            "device": str(getattr(config, "samplecheck_device", "")),
            "profile": config.getoption("--sc-profile", default=None) or "dev",
            "stat_alpha": config.getoption("--sc-stat-alpha"),
            "mutant": config.getoption("--sc-mutant"), "host": platform.node(),
            "args": [str(a) for a in config.invocation_params.args],
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps({"meta": meta, "tests": list(self.records.values())}, indent=1))


def outcome_of(report) -> str:
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    if report.when != "call" and report.failed:
        return "error"
    return report.outcome


def test_record(report) -> dict:
    """The JSON record of a test from its call report (or its failed/skipped setup)."""
    props = dict(report.user_properties)
    name = report.nodeid.split("::")[-1]
    outcome = outcome_of(report)
    record = {
        "nodeid": report.nodeid,
        "property": name.split("[")[0],
        "params": name[name.index("[") + 1:-1] if "[" in name else "",
        "kernel": props.get("kernel"), "backend": props.get("backend"),
        "dtype": props.get("dtype"), "layout": props.get("layout"),
        "outcome": outcome, "duration": round(report.duration, 4),
        # When the phase began (epoch seconds) and the pytest-xdist worker that ran it ("" in a
        # run without workers): with the duration, the run's timeline (the gate's idle tail).
        "start": round(report.start, 3), "worker": _worker_of(report),
        "examples": props.get("examples", 0), "cases": props.get("cases", 0),
        "events": props.get("events", {}), "targets": props.get("targets", {}),
        "checks": props.get("checks", []), "slowest_case": props.get("slowest_case"),
        "compiles": props.get("compiles", {}),
    }
    if outcome in ("failed", "error", "xpassed"):
        crash = _crash_text(report)
        record.update(reproduce=props.get("reproduce"), hypothesis_blob=props.get("hypothesis_blob"),
                      case=falsifying_case(crash), message=_message(crash))
    elif outcome in ("skipped", "xfailed"):
        record["message"] = _skip_reason(report)
    elif props.get(MEASURED):
        record[MEASURED] = props[MEASURED][:MESSAGE_CHARS]
    return record


def _worker_of(report) -> str:
    """The id of the pytest-xdist worker a report came from ("gw3"), "" in a run without workers."""
    gateway = getattr(getattr(report, "node", None), "gateway", None)
    return str(getattr(gateway, "id", ""))


def _crash_text(report) -> str:
    """The failing exception's text (with the notes Hypothesis adds), else the last line of
    the report."""
    crash = getattr(report.longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message
    lines = report.longreprtext.strip().splitlines()
    return lines[-1] if lines else ""


NOTES = re.compile(r"^(Falsifying|Failing|Trying|\(note:|You can reproduce)", re.MULTILINE)


def _message(crash: str) -> str:
    """The assertion's own message, without the example Hypothesis appends."""
    match = NOTES.search(crash)
    return crash[:match.start() if match else None].strip()[:MESSAGE_CHARS]


def _skip_reason(report) -> str:
    if hasattr(report, "wasxfail"):
        return str(report.wasxfail)[:MESSAGE_CHARS]
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return reason.removeprefix("Skipped: ")[:MESSAGE_CHARS]


DRAW = re.compile(r"Draw \d+ \(case\): ")


def falsifying_case(text: str) -> str | None:
    """The repr of the case Hypothesis printed for the falsifying example ("Draw N (case):
    ..."), its lines joined, or None."""
    match = DRAW.search(text)
    if match is None:
        return None
    depth, end = 0, None
    for i in range(match.end(), len(text)):
        depth += text[i] in "([{"
        depth -= text[i] in ")]}"
        if depth == 0 and text[i] in ")]}":
            end = i + 1
            break
    if end is None:
        return None
    return " ".join(line.strip() for line in text[match.end():end].splitlines())[:CASE_CHARS]
