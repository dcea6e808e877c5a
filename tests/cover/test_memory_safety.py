"""Every access of our kernels stays inside their tensors. A load whose mask was dropped, or
an offset one past a row's or a list's end, changes no result when the lanes it reads are
never used: only a memory checker sees it, and on another allocation layout it faults. Each
combo's calls run in a child pytest under compute-sanitizer memcheck (with PyTorch's caching
allocator off: every tensor its own allocation), on interpreter-sized cases (the sanitizer
runs kernels far slower) whose batch and vocabulary are odd, so that every power-of-two tiling
of rows or columns ends in a partial tile (where a lost mask reads past the tensor), in the
padded layout (every row ends in a gap inside the buffer) and the contiguous one (the last
row ends the buffer, so a read one past a row's end is past the tensor there), each call once
through every code path its backend declares (`Backend.paths`: a path the small cases never
pick, such as one for long lists, is checked too); any invalid access fails the combo with
the sanitizer's reports and the command that reruns it. Our kernels and their mutants
(backends with `guard_flag`); scripts/sanitize.sh runs memcheck, racecheck and initcheck over
the benchmark's calls. GPU only; skipped where compute-sanitizer is not installed."""

import os
import re
import shlex
import subprocess

import pytest
import torch
from hypothesis import given, settings, strategies as st

from samplecheck.harness.memcheck import (CHILD_ENV, child_environment, find_sanitizer, memcheck_command,
                                          reported_errors)
from samplecheck.harness.reproduce import reproduce_command
from samplecheck.harness.runner import prepare, run
from samplecheck.inputs.drawing import draw_case
from samplecheck.inputs.strategies import BUDGETS

pytestmark = [pytest.mark.gpu,
              pytest.mark.matrix(dtypes=(torch.bfloat16,), layouts=("padded64", "contig"), guard_flag=True)]

CHILD_TIMEOUT = 300  # seconds for one combo's child under the sanitizer


def test_memory_safety(combo, request):
    if os.environ.get(CHILD_ENV):
        pytest.skip("the sanitizer's child runs test_calls_under_memcheck alone")
    sanitizer = find_sanitizer()
    if sanitizer is None:
        pytest.skip("compute-sanitizer not found (set COMPUTE_SANITIZER, put it on PATH, or install a CUDA toolkit)")
    child = reproduce_command(request.node, test=f"{request.path}::test_calls_under_memcheck[{combo.id}]")
    command = memcheck_command(sanitizer, child + ["-q", "-p", "no:cacheprovider"])
    result = subprocess.run(command, env=child_environment(), capture_output=True, text=True, timeout=CHILD_TIMEOUT)
    output = result.stdout + result.stderr
    assert result.returncode == 0 and re.search(r"^1 passed", output, re.M), (
        f"{combo.id}: memcheck exit {result.returncode}\n{reported_errors(output)}\n"
        f"Rerun with: env {CHILD_ENV}=1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 {shlex.join(command)}")


def ragged(case) -> bool:
    """Odd batch and vocabulary: a partial last tile in every power-of-two tiling."""
    return case.logits.batch % 2 == 1 and case.logits.vocab % 2 == 1


@settings(max_examples=6)
@given(data=st.data())
def test_calls_under_memcheck(combo, device, data):
    if not os.environ.get(CHILD_ENV):
        pytest.skip("test_memory_safety runs this under compute-sanitizer")
    case = draw_case(data, combo, combo.info.cases(BUDGETS["cpu"]).filter(ragged))
    for knobs in combo.backend.paths.values() or [{}]:
        placed, args = prepare(combo, case, device)  # in the combo's layout, afresh for each path
        run(combo, placed.view, {**args, **knobs})
    torch.cuda.synchronize()
