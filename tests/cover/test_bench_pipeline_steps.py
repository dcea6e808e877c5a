"""The pipeline's steps timed apart (bench/pipeline_steps.py) as a smoke test under the
interpreter: every step of apply_sampling_params, in its order, a row each, then their sum and
the whole call."""

import pytest

from samplecheck.tests.cover.bench_modules import in_checkout, loaded_on_cpu

pytestmark = [pytest.mark.interpreter, in_checkout("pipeline_steps")]

STEPS = ["clone (raw logprobs)", "logit_bias", "penalties", "temperature", "min_p", "top-k/top-p", "Gumbel sample",
         "logprobs (raw)", "sum of the steps", "whole pipeline"]


@pytest.fixture(scope="module")
def pipeline_steps(device):
    yield from loaded_on_cpu("pipeline_steps", device, "a smoke test of the interpreter's path; on a GPU, run the tool")


def test_a_row_per_step_in_order(pipeline_steps, capsys):
    pipeline_steps.main(["--device", "cpu", "--sizes", "2x600"])
    out = capsys.readouterr().out
    rows = [line.split(" | ")[0][2:] for line in out.splitlines()
            if line.startswith("| ") and not line.startswith("| step")]
    assert rows == STEPS, out
    assert "2 x 600 (interpreter wall time" in out
