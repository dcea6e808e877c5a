"""What the pytest processes samplecheck starts at once share (samplecheck.tools.suite.
suite_environment): one compile per Triton specialization (samplecheck.harness.compile_once: a
process missing a cache entry locks it while it compiles, the others wait and load what it
stored), and CPU thread pools sized to their share of the cores; and a logged run's lines reach
its log as they are printed. Triton's own cache calls are driven directly here (two managers of
one entry, on threads), so this runs without a GPU."""

import os
import subprocess
import sys
import threading
import time

import pytest

from samplecheck.harness import compile_once, plugin
from samplecheck.harness.compile_once import CompileOnce
from samplecheck.tools import killtable, suite

ENTRY = "0123456789abcdef"
GROUP_FILE = "kernel.json"


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    return tmp_path / "triton"


def compile_into(manager: CompileOnce) -> dict:
    """What Triton's compile stores after a miss: the compiled file, then the group."""
    path = manager.put("compiled", GROUP_FILE, binary=False)
    manager.put_group(GROUP_FILE, {GROUP_FILE: path})
    return {GROUP_FILE: path}


def test_a_second_process_waits_for_the_first_compile_and_loads_it():
    first, second = CompileOnce(ENTRY), CompileOnce(ENTRY)
    assert first.get_group(GROUP_FILE) is None, "a miss: the first compiles, holding the entry"
    seen = {}
    waiter = threading.Thread(target=lambda: seen.update(group=second.get_group(GROUP_FILE)))
    waiter.start()
    time.sleep(0.3)
    assert waiter.is_alive(), "the second waits while the first compiles"
    stored = compile_into(first)
    waiter.join(timeout=10)
    assert seen["group"] == stored, "the second loads the first's compile instead of compiling"
    assert CompileOnce(ENTRY).get_group(GROUP_FILE) == stored


def test_a_failed_compile_frees_the_entry_when_dropped():
    first = CompileOnce(ENTRY)
    assert first.get_group(GROUP_FILE) is None
    del first  # a compile that raised never stores its group
    second = CompileOnce(ENTRY)
    assert second.get_group(GROUP_FILE) is None, "the next process compiles"
    compile_into(second)


def test_a_failed_compile_kept_alive_by_its_traceback_is_freed_when_its_test_call_ends(monkeypatch):
    failed = CompileOnce(ENTRY)
    assert failed.get_group(GROUP_FILE) is None  # then the compile raised; its traceback keeps `failed`
    plugin.release_compile_locks()
    monkeypatch.setattr(compile_once, "WAIT_LIMIT", 30)
    start = time.monotonic()
    assert CompileOnce(ENTRY).get_group(GROUP_FILE) is None
    assert time.monotonic() - start < 5, "the next process compiles at once"


def test_a_wait_past_the_limit_compiles_itself(monkeypatch):
    monkeypatch.setattr(compile_once, "WAIT_LIMIT", 0.2)
    holder = CompileOnce(ENTRY)
    assert holder.get_group(GROUP_FILE) is None
    start = time.monotonic()
    assert CompileOnce(ENTRY).get_group(GROUP_FILE) is None, "gives up waiting, and compiles"
    assert 0.2 <= time.monotonic() - start < 5
    compile_into(holder)


def test_other_entries_and_triton_s_override_and_dump_managers_never_wait(cache_dir, monkeypatch):
    monkeypatch.setenv("TRITON_OVERRIDE_DIR", str(cache_dir / "override"))
    holder = CompileOnce(ENTRY)
    assert holder.get_group(GROUP_FILE) is None
    monkeypatch.setattr(compile_once, "WAIT_LIMIT", 30)
    start = time.monotonic()
    assert CompileOnce("fedcba9876543210").get_group(GROUP_FILE) is None
    assert CompileOnce(ENTRY, override=True).get_group(GROUP_FILE) is None
    assert time.monotonic() - start < 5
    compile_into(holder)


def test_triton_resolves_the_manager_samplecheck_names():
    variable, manager = suite.COMPILE_ONCE
    command = [sys.executable, "-c", "import triton; print(triton.knobs.cache.manager_class.__module__, "
               "triton.knobs.cache.manager_class.__name__)"]
    out = subprocess.run(command, env={**os.environ, variable: manager}, capture_output=True, text=True, check=True)
    assert out.stdout.split() == manager.split(":")


def test_samplecheck_s_processes_get_it_and_a_caller_s_own_manager_stays(monkeypatch):
    variable, manager = suite.COMPILE_ONCE
    monkeypatch.delenv(variable, raising=False)
    assert suite.suite_environment({"PATH": "/bin"}) == {"PATH": "/bin", variable: manager}
    own = {variable: "mine:Manager"}
    assert suite.suite_environment(own) == own
    probe = [sys.executable, "-c", f"import os, sys; sys.exit(os.environ.get({variable!r}) != {manager!r})"]
    assert suite.run_pytest(probe) == 0, "the suite's pytest run"
    hunts = []

    def fake_run(command, **options):
        hunts.append(options["env"].get(variable))
        raise killtable.subprocess.TimeoutExpired(command, 0)

    def fake_run_until_done(command, env, timeout, done):
        hunts.append(env.get(variable))
        return "", "", None

    monkeypatch.setattr(killtable.subprocess, "run", fake_run)
    monkeypatch.setattr(killtable, "run_until_done", fake_run_until_done)
    mutant = next(iter(killtable.MUTANTS))
    killtable.hunt(mutant, "cpu", "ci", timeout=1)
    killtable.hunt_shared([mutant], "cpu", "ci", workers=1, timeout=1)
    assert hunts == [manager, manager], "the kill table's (and samplecheck mutate's) hunts"


@pytest.mark.parametrize("cores, processes, threads", [(16, 16, "1"), (16, 8, "2"), (16, 3, "5"), (2, 4, "1")])
def test_processes_sharing_the_cores_share_them_out(monkeypatch, cores, processes, threads):
    monkeypatch.setattr(suite.os, "cpu_count", lambda: cores)
    environment = suite.suite_environment({}, processes)
    assert [environment[name] for name in suite.THREAD_VARIABLES] == [threads, threads]
    assert suite.suite_environment({"OMP_NUM_THREADS": "7"}, processes)["OMP_NUM_THREADS"] == "7", "the caller's"
    assert not set(suite.THREAD_VARIABLES) & set(suite.suite_environment({}, 1)), "one process alone: the default"


def test_processes_know_how_many_share_the_gpus():
    """Each process's share of a GPU's memory (samplecheck.harness.big_buffers) counts them all."""
    from samplecheck.harness.mps import SHARING_PROCESSES

    assert suite.suite_environment({}, 16)[SHARING_PROCESSES] == "16"
    assert suite.suite_environment({SHARING_PROCESSES: "24"}, 8)[SHARING_PROCESSES] == "24", "the gate's count"
    assert SHARING_PROCESSES not in suite.suite_environment({}, 1)


def test_each_command_counts_the_processes_it_runs(monkeypatch):
    monkeypatch.setattr(suite.os, "cpu_count", lambda: 16)
    assert [suite.processes_of(w) for w in ("auto", "0", "1", "8")] == [16, 1, 1, 8]
    threads = []

    def fake_run(command, **options):
        threads.append(options["env"].get("OMP_NUM_THREADS"))
        raise killtable.subprocess.TimeoutExpired(command, 0)

    def fake_run_until_done(command, env, timeout, done):
        threads.append(env.get("OMP_NUM_THREADS"))
        return "", "", None

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(killtable.subprocess, "run", fake_run)
    monkeypatch.setattr(killtable, "run_until_done", fake_run_until_done)
    mutant = next(iter(killtable.MUTANTS))
    killtable.hunt(mutant, "cpu", "ci", timeout=1, processes=4)
    killtable.hunt_shared([mutant], "cpu", "ci", workers=8, timeout=1)
    assert threads == ["4", "2"]


def test_a_logged_run_shows_each_line_as_it_is_printed(tmp_path, capfd):
    """`run_pytest` with a log: a line the command prints reaches the log and the output while
    the command still runs (a CI log, or a run cut short by a time limit, shows how far it got)."""
    go_on, log = tmp_path / "go-on", tmp_path / "suite.log"
    child = ("import pathlib, sys, time\nprint('first line')\ndeadline = time.monotonic() + 30\n"
             f"while not pathlib.Path({str(go_on)!r}).exists() and time.monotonic() < deadline:\n"
             "    time.sleep(0.05)\nprint('last line')")
    done = []
    runner = threading.Thread(target=lambda: done.append(suite.run_pytest([sys.executable, "-c", child], log=log)))
    runner.start()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and "first line" not in (log.read_text() if log.exists() else ""):
        time.sleep(0.05)
    seen_running = "first line" in (log.read_text() if log.exists() else "")
    go_on.touch()
    runner.join(40)
    assert seen_running, "the log held the command's first line back while it ran"
    assert done == [0] and log.read_text() == "first line\nlast line\n"
    assert "first line\nlast line\n" in capfd.readouterr().out
