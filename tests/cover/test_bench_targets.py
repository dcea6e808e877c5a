"""Issue 31's targets checked on a benchmark result (bench/targets.py), on hand-written results:
pure Python, no kernel.

Each target is judged in both timings, end to end deciding; a missing figure is a miss; the
exit status says whether every target is met.
"""

import json

import pytest

from samplecheck.tests.cover.bench_modules import in_checkout, loaded_with_bench

pytestmark = [pytest.mark.interpreter, in_checkout("targets")]


@pytest.fixture(scope="module")
def targets():
    yield from loaded_with_bench("targets")


def timed(us: float, gpu_us: float | None = None) -> dict:
    return {"call": "f", "status": "ok", "us": us, "graph": "yes", "gpu_us": us if gpu_us is None else gpu_us,
            "error": None}


def row(op: str, size: str, ours: dict, flashinfer: dict | None = None, copy_us: float = 10.0) -> dict:
    return {"op": op, "label": op, "size": size, "copy_us": copy_us, "copy_gpu_us": copy_us,
            "ours": ours, "torch": None, "flashinfer": flashinfer}


def result(*rows: dict) -> dict:
    return {"schema": 1, "meta": {"device": "GPU test", "command": "bench.kernels"}, "rows": list(rows)}


def by_target(found) -> dict:
    return {(v.target.split()[0], v.size): v.met for v in found}


def test_selection_ops_are_held_to_flashinfers_matching_call(targets):
    found = targets.verdicts(result(row("top_k", "64x151936", timed(30.0), timed(35.0)),
                                    row("top_p", "64x151936", timed(40.0), timed(35.0)),
                                    row("top_k_top_p", "64x151936", timed(1.0))))
    assert by_target(found) == {("top_k", "64x151936"): (True, True), ("top_p", "64x151936"): (False, False)}


def test_elementwise_ops_need_the_copys_bandwidth_at_64_rows_and_a_fixed_cost_at_one(targets):
    found = targets.verdicts(result(row("min_p", "64x151936", timed(14.0)),  # 71% of the copy's bandwidth
                                    row("min_p", "256x151936", timed(15.0)),  # 67%
                                    row("min_p", "16x151936", timed(100.0)),  # between: no target
                                    row("temperature", "1x151936", timed(15.0)),
                                    row("temperature", "1x32000", timed(15.5))))
    assert by_target(found) == {("min_p", "64x151936"): (True, True), ("min_p", "256x151936"): (False, False),
                                ("temperature", "1x151936"): (True, True), ("temperature", "1x32000"): (False, False)}


def test_the_pipeline_gets_twice_flashinfers_sampler_and_host_work_shows_as_a_gpu_only_pass(targets):
    found = targets.verdicts(result(row("top_k_top_p_sample", "1x151936", timed(50.0), timed(100.0)),
                                    row("pipeline", "1x151936", timed(250.0, gpu_us=120.0))))
    assert by_target(found)[("pipeline", "1x151936")] == (False, True)
    text, all_met = targets.report(result(row("top_k_top_p_sample", "1x151936", timed(50.0), timed(100.0)),
                                          row("pipeline", "1x151936", timed(250.0, gpu_us=120.0))))
    assert not all_met
    assert "250.0 > 200.0 (2 x FlashInfer) **missed**" in text
    assert "1 of 2 met end to end; 1 missed (1 of them met in GPU time alone: host work)." in text


def test_a_missing_figure_is_a_miss(targets):
    failed = {"call": "f", "status": "error", "us": None, "graph": None, "gpu_us": None, "error": "E: x"}
    found = targets.verdicts(result(row("top_k", "1x151936", timed(10.0), None),
                                    row("top_p", "1x151936", failed, timed(10.0)),
                                    row("pipeline", "1x151936", timed(10.0))))
    assert [v.texts for v in found] == [("not measured", "not measured")] * 3
    assert not any(met for v in found for met in v.met)


def test_exit_status_says_whether_every_target_is_met(targets, tmp_path, capsys):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(result(row("top_k", "1x151936", timed(10.0), timed(12.0)))))
    assert targets.main([str(path)]) == 0
    assert "1 of 1 met end to end; 0 missed" in capsys.readouterr().out
    path.write_text(json.dumps(result(row("top_k", "1x151936", timed(13.0), timed(12.0)))))
    assert targets.main([str(path)]) == 1
