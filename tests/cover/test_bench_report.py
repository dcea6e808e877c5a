"""The benchmark's markdown (bench/report.py) on hand-written results: pure Python, no kernel.
A CUDA result carries each call's GPU time alone (its graph's replay) in a second summary, so
a host-bound figure is told from a slow kernel; a CPU result has no such table."""

import pytest

from samplecheck.tests.cover.bench_modules import in_checkout, load

pytestmark = [pytest.mark.interpreter, in_checkout("report")]


@pytest.fixture(scope="module")
def report():
    return load("report")


def result(report, copy_gpu_us):
    ours = report.cell("apply_min_p", us=58.6, graph="yes", gpu_us=None if copy_gpu_us is None else 10.8)
    uncaptured = report.cell("apply_x", us=20.0, graph="no: RuntimeError")
    rows = [{"op": "min_p", "label": "min_p (0.05)", "size": "1x151936", "copy_us": 4.4, "copy_gpu_us": copy_gpu_us,
             "ours": ours, "torch": None, "flashinfer": None},
            {"op": "x", "label": "x op", "size": "1x151936", "copy_us": 4.4, "copy_gpu_us": copy_gpu_us,
             "ours": uncaptured, "torch": None, "flashinfer": None}]
    meta = {"device": "GPU test", "torch": "t", "triton": "3", "flashinfer": "f", "date": "d", "command": "c",
            "method": "m", "sizes": ["1x151936"]}
    return {"schema": report.SCHEMA, "meta": meta, "rows": rows}


def test_cuda_result_has_the_gpu_time_table(report):
    text = report.markdown(result(report, copy_gpu_us=5.5))
    summary, gpu = text.split("## GPU time alone (CUDA graph replay, µs)")
    assert "| min_p (0.05) | 58.6 |" in summary
    gpu = gpu.split("\n## ")[0]
    assert "| copy of the logits (read + write) | 5.5 |" in gpu
    assert "| min_p (0.05) | 10.8 |" in gpu
    assert "| x op | not captured |" in gpu


def test_cpu_result_has_no_gpu_time_table(report):
    assert "GPU time alone" not in report.markdown(result(report, copy_gpu_us=None))


def test_the_header_names_the_logits_dtype(report):
    fp16 = result(report, copy_gpu_us=None)
    fp16["meta"]["dtype"] = "fp16"
    assert "Sizes (B x V, fp16 logits from randn)" in report.markdown(fp16)
    assert "Sizes (B x V, bf16 logits from randn)" in report.markdown(result(report, copy_gpu_us=None))


def test_the_command_line_runs_verbatim(report):
    """A report's command quotes what a shell would split."""
    assert report.command_line("bench.resources", ["--ops", "top_k", "--sizes", "256x32000"]) == (
        "python -m bench.resources --ops top_k --sizes 256x32000")
    assert report.command_line("bench.kernels", ["--out", "my table.md"]) == "python -m bench.kernels --out 'my table.md'"
