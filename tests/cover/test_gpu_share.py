"""How the gate's processes share one GPU (samplecheck.harness.mps): the suite's workers through
a private MPS server, whatever may fault on a context of its own, and a fault under MPS never a
verdict. The control daemon is a stand-in script here, so this runs without a GPU."""

import json
import os
import stat
from pathlib import Path

import pytest

from samplecheck.harness import memcheck, mps
from samplecheck.tools import gate, killtable, suite

pytestmark = pytest.mark.usefixtures("control_daemon")

SHARED = {"CUDA_MPS_PIPE_DIRECTORY": "/elsewhere/pipe", "CUDA_MPS_LOG_DIRECTORY": "/elsewhere/log"}


@pytest.fixture
def control_daemon(tmp_path, monkeypatch) -> Path:
    """A stand-in `nvidia-cuda-mps-control` first on PATH; it appends each call (its arguments,
    its standard input, its pipe folder) to the file it returns."""
    calls = tmp_path / "calls.txt"
    script = tmp_path / "bin" / mps.CONTROL
    script.parent.mkdir()
    script.write_text(f'#!/bin/sh\n[ "$1" = "-d" ] && input="" || input=$(cat)\n'
                      f'echo "$* | $input | $CUDA_MPS_PIPE_DIRECTORY" >> {calls}\n')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{script.parent}{os.pathsep}{os.environ['PATH']}")
    return calls


def test_the_server_is_private_and_stopped_after_the_block(control_daemon):
    assert mps.available()
    before = dict(os.environ)
    with mps.server() as environment:
        pipe = environment["CUDA_MPS_PIPE_DIRECTORY"]
        assert Path(pipe).is_dir() and Path(environment["CUDA_MPS_LOG_DIRECTORY"]).is_dir()
        assert dict(os.environ) == before, "this process and its other children keep their environment"
    started, stopped = control_daemon.read_text().splitlines()
    assert started == f"-d |  | {pipe}" and stopped == f" | quit | {pipe}"
    assert not Path(pipe).exists()


def test_a_server_that_does_not_start_is_an_os_error(tmp_path, monkeypatch):
    failing = tmp_path / "failing" / mps.CONTROL
    failing.parent.mkdir()
    failing.write_text("#!/bin/sh\necho 'no GPU' >&2\nexit 3\n")
    failing.chmod(failing.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{failing.parent}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(OSError, match="exited 3: no GPU"), mps.server():
        pass


def test_processes_that_may_fault_get_a_context_of_their_own(monkeypatch):
    for name, value in SHARED.items():
        monkeypatch.setenv(name, value)
    assert not set(SHARED) & set(memcheck.child_environment())
    assert mps.without({**SHARED, "KEEP": "1"}) == {"KEEP": "1"}
    seen = []

    def fake_run(command, **options):
        seen.append(options["env"])
        raise killtable.subprocess.TimeoutExpired(command, 0)

    def fake_run_until_done(command, env, timeout, done):
        seen.append(env)
        return "", "", None

    monkeypatch.setattr(killtable.subprocess, "run", fake_run)
    monkeypatch.setattr(killtable, "run_until_done", fake_run_until_done)
    killtable.hunt(next(iter(killtable.MUTANTS)), "cpu", "ci", timeout=1)
    killtable.hunt_shared([next(iter(killtable.MUTANTS))], "cpu", "ci", workers=1, timeout=1)
    assert len(seen) == 2 and not any(set(SHARED) & set(env) for env in seen)


def suite_runs(monkeypatch, outcomes: list[tuple[int, bool]]) -> list[dict | None]:
    """Make each suite run end as the next of `outcomes` (exit status, whether a client met a
    fatal GPU error); returns the environment of each run (None: this process's)."""
    environments = []

    def fake_run_pytest(command, log=None, env=None, processes=1):
        status, fatal = outcomes[len(environments)]
        environments.append(env)
        log.write_text(f"run {len(environments)}\n")
        if fatal:
            (Path(env["CUDA_MPS_LOG_DIRECTORY"]) / "server.log").write_text(f"client {mps.FATAL}.\n")
        return status

    monkeypatch.setattr(suite, "run_pytest", fake_run_pytest)
    return environments


def test_a_run_under_mps_is_the_verdict_when_no_kernel_faulted(monkeypatch, tmp_path):
    environments = suite_runs(monkeypatch, [(1, False)])
    assert gate.run_suite(["pytest"], tmp_path / "gate-suite.log", "mps") == 1
    (environment,) = environments
    assert "CUDA_MPS_PIPE_DIRECTORY" in environment


def test_a_fault_under_mps_runs_the_suite_again_time_sliced(monkeypatch, tmp_path):
    environments = suite_runs(monkeypatch, [(1, True), (0, False)])
    log = tmp_path / "gate-suite.log"
    assert gate.run_suite(["pytest"], log, "mps") == 0
    assert "CUDA_MPS_PIPE_DIRECTORY" in environments[0] and environments[1] is None
    assert log.read_text() == "run 2\n" and (tmp_path / "gate-suite-mps.log").read_text() == "run 1\n"


def test_time_slicing_starts_no_server(monkeypatch, tmp_path, control_daemon):
    environments = suite_runs(monkeypatch, [(0, False)])
    assert gate.run_suite(["pytest"], tmp_path / "gate-suite.log", "time-slice") == 0
    assert environments == [None] and not control_daemon.exists()


def test_a_suite_that_ran_no_test_fails_the_gate(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(gate, "run_suite", lambda command, log, share, processes: 0)
    assert gate.main(["--device=cpu", "--no-killtable", "--out", str(tmp_path)]) == 1
    assert "the suite ran no test" in capsys.readouterr().err
    (tmp_path / "gate-results.json").write_text(json.dumps({"tests": [{"nodeid": "t", "duration": 1.0}]}))
    assert len(gate.recorded_tests(tmp_path / "gate-results.json")) == 1
