"""The compile-time tool (bench/compile_times.py) compiles a selection kernel for sm_90 on this
machine, with Triton's compiler and not its interpreter, under a register cap (`--maxnreg`), and
reports it: a row with the seconds, the IR's op count and the cubin's registers, within the cap.
So a kernel edit that does not compile for the GPU fails here, on a CPU."""

import os
import subprocess
import sys

import pytest

from samplecheck.tests.cover.bench_modules import BENCH, in_checkout

pytestmark = [pytest.mark.interpreter, in_checkout("compile_times")]


def test_a_variant_compiles_for_sm_90(device):
    if device.type != "cpu":
        pytest.skip("the suite's CPU run checks the tool; on a GPU, run it itself")
    env = {name: value for name, value in os.environ.items() if name != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-m", "bench.compile_times", "--variants", "one-k", "--dtypes", "bf16",
                           "--maxnreg", "96"], cwd=BENCH.parent, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "maxnreg 96" in done.stdout.splitlines()[0], done.stdout
    rows = [line.split(" | ") for line in done.stdout.splitlines() if line.startswith("| one-k ")]
    assert len(rows) == 1, done.stdout
    _, dtype, seconds, ops, registers, stack = rows[0]
    assert dtype == "bf16" and float(seconds) > 0 and int(ops) > 0 and 0 < int(registers) <= 96, rows[0]
