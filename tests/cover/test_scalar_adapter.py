"""An API that takes one scalar per call and returns a new tensor plugs in through an adapter
(examples/scalar_adapter, docs/backends.md "APIs that take one value per call"): the adapter
passes samplecheck's temperature properties as the only backend."""

import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "scalar_adapter"
# A handful of the properties that judge backends: exact values in every dtype and layout (row
# maxima at the row ends too), rows independent, the "off" temperatures, and the exception type
# of every bad input (beside an empty vocabulary too). `-k` selects by substring: each name
# selects the properties whose names begin with it.
PROPERTIES = ("test_oracle_equivalence", "test_strided_bitwise", "test_strided_bitwise_maxima_at_row_ends",
              "test_row_isolation", "test_deterministic", "test_off_encodings", "test_error_inputs",
              "test_error_inputs_beside_an_empty_vocabulary")


@pytest.mark.skipif(not EXAMPLE.is_dir(), reason="needs examples/scalar_adapter of a samplecheck checkout")
def test_scalar_adapter_passes_the_temperature_properties(device, tmp_path):
    junit = tmp_path / "junit.xml"
    command = [sys.executable, "-m", "samplecheck.tools.cli", "test", f"--device={device.type}", "--profile=ci",
               "--workers=0", "--backend-only", "--packs=none", "--backend", "temperature=scalar_adapter:temperature",
               "-q", f"--junitxml={junit}", "-k", " or ".join(PROPERTIES)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(EXAMPLE), str(ROOT)))}
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    cases = list(ElementTree.parse(junit).getroot().iter("testcase"))
    ran = {case.get("name").split("[")[0] for case in cases if case.find("skipped") is None}
    assert ran == set(PROPERTIES), ran
    # The adapter alone (backend "temperature" of kernel temperature: the callable's name).
    assert all("[temperature-temperature-" in case.get("name") for case in cases), [c.get("name") for c in cases]
