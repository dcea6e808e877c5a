"""How the gate's suite spent its workers' time: each test's record holds when it started and
which pytest-xdist worker ran it, and the gate sums up the workers' busy seconds against the
span of the run, so an idle tail (a worker left waiting for the last test) shows."""

from types import SimpleNamespace

from _pytest.reports import TestReport

from samplecheck.harness import results
from samplecheck.tools import gate


def _report(worker: str | None) -> TestReport:
    report = TestReport("t.py::test_x", ("t.py", 0, "test_x"), {}, "passed", None, "call", duration=2.5,
                        start=1000.0, stop=1002.5)
    if worker is not None:
        report.node = SimpleNamespace(gateway=SimpleNamespace(id=worker))
    return report


def test_a_record_holds_its_start_and_its_worker():
    record = results.test_record(_report("gw3"))
    assert (record["start"], record["worker"], record["duration"]) == (1000.0, "gw3", 2.5)
    assert results.test_record(_report(None))["worker"] == "", "a run without workers names none"


def test_the_gate_sums_up_its_workers_busy_time_against_the_span():
    records = [{"worker": "gw0", "start": 100.0, "duration": 10.0}, {"worker": "gw0", "start": 110.0, "duration": 5.0},
               {"worker": "gw1", "start": 100.5, "duration": 29.5}, {"worker": "", "start": 0.0, "duration": 1.0}]
    assert gate.worker_summary(records, began=88.0) == (
        "the suite's 2 workers spent 22 s on average in test calls (least 15 s, most 30 s) of the 30 s from the "
        "first call's start to the last one's end; the first call started 12 s after the gate")
    assert gate.worker_summary([{"duration": 1.0}], began=0.0) is None, "records without workers say nothing"
