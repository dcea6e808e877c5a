"""The benchmark's graph capture across sizes (bench/kernels.py `measure`), with a stand-in
capture: a call whose capture raised is not captured again at a later size (torch keeps a failed
capture's memory pool, so retrying leaked more at each size), and its later cells say so; a call
that captures is captured at every size. Pure Python, no kernel."""

from types import SimpleNamespace

import pytest

from samplecheck.tests.cover.bench_modules import BENCH, in_checkout, load

pytestmark = [pytest.mark.interpreter, in_checkout("kernels")]


@pytest.fixture
def kernels(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH.parent))  # its own imports: bench.report, bench.timing
    module = load("kernels")
    tries = []

    def capture(fn):
        tries.append(fn)
        return ("yes", "graph") if fn is captures else ("no: AcceleratorError", None)

    monkeypatch.setattr(module.timing, "capture", capture)
    monkeypatch.setattr(module.timing, "replay_median_us", lambda graph: 7.0)
    return module, tries


def captures():
    """A call that captures."""


def syncs():
    """A call whose capture raises."""


def test_a_failed_capture_is_not_tried_again_at_a_later_size(kernels):
    module, tries = kernels
    refused = {}
    good, bad = SimpleNamespace(name="good", fn=captures), SimpleNamespace(name="bad", fn=syncs)
    cells = [module.measure(call, 1.0, lambda fn: 10.0, 2.0, refused, size)
             for size in ("1x64", "64x64") for call in (good, bad)]
    assert tries == [captures, syncs, captures]
    assert [cell["graph"] for cell in cells] == [
        "yes", "no: AcceleratorError", "yes", "no: AcceleratorError (at 1x64; not tried again)"]
    assert [cell["gpu_us"] for cell in cells] == [5.0, None, 5.0, None]
    assert [cell["us"] for cell in cells] == [9.0] * 4


def test_without_a_gpu_nothing_is_captured(kernels):
    module, tries = kernels
    cell = module.measure(SimpleNamespace(name="good", fn=captures), 1.0, lambda fn: 10.0, None, {}, "1x64")
    assert tries == [] and cell["graph"] is None and cell["us"] == 9.0
