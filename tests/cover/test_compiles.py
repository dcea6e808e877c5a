"""What Triton compiled for each test (samplecheck.harness.compiles): the results file records,
per test, the kernels its call made Triton compile and their seconds (cache hits left out), an
earlier compilation listener is still called, and the gate sums them up. Compiles are
simulated through Triton's own listener knob, so this runs without a GPU."""

import json
import subprocess
import sys
from types import SimpleNamespace

import pytest
import triton

from samplecheck.harness import compiles
from samplecheck.tools import gate, suite

# A compile of 1 s in Triton's CompileTimes shape (microseconds).
ONE_SECOND = SimpleNamespace(ir_initialization=250_000, lowering_stages=[("ttir", 250_000), ("cubin", 500_000)],
                             store_results=0)

FAKE_COMPILES = '''
from types import SimpleNamespace

import triton

TIMES = SimpleNamespace(ir_initialization=250_000, lowering_stages=[("ttir", 250_000), ("cubin", 500_000)],
                        store_results=0)


def test_two_compiles_and_a_cache_hit():
    for hit in (False, False, True):
        triton.knobs.compilation.listener(src=SimpleNamespace(name="_fake_kernel"), metadata={}, metadata_group={},
                                          times=TIMES, cache_hit=hit)


def test_no_compile():
    pass
'''


def compile_event(listener, name: str, cache_hit: bool = False) -> None:
    listener(src=SimpleNamespace(name=name), metadata={}, metadata_group={}, times=ONE_SECOND, cache_hit=cache_hit)


@pytest.mark.cpu_subject
def test_each_test_records_what_its_call_compiled(tmp_path):
    (tmp_path / "test_fake.py").write_text(FAKE_COMPILES)
    command = [sys.executable, "-m", "pytest", "test_fake.py", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
               "-p", "samplecheck.harness.plugin", "--sc-device=cpu", f"--sc-results={tmp_path / 'r.json'}"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    recorded = {t["property"]: t["compiles"] for t in json.loads((tmp_path / "r.json").read_text())["tests"]}
    assert recorded == {"test_two_compiles_and_a_cache_hit": {"_fake_kernel": [2, 2.0]}, "test_no_compile": {}}


def test_an_earlier_listener_still_hears_every_compile_and_comes_back(monkeypatch):
    heard = []
    monkeypatch.setattr(triton.knobs.compilation, "listener", lambda **event: heard.append(event["cache_hit"]))
    earlier = triton.knobs.compilation.listener
    recorder = compiles.CompileRecorder()
    recorder.install()
    assert triton.knobs.compilation.listener is recorder
    compile_event(triton.knobs.compilation.listener, "_a_kernel")
    compile_event(triton.knobs.compilation.listener, "_a_kernel", cache_hit=True)
    compile_event(triton.knobs.compilation.listener, "_b_kernel")
    assert heard == [False, True, False]
    assert recorder.take() == {"_a_kernel": [1, 1.0], "_b_kernel": [1, 1.0]}
    assert recorder.take() == {}, "counted again from zero"
    recorder.uninstall()
    assert triton.knobs.compilation.listener is earlier


def test_the_gate_sums_up_the_compiles_of_its_tests(monkeypatch, tmp_path, capsys):
    records = [{"nodeid": "a", "duration": 8.0, "compiles": {"_k": [3, 3.0], "_j": [1, 1.0]}},
               {"nodeid": "b", "duration": 2.0, "compiles": {"_k": [1, 2.0]}}, {"nodeid": "c", "duration": 0.1}]

    def suite_run(command, log=None, processes=1):
        (tmp_path / "gate-results.json").write_text(json.dumps({"tests": records}))
        return 0

    monkeypatch.setattr(suite, "run_pytest", suite_run)
    assert gate.main(["--device=cpu", "--no-killtable", "--out", str(tmp_path)]) == 0
    assert ("gate: Triton compiled 5 specializations in 6 s (59% of the tests' 10 s); most: _k 4 (5 s), _j 1 (1 s)"
            in capsys.readouterr().out.splitlines())
    assert compiles.summary([{"nodeid": "c", "duration": 0.1}]) is None, "a run that compiled nothing says nothing"
