"""Every backend keeps exactly the oracle's set (bitwise), in every dtype and layout; our Triton
kernels also on the CPU with fp32 `/` and exp as a GPU computes them (samplecheck.harness.gpu_math:
the interpreter's own are exact or nearly, a GPU's are not)."""

import pytest
import torch
from hypothesis import given, strategies as st, target

from samplecheck.harness.gpu_math import gpu_fp32_math
from samplecheck.inputs.drawing import draw_case, with_regression_examples
from samplecheck.harness.runner import prepare, reference, run

pytestmark = pytest.mark.interpreter


@with_regression_examples
@given(data=st.data())
def test_oracle_equivalence(combo, device, budget, data):
    check_oracle_equivalence(combo, device, budget, data)


@pytest.mark.cpu_subject
@pytest.mark.matrix(backends=("triton", "mutant-*"), dtypes=(torch.float32,), layouts=("contig",))
@with_regression_examples
@given(data=st.data())
def test_oracle_equivalence_under_gpu_math(combo, device, budget, data):
    with gpu_fp32_math():
        check_oracle_equivalence(combo, device, budget, data)


def check_oracle_equivalence(combo, device, budget, data):
    case = draw_case(data, combo, combo.info.cases(budget))
    placed, args = prepare(combo, case, device)
    original = placed.view.clone()
    expected = reference(combo, original, args)
    if combo.info.targets is not None:
        for label, value in combo.info.targets(original, expected).items():
            target(value, label=label)
    output = run(combo, placed.view, args)
    combo.info.check(original, output, expected, combo.id)
