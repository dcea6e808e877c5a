"""Packs plug in by entry point (samplecheck.harness.packs, docs/packs.md): a pack's pairs are
plugged, an absent engine is reported and plugs nothing, a broken pack stops the run with a
message naming it; the records name only our implementations, and what they name of a pack
exists in that pack's declarations."""

import importlib
import sys
import types
from importlib.machinery import ModuleSpec
from importlib.metadata import EntryPoint, entry_points

import pytest

from samplecheck.backends import flashinfer_pack
from samplecheck.harness import packs
from samplecheck.harness.plugins import register_all
from samplecheck.registry.matrix import RECORDS
from samplecheck.registry.records import Backend, Mark, PackUnavailable
from samplecheck.registry.semantics import validate

pytestmark = pytest.mark.interpreter

FAKE = ("top_k_top_p", Backend("fake_engine", "samplecheck.kernels.top_k_top_p_torch:apply_top_k_top_p_torch"))
ABSENT_REASON = "fake engine: not installed here"


def fake_pack():
    return [FAKE]


def absent_pack():
    raise PackUnavailable(ABSENT_REASON)


def _installed(monkeypatch, **values: str) -> None:
    """The entry points of the group `samplecheck.packs` are `values` ({name: "module:callable"})."""
    fakes = [EntryPoint(name, value, packs.PACK_GROUP) for name, value in values.items()]
    monkeypatch.setattr(packs, "entry_points", lambda group: fakes if group == packs.PACK_GROUP else [])


def test_a_packs_pairs_are_plugged(monkeypatch):
    _installed(monkeypatch, fake=f"{__name__}:fake_pack")
    unplugged = []
    assert packs.installed_packs(unplugged) == ([FAKE], [])
    assert unplugged == []


def test_an_absent_engine_is_reported_and_plugs_nothing(monkeypatch):
    _installed(monkeypatch, absent=f"{__name__}:absent_pack", fake=f"{__name__}:fake_pack")
    unplugged = []
    assert packs.installed_packs(unplugged) == ([FAKE], [])
    assert unplugged == [f"pack 'absent': {ABSENT_REASON}"]


def test_a_pack_whose_module_fails_to_import_names_the_pack_its_value_and_the_error(monkeypatch):
    value = "samplecheck.backends.no_such_pack_module:pack"
    _installed(monkeypatch, broken=value, fake=f"{__name__}:fake_pack")
    plugged, broken = packs.installed_packs([])
    assert plugged == [FAKE] and len(broken) == 1, broken  # the other packs still load
    assert "'broken'" in broken[0] and value in broken[0] and "ModuleNotFoundError" in broken[0], broken


def test_packs_selects_by_name_and_rejects_unknown_names(monkeypatch):
    _installed(monkeypatch, absent=f"{__name__}:absent_pack", fake=f"{__name__}:fake_pack")
    unplugged = []
    assert packs.installed_packs(unplugged, packs.selected("none")) == ([], [])
    assert unplugged == ["pack 'absent': not selected (--sc-packs)", "pack 'fake': not selected (--sc-packs)"]
    assert packs.installed_packs([], packs.selected("fake")) == ([FAKE], [])
    assert packs.selected("all") is None
    with pytest.raises(ValueError, match="--sc-packs names packs that are not installed: nope"):
        packs.installed_packs([], packs.selected("fake,nope"))


def test_records_name_only_our_implementations():
    """As registered by the record modules themselves (RECORDS), whatever this run plugged."""
    register_all()
    foreign = [f"{name}: {b.name} -> {b.target}" for name, info in RECORDS.items() for b in info.backends
               if b.target.startswith("samplecheck.backends.")]
    assert foreign == []


def _shipped_pack_backends() -> dict[str, set[str]]:
    """{kernel: backend names} declared by samplecheck's own packs (each module's `PACK`)."""
    names: dict[str, set[str]] = {}
    for ep in entry_points(group=packs.PACK_GROUP):
        if ep.dist is not None and ep.dist.name == "samplecheck":
            for kernel, backend in getattr(importlib.import_module(ep.module), "PACK", ()):
                names.setdefault(kernel, set()).add(backend.name)
    return names


def test_backends_named_by_regression_examples_exist():
    """A regression example replayed for named backends names the record's own or a shipped
    pack's backend of that kernel (a renamed backend would silently drop the pin)."""
    register_all()
    shipped = _shipped_pack_backends()
    assert {"vllm_v1_triton", "flashinfer_top_p_renorm_probs"} <= set().union(*shipped.values())
    unknown = [f"{name}: {example.ref} names {backend}" for name, info in RECORDS.items()
               for example in info.examples for backend in example.backends or ()
               if backend not in {b.name for b in info.backends} | shipped.get(name, set())]
    assert unknown == []


def test_flashinfer_pack_declares_cuda_only_backends_of_its_adapters():
    register_all()
    names = [backend.name for _, backend in flashinfer_pack.PACK]
    assert len(names) == 13 and len(set(names)) == 13, names
    for kernel, backend in flashinfer_pack.PACK:
        assert kernel in RECORDS, kernel
        assert backend.devices == ("cuda",), backend
        assert callable(backend.resolve()), backend.target
        validate(kernel, backend.semantics)


def test_flashinfer_pack_is_unavailable_without_flashinfer(monkeypatch):
    monkeypatch.setitem(sys.modules, "flashinfer", None)  # import machinery: "not installed"
    with pytest.raises(PackUnavailable) as raised:
        flashinfer_pack.pack()
    assert str(raised.value) == flashinfer_pack.INSTALL_HINT


def test_flashinfer_pack_is_unavailable_without_cuda(monkeypatch):
    installed = types.ModuleType("flashinfer")
    installed.__spec__ = ModuleSpec("flashinfer", None)
    monkeypatch.setitem(sys.modules, "flashinfer", installed)
    monkeypatch.setattr(flashinfer_pack, "cuda_present", lambda: False)
    with pytest.raises(PackUnavailable) as raised:
        flashinfer_pack.pack()
    assert str(raised.value) == flashinfer_pack.NO_CUDA


@pytest.mark.parametrize("topk_built", [True, False])
def test_flashinfer_pack_skips_only_the_fast_path_without_the_topk_module(monkeypatch, topk_built):
    installed = types.ModuleType("flashinfer")
    installed.__spec__ = ModuleSpec("flashinfer", None)
    monkeypatch.setitem(sys.modules, "flashinfer", installed)
    monkeypatch.setattr(flashinfer_pack, "cuda_present", lambda: True)
    monkeypatch.setattr(flashinfer_pack, "topk_module_ready", lambda: topk_built)
    plugged = flashinfer_pack.pack()
    assert [(kernel, b.name) for kernel, b in plugged] == [(kernel, b.name) for kernel, b in flashinfer_pack.PACK]
    for (_, backend), (_, declared) in zip(plugged, flashinfer_pack.PACK):
        skipped = not topk_built and backend.name == flashinfer_pack.BOUNDED
        topk_skip = (Mark("skip", flashinfer_pack.TOPK_MODULE_HINT),) if skipped else ()
        assert backend.marks == topk_skip + declared.marks, backend.name
