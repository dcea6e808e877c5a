"""Every launch a backend's Triton kernels make on drawn cases under the interpreter lowers to
Triton IR for a GPU (samplecheck.harness.lowering: Triton's front end for sm_90, in a child
process without the interpreter). The interpreter never types a kernel, so a kernel that no
GPU compiles (a loop-carried variable whose dtype changes in the loop, a constexpr used as a
runtime value) passes every other property on the CPU; this one fails it without a GPU. On a
GPU the kernels compile for real in every other test: there it is skipped."""

import pytest
import torch
from hypothesis import given, strategies as st

from samplecheck.harness.lowering import LaunchLog, lower
from samplecheck.harness.runner import prepare, run
from samplecheck.inputs.drawing import draw_case

pytestmark = pytest.mark.interpreter


@pytest.mark.matrix(layouts=("padded64",))
def test_launches_lower_for_a_gpu(combo, device, budget):
    if torch.device(device).type != "cpu":
        pytest.skip("on a GPU every launch compiles in the other tests")
    log = LaunchLog()

    @given(data=st.data())
    def launch_drawn_cases(data):
        case = draw_case(data, combo, combo.info.cases(budget))
        placed, args = prepare(combo, case, device)
        with log:
            run(combo, placed.view, args)

    launch_drawn_cases()
    if not log.launches:
        pytest.skip(f"{combo.id}: no Triton launch")
    failures = lower(log.launches)
    assert not failures, f"{combo.id}: {len(failures)} of {len(log.launches)} launches do not lower for a GPU:\n" + (
        "\n".join(f"{launch}\n  {error[:2000]}" for launch, error in failures))
