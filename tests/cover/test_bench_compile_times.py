"""The compile-time tool (bench/compile_times.py) compiles a selection kernel for sm_90 on this
machine, with Triton's compiler and not its interpreter, under a register cap (`--maxnreg`), and
reports it: a row with the seconds, the IR's op count and the cubin's registers, within the cap;
and the penalties' in-kernel paths (the row sort: a sort, a scan and a gather in registers,
which the interpreter runs whatever the GPU's compiler accepts; the pair kernel). So a kernel edit that does not compile
for the GPU fails here, on a CPU."""

import os
import subprocess
import sys

import pytest

from samplecheck.tests.cover.bench_modules import BENCH, in_checkout

pytestmark = [pytest.mark.interpreter, in_checkout("compile_times")]


def compiled_rows(device, variant: str, *flags: str) -> tuple[str, list[list[str]]]:
    """The tool's stdout and its rows of `variant` (bf16), compiled for sm_90."""
    if device.type != "cpu":
        pytest.skip("the suite's CPU run checks the tool; on a GPU, run it itself")
    env = {name: value for name, value in os.environ.items() if name != "TRITON_INTERPRET"}
    done = subprocess.run([sys.executable, "-m", "bench.compile_times", "--variants", variant, "--dtypes", "bf16",
                           *flags], cwd=BENCH.parent, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, [line.split(" | ") for line in done.stdout.splitlines() if line.startswith(f"| {variant} ")]


def test_a_variant_compiles_for_sm_90(device):
    stdout, rows = compiled_rows(device, "one-k", "--maxnreg", "96")
    assert "maxnreg 96" in stdout.splitlines()[0], stdout
    assert len(rows) == 1, stdout
    _, dtype, seconds, ops, registers, stack = rows[0]
    assert dtype == "bf16" and float(seconds) > 0 and int(ops) > 0 and 0 < int(registers) <= 96, rows[0]


@pytest.mark.parametrize("variant", ["penalties-row-sort", "penalties-pairs"])
def test_penalties_kernels_compile_for_sm_90(device, variant):
    stdout, rows = compiled_rows(device, variant)
    assert len(rows) == 1, stdout
    _, dtype, seconds, ops, registers, stack = rows[0]
    assert dtype == "bf16" and int(ops) > 0 and int(registers) > 0 and stack.strip(" |") == "0", rows[0]
