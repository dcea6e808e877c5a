"""The benchmark regression check (bench/compare.py) on hand-written results: pure Python, no kernel.

It reports an op/size whose time grew by more than the threshold (15%) and the floor (1 µs),
stays quiet about smaller changes, and exits 0 whatever it finds.
"""

import json

import pytest

from samplecheck.tests.cover.bench_modules import in_checkout, load

pytestmark = [pytest.mark.interpreter, in_checkout("compare")]


@pytest.fixture(scope="module")
def compare():
    return load("compare")


def result(times: dict[tuple[str, str], float], copy_us: float = 40.0) -> dict:
    """A bench.kernels JSON result with our time per (op, size)."""
    rows = [{"op": op, "label": op, "size": size, "copy_us": copy_us, "torch": None, "flashinfer": None,
             "ours": {"call": op, "status": "ok", "us": us, "graph": "yes", "error": None}}
            for (op, size), us in times.items()]
    return {"schema": 1, "meta": {"device": "GPU test"}, "rows": rows}


BASELINE = result({("temperature", "64x151936"): 100.0, ("top_k", "64x151936"): 100.0,
                   ("min_p", "1x151936"): 2.0})


def test_twenty_percent_slower_is_reported_ten_percent_is_not(compare):
    new = result({("temperature", "64x151936"): 120.0, ("top_k", "64x151936"): 110.0, ("min_p", "1x151936"): 2.0})
    slower, lines = compare.compare(BASELINE, new)
    assert [(c.op, c.size) for c in slower] == [("temperature", "64x151936")]
    assert lines[0] == "SLOWER temperature @ 64x151936: 100.0 -> 120.0 µs (+20.0%)"
    assert lines[1].startswith("summary: 3 op/size pairs compared, 1 more than 15% (and 1 µs) slower")


def test_runs_of_different_logits_dtypes_are_named(compare):
    fp32 = result({("top_k", "64x151936"): 100.0})
    fp32["meta"]["dtype"] = "fp32"
    lines = compare.compare(BASELINE, fp32)[1]  # a baseline without a dtype is a bf16 run
    assert "  the runs timed different logits dtypes: bf16 vs fp32" in lines
    assert not any("dtypes" in line for line in compare.compare(BASELINE, BASELINE)[1])


def test_changes_below_the_floor_are_not_reported(compare):
    new = result({("temperature", "64x151936"): 100.0, ("top_k", "64x151936"): 100.0, ("min_p", "1x151936"): 2.9})
    assert compare.compare(BASELINE, new)[0] == []
    assert [c.op for c in compare.compare(BASELINE, new, floor_us=0.5)[0]] == ["min_p"]


def test_threshold_option_and_exit_status(compare, tmp_path, capsys):
    files = []
    for name, data in (("base.json", BASELINE), ("new.json", result({("temperature", "64x151936"): 110.0}))):
        files.append(tmp_path / name)
        files[-1].write_text(json.dumps(data))
    assert compare.main([str(f) for f in files] + ["--threshold", "5"]) == 0
    out = capsys.readouterr().out
    assert "SLOWER temperature @ 64x151936: 100.0 -> 110.0 µs (+10.0%)" in out
    assert "not measured in the new run: min_p @ 1x151936, top_k @ 64x151936" in out


def test_the_gate_reports_why_it_did_not_benchmark(tmp_path):
    """`samplecheck gate`'s benchmark report runs only on CUDA with a baseline, and says so."""
    from samplecheck.tools.bench_check import report

    assert "no baseline" in report("cuda", tmp_path, tmp_path / "missing.json")
    baseline = tmp_path / "h200.json"
    baseline.write_text(json.dumps(result({("temperature", "1x8"): 10.0})))
    assert "timings need CUDA" in report("cpu", tmp_path, baseline)
