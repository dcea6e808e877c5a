"""The suite's run order (samplecheck.harness.ordering), its durations table
(samplecheck.tools.durations) and the CUDA wait mode (samplecheck.harness.cuda_wait)."""

import json
import types

import pytest
from hypothesis import given, strategies as st

from samplecheck.harness import ordering
from samplecheck.harness.cuda_wait import CudaWaitNotSet, set_wait
from samplecheck.tools import durations

pytestmark = pytest.mark.interpreter


@given(costs=st.lists(st.floats(0, 30), max_size=200), workers=st.integers(1, 17))
def test_dealt_shares_are_worksteals_longest_first_and_balanced(costs, workers):
    order = ordering.dealt(costs, workers)
    assert sorted(order) == list(range(len(costs)))
    start = 0
    totals = []
    for size in ordering.share_sizes(len(costs), workers) if workers > 1 else [len(costs)]:
        share = [costs[i] for i in order[start:start + size]]
        assert share == sorted(share, reverse=True), "each share runs its longest test first"
        totals.append(sum(share))
        start += size
    assert start == len(costs)
    if workers > 1 and costs and len(costs) % workers == 0:
        assert max(totals) - min(totals) <= max(costs) + 1e-9, "equal-sized shares differ by one test at most"


def test_share_sizes_are_what_worksteal_sends_idle_workers():
    assert ordering.share_sizes(37, 4) == [9, 9, 9, 10]
    assert ordering.share_sizes(3, 5) == [0, 0, 1, 1, 1]


def test_unknown_tests_cost_their_functions_mean_else_the_median():
    known = {"test_a rec triton": 4.0, "test_a rec torch": 2.0, "test_b": 10.0}
    keys = ["test_a rec triton", "test_a other mine", "test_c x y"]
    assert ordering.expected_seconds(keys, known) == [4.0, 3.0, 4.0]


def _item(name: str):
    return types.SimpleNamespace(originalname=name, name=name)


def test_only_the_suites_tests_move(monkeypatch):
    monkeypatch.setattr(ordering, "table", lambda device: {"test_slow": 9.0, "test_fast": 1.0})
    config = types.SimpleNamespace(getoption=lambda name: "cost",
                                   samplecheck_device=types.SimpleNamespace(type="cuda"))
    fast, slow, theirs = _item("test_fast"), _item("test_slow"), _item("test_theirs")
    items = [fast, theirs, slow]
    ordering.reorder(config, items, [fast, slow])
    assert items == [slow, theirs, fast]
    config.getoption = lambda name: "collection"
    ordering.reorder(config, items, [slow, fast])
    assert items == [slow, theirs, fast]


def test_the_durations_table_holds_each_cells_mean(tmp_path):
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"tests": [
        {"nodeid": "tests/cover/test_x.py::test_x[r-triton-fp32-contig]", "property": "test_x", "kernel": "r",
         "backend": "triton", "duration": 2.0},
        {"nodeid": "tests/cover/test_x.py::test_x[r-triton-bf16-contig]", "property": "test_x", "kernel": "r",
         "backend": "triton", "duration": 4.0},
        {"nodeid": "tests/cover/test_y.py::test_y", "property": "test_y", "duration": 1.5}]}))
    table = tmp_path / "durations.json"
    table.write_text(json.dumps({"cpu": {"test_old": 1.0}}))
    assert durations.main([str(results), "--device", "cuda", "--table", str(table)]) == 0
    assert json.loads(table.read_text()) == {"cpu": {"test_old": 1.0},
                                             "cuda": {"test_x r triton": 3.0, "test_y": 1.5}}


def test_the_packaged_table_knows_most_of_the_suite():
    for device in ("cuda", "cpu"):
        assert len(ordering.table(device)) > 300, f"durations.json has no {device} table: see its module docstring"


def test_a_wait_mode_that_cannot_be_set_says_so_and_changes_nothing(monkeypatch):
    set_wait("auto", 0)  # CUDA's own default: nothing to set
    monkeypatch.setattr("ctypes.CDLL", lambda name: (_ for _ in ()).throw(OSError(f"{name}: not found")))
    with pytest.warns(CudaWaitNotSet, match="--sc-cuda-wait=block: no CUDA driver library"):
        set_wait("block", 0)
