"""A pin with a signature (samplecheck.harness.registry.Mark.witness) hides only its finding: in
its cell a failure that shows the signature is the expected failure, any other failure fails
the test, and a pass passes (the case did not reach the finding). A whole-cell strict pin, the
kind without a signature, reports any failure as expected."""

import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.interpreter

PINNED_TESTS = '''
import pytest

from samplecheck.harness.registry import Mark

SIGNED = Mark("xfail", "finding X", witness=lambda failure: "rows past 2**31 differ" in failure).as_pytest_marks()
WHOLE_CELL = Mark("xfail", "finding Y").as_pytest_marks()


@pytest.mark.parametrize("defect", [
    pytest.param("rows past 2**31 differ", marks=SIGNED, id="signed-the_finding"),
    pytest.param("row stride misread", marks=SIGNED, id="signed-another_defect"),
    pytest.param(None, marks=SIGNED, id="signed-not_reached"),
    pytest.param("row stride misread", marks=WHOLE_CELL, id="whole_cell-another_defect"),
])
def test_cell(defect):
    assert defect is None, defect
'''


def test_a_signed_pin_hides_its_finding_alone(tmp_path):
    (tmp_path / "test_pinned.py").write_text(PINNED_TESTS)
    result = subprocess.run([sys.executable, "-m", "pytest", "test_pinned.py", "-rA", "-p", "no:cacheprovider",
                             "-p", "no:xdist", "-p", "samplecheck.harness.plugin", "--sc-device=cpu"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    outcomes = {name: outcome for outcome, name in
                re.findall(r"^(PASSED|FAILED|XFAIL|XPASS) test_pinned.py::test_cell\[([\w-]+)\]", result.stdout, re.M)}
    assert outcomes == {"signed-the_finding": "XFAIL", "signed-another_defect": "FAILED",
                        "signed-not_reached": "PASSED", "whole_cell-another_defect": "XFAIL"}, result.stdout[-3000:]
    assert "this failure is not the pinned finding's signature: finding X" in result.stdout
