"""A kernel that faults fails its own test, and the rest of the run goes on as before.

A sticky CUDA error (illegal memory access, device-side assert, launch failure) poisons the
process's CUDA context: every later CUDA call in it fails the same way, so in one pytest
process (or one xdist worker) the tests that follow a faulting kernel would fail too, with
the fault's message. This plugin (registered by samplecheck.harness.plugin as
`samplecheck-isolation`) contains it, for samplecheck's own tests:

- After each test's call on a CUDA run, a `torch.cuda.synchronize()` probe tells a poisoned
  context (the probe raises) from an ordinary failure (it does not: OOM, a wrong value).
- Poisoned, under pytest-xdist: the worker records the fault (test id, the probe's error and
  the test's own) and exits before reporting. xdist reports the test it was running as
  crashed, starts a fresh worker and reschedules the tests the dead one had left; the
  controller's `pytest_handlecrashitem` puts the recorded fault in that test's report. The
  other tests run on a clean context. (xdist restarts at most `--max-worker-restart`
  workers, by default 4 per worker.)
- A fault in a test marked xfail (a pinned finding that faults, e.g. a plugged kernel's int32
  row offsets) is that expected failure: the controller reports the crashed test as xfailed
  with the mark's reason (strict or not, since it did fail), and the run goes on as above.
- Poisoned, without xdist: the test fails with the fault and the session stops, since no
  later test could run in this process: rerun under xdist (`-n`) to isolate it.
- A hang: with `--sc-test-timeout=S` (default 1800 s; 0 turns it off) a test still running
  after S seconds is recorded as a timeout and its process exits (a hung kernel never
  returns to Python, so no exception could stop it), the worker restarting as above.
"""

import faulthandler
import hashlib
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from samplecheck.harness.findings import is_the_finding
from samplecheck.harness.options import owns

FAULT_DIR = "samplecheck_fault_dir"
EXIT_STATUS = 70
# The controller's record directory (xdist workers get it through their workerinput).
_CONTROLLER: dict[str, str] = {}


def cuda_probe(config):
    """The probe of this run's device: a callable that raises when the context is poisoned,
    or None when there is nothing to probe (CPU runs)."""
    if config.samplecheck_device.type != "cuda":
        return None
    import torch

    return torch.cuda.synchronize


def poisoned(probe) -> str | None:
    """The probe's error, or None when it passes. Only a sticky fault makes a synchronize
    raise after the test has returned (an ordinary error, an OOM included, raised in the
    test and left the context usable)."""
    try:
        probe()
    except Exception as err:  # noqa: BLE001 (torch raises RuntimeError or AcceleratorError by version)
        return f"{type(err).__name__}: {err}".splitlines()[0]
    return None


def _record_path(directory: str, nodeid: str) -> Path:
    return Path(directory) / (hashlib.sha1(nodeid.encode()).hexdigest() + ".txt")


def _fault_dir(config) -> str | None:
    workerinput = getattr(config, "workerinput", None)
    return workerinput.get(FAULT_DIR) if workerinput is not None else _CONTROLLER.get(FAULT_DIR)


XFAIL_PREFIX = "xfail: "


def _exit_worker(item, message: str, xfail: str | None = None) -> None:
    """Record `message` for `item` (first line `xfail: <reason>` when the test was expected to
    fail) and end this process before it reports the test."""
    directory = _fault_dir(item.config)
    if directory is not None:
        record = (f"{XFAIL_PREFIX}{xfail}\n" if xfail is not None else "") + message
        _record_path(directory, item.nodeid).write_text(record)
    sys.stderr.write(f"\nsamplecheck: {item.nodeid}: {message}\n")
    sys.stderr.flush()
    os._exit(EXIT_STATUS)


def pytest_configure(config):
    if getattr(config, "workerinput", None) is None:
        _CONTROLLER[FAULT_DIR] = tempfile.mkdtemp(prefix="samplecheck-faults-")


def pytest_unconfigure(config):
    if getattr(config, "workerinput", None) is None and FAULT_DIR in _CONTROLLER:
        shutil.rmtree(_CONTROLLER.pop(FAULT_DIR), ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist controller: tell each worker where to record its fault."""
    node.workerinput[FAULT_DIR] = _CONTROLLER[FAULT_DIR]


@pytest.hookimpl(optionalhook=True)
def pytest_handlecrashitem(crashitem, report, sched):
    """xdist controller: a worker died running `crashitem`; say why, when it recorded it."""
    path = _record_path(_CONTROLLER[FAULT_DIR], crashitem)
    if not path.exists():
        return
    record = path.read_text()
    first, _, rest = record.partition("\n")
    if first.startswith(XFAIL_PREFIX):
        report.outcome = "skipped"
        report.wasxfail = f"{first[len(XFAIL_PREFIX):]} ({rest.splitlines()[0]})"
        report.longrepr = None
    else:
        report.longrepr = f"{report.longrepr}\n{record}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    limit = item.config.getoption("--sc-test-timeout")
    if not limit or not owns(item.path):
        return (yield)
    message = (f"timed out: still running after {limit:g} s (--sc-test-timeout), a hang; the process was ended "
               "and, under xdist, replaced by a fresh worker that ran the remaining tests")

    def expire():
        faulthandler.dump_traceback(file=sys.stderr)
        _exit_worker(item, message)

    watchdog = threading.Timer(limit, expire)
    watchdog.daemon = True
    watchdog.start()
    try:
        return (yield)
    finally:
        watchdog.cancel()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    probe = cuda_probe(item.config) if call.when == "call" and owns(item.path) else None
    fault = poisoned(probe) if probe is not None else None
    if fault is None:
        return report
    own = call.excinfo.exconly().splitlines()[0] if call.excinfo is not None else "none (the test passed)"
    message = (f"kernel fault: this test left the CUDA context poisoned ({fault}); its own error: {own}. "
               "Every later CUDA call in this process would fail the same way")
    if getattr(item.config, "workerinput", None) is not None:
        expected = getattr(report, "wasxfail", None) if is_the_finding(item, fault) else None
        _exit_worker(item, message + "; the worker was replaced and its remaining tests ran on a fresh one",
                     xfail=expected)
    report.outcome = "failed"
    report.longrepr = report.longrepr or message
    report.sections.append(("kernel fault", message))
    item.session.shouldstop = (f"{item.nodeid}: {message}; the session stops here (run under xdist, -n, "
                               "so a fresh worker takes over the remaining tests)")
    return report
