"""`samplecheck sweep`: the verification sweep of the backends. Its screen is one progress line
and then the report (pytest's own output goes to the log); the report has rows only for the
cells that ran, names in one line what cannot run on this device, explains `-` and `skip`
under the table, and keeps its lines short."""

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from _pytest.reports import TestReport

from samplecheck.harness import results
from samplecheck.harness.results import MEASURED
from samplecheck.registry.records import Backend
from samplecheck.tools.sweep_report import COLUMNS, HEADING, WIDTH, SweepReport, elsewhere, split_cell

ROOT = Path(__file__).resolve().parents[2]
COVER = "tests/cover"


def _report(test: str, cell: str, outcome: str, *, when: str = "call", gpu: bool = False, examples: int = 0,
            xfail: bool = False, measured: str | None = None) -> TestReport:
    nodeid = f"{COVER}/{test}.py::{test}[{cell}]"
    keywords = {test: 1, **({"gpu": 1} if gpu else {})}
    properties = [("examples", examples)] + ([(MEASURED, measured)] if measured else [])
    report = TestReport(nodeid, (f"{COVER}/{test}.py", 0, test), keywords, outcome, None, when, duration=0.5,
                        user_properties=properties)
    if xfail:
        report.wasxfail = "a declared finding"
    return report


def _fed(device: str, *reports) -> SweepReport:
    sweep = SweepReport(device)
    for report in reports:
        sweep.pytest_runtest_logreport(report)
    return sweep


def test_the_report_has_rows_for_the_cells_that_ran_and_names_the_rest():
    sweep = _fed(
        "cpu",
        _report("test_oracle_equivalence", "temperature-triton-fp32-contig", "passed", examples=6),
        _report("test_exact_distribution", "temperature-triton-fp32-contig", "skipped", when="setup"),
        _report("test_memory_bound", "temperature-triton-bf16-padded64", "skipped", when="setup", gpu=True),
        _report("test_strided_bitwise", "temperature-mutant-temperature_x-fp32-offset", "failed", examples=2),
        _report("test_oracle_equivalence", "top_k_top_p-triton-bf16-contig", "skipped", xfail=True),
        _report("test_error_inputs", "temperature-triton-1-D_logits", "passed"),
        _report("test_error_inputs", "temperature-triton-1-D_logits", "passed", when="teardown"),
    )
    backends = ", ".join(f"backend_{i} (devices=cuda)" for i in range(40))
    declared = ["samplecheck backends:", f"  top_k_top_p: {backends}"]
    text = sweep.text(["Sweep on cpu (profile ci): 6 tests in 1 s, pytest exit status 1", "pytest's output: /x.log"],
                      declared, ["top_k_top_p/backend_0 (runs on cuda)", "top_k_top_p/backend_1 (not declared: fp16)"])
    lines = text.splitlines()
    assert lines[0].startswith("Sweep on cpu (profile ci)") and lines[1] == "pytest's output: /x.log", lines[:2]
    failures = lines.index("Failures (each one's 'reproduce' section in the log reruns it):")
    prose = [line for line in lines[:failures] if not line.startswith("|")]  # the failures are node ids to copy
    assert all(len(line) <= WIDTH for line in prose), max(prose, key=len)
    assert any(line.startswith("  top_k_top_p: backend_0 (devices=cuda),") for line in lines)
    assert "\n      backend_" in text  # the declaration wrapped, its continuation indented
    header, _, *rows = [line for line in lines if line.startswith("|")]
    assert [cell.strip() for cell in header.strip("|").split("|")] == [
        "kernel", "backend", "dtype", "layout", "oracle", "strided", "law", "examples", "time"]  # no memory column
    assert [[cell.strip() for cell in row.strip("|").split("|")][:7] for row in rows] == [
        ["temperature", "mutant-temperature_x", "fp32", "offset", "-", "FAIL", "-"],
        ["temperature", "triton", "fp32", "contig", "pass", "-", "skip"],
        ["top_k_top_p", "triton", "bf16", "contig", "xfail", "-", "-"]]
    assert "temperature-triton-bf16-padded64" not in text  # a GPU-only property's cell: no row
    assert any(line.startswith("  -      the property does not apply") for line in lines)
    assert any(line.startswith("  skip   the property applies to this cell and was skipped") for line in lines)
    joined = " ".join(line.strip() for line in lines)
    assert ("Not run on cpu, so no rows (the backend runs elsewhere, or does not declare those cells): "
            "top_k_top_p/backend_0 (runs on cuda); top_k_top_p/backend_1 (not declared: fp16).") in joined
    assert "Not run on cpu (GPU-only properties, marker gpu): memory_bound." in lines
    assert "Other properties judging these backends (error inputs, " in joined and "kernel-specific): 1 pass." in joined
    assert lines[failures + 1:] == [
        f"  {COVER}/test_strided_bitwise.py::test_strided_bitwise[temperature-mutant-temperature_x-fp32-offset]"]


def test_a_measured_variance_shows_in_its_cell_and_in_the_results_record():
    variant = _report("test_batch_invariance", "softmax-torch-fp32-contig", "passed",
                      measured="not declared batch invariant, and it is not: ...")
    invariant = _report("test_batch_invariance", "softmax-triton-fp32-contig", "passed")
    sweep = _fed("cuda", variant, invariant)
    rows = {line.split("|")[2].strip(): line.split("|")[5].strip() for line in sweep.table()[2:]}
    assert rows == {"torch": "pass*", "triton": "pass"}
    assert results.test_record(variant)[MEASURED].startswith("not declared batch invariant")
    assert MEASURED not in results.test_record(invariant)


def test_what_cannot_run_here_is_named_per_backend():
    record = SimpleNamespace(name="temperature", dtypes=(torch.float32, torch.bfloat16, torch.float16),
                             layouts=("contig", "padded64", "offset"), backends=(
                                 Backend("triton", "m:f"), Backend("gpu_only", "m:g", devices=("cuda",)),
                                 Backend("narrow", "m:h", dtypes=(torch.float32,), layouts=("contig", "padded64"))))
    assert elsewhere([record], "cpu") == ["temperature/gpu_only (runs on cuda)",
                                         "temperature/narrow (not declared: bf16, fp16, offset)"]
    assert elsewhere([record], "cuda") == ["temperature/narrow (not declared: bf16, fp16, offset)"]


def test_every_column_has_a_short_heading_and_cells_split_at_their_last_dashes():
    assert set(HEADING) == set(COLUMNS) and max(len(h) for h in HEADING.values()) <= 8
    assert split_cell("sampling_params-mutant-gumbel_x-bf16-stride+37") == (
        "sampling_params", "mutant-gumbel_x", "bf16", "stride+37")


CUDA_ONLY = '''
def temperature(logits, temperature=None):
    return logits


temperature.samplecheck = {"devices": ("cuda",)}
'''


@pytest.mark.cpu_subject
def test_the_screen_shows_progress_then_the_report_and_the_log_holds_pytests_output(tmp_path):
    """The screen and the report of a sweep on the CPU; the torch backend alone of our kernels,
    so that the test also holds on a GPU host whose Triton cannot interpret our kernels (the
    H200 image's triton 3.6 with numpy 2.5)."""
    (tmp_path / "cuda_only.py").write_text(CUDA_ONLY)
    log, markdown = tmp_path / "sweep.log", tmp_path / "sweep.md"
    command = [sys.executable, "-m", "samplecheck.tools.cli", "sweep", "--device=cpu", "--workers=0", "--packs=none",
               "--backend", "temperature=cuda_only:temperature", f"--log={log}", f"--report={markdown}",
               "-k", "test_oracle_equivalence and temperature and fp32 and contig and not triton"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(tmp_path), str(ROOT)))}
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, (result.stdout[-3000:] + result.stderr[-2000:]
                                    + (log.read_text()[-6000:] if log.is_file() else "no log"))
    screen = result.stdout.splitlines()
    assert screen[0] == f"sweep on cpu, profile ci: pytest's output goes to {log}", screen
    blank = screen.index("")
    assert blank > 1 and all(line.startswith("sweep: ") and " tests, 0 failed, " in line for line in screen[1:blank])
    assert "\n".join(screen[blank + 1:]) + "\n" == markdown.read_text()  # the report, and nothing else
    assert screen[blank + 1].startswith("Sweep on cpu (profile ci): 1 test in "), screen
    rows = [line for line in screen if line.startswith("| temperature ")]
    assert [row.split("|")[2].strip() for row in rows] == ["torch"], screen  # the CUDA-only one: no row
    assert all(row.split("|")[5].strip() == "pass" for row in rows), rows
    assert ("Not run on cpu, so no rows (the backend runs elsewhere, or does not declare those cells): "
            "temperature/temperature (runs on cuda).") in " ".join(line.strip() for line in screen)
    assert "1 passed" in log.read_text() and "1 passed" not in result.stdout
