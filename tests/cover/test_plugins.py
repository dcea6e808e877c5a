"""Implementations from outside the repo plug in with --sc-backend / entry points; one that
fails to load or cannot take its kernel's calls is reported before any test runs."""

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from xml.etree import ElementTree

import pytest
import torch
from hypothesis import given, settings

from samplecheck.harness import plugins
from samplecheck.harness.selection import judges_backends
from samplecheck.inputs.strategies import Budget
from samplecheck.registry.matrix import RECORDS, Combo
from samplecheck.registry.records import Backend

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "external_topk"
# Framework self-tests: they judge no backend, so --backend-only leaves them out.
SELF_TESTS = {"test_stats", "test_rounding", "test_catalog", "test_plugins", "test_report", "test_cli"}


def test_backend_option_parses_and_reads_declared_support():
    kernel, backend = plugins.parse_backend_option("top_k_top_p=samplecheck.kernels.top_k_top_p_torch:apply_top_k_top_p_torch")
    assert (kernel, backend.name, backend.devices, backend.error_messages) == (
        "top_k_top_p", "apply_top_k_top_p_torch", ("cpu", "cuda"), False)


@pytest.mark.parametrize("text", ["top_k_top_p", "top_k_top_p=", "top_k_top_p=samplecheck.kernels.top_k_top_p_torch"])
def test_backend_option_rejects_malformed(text):
    with pytest.raises(ValueError, match="package.module:callable"):
        plugins.parse_backend_option(text)


DECLARED_TARGET = "samplecheck.kernels.top_k_top_p_torch:apply_top_k_top_p_torch"


def _declaring(monkeypatch, declaration: dict) -> None:
    """DECLARED_TARGET's callable carries `declaration` for this test."""
    monkeypatch.setattr(Backend("x", DECLARED_TARGET).resolve(), "samplecheck", declaration, raising=False)


def test_fixed_vocabs_declaration_draws_only_the_declared_sizes(monkeypatch):
    _declaring(monkeypatch, {"fixed_vocabs": (17, 8193)})
    backend = plugins.backend_from_target("top_k_top_p", "declared", DECLARED_TARGET)
    combo = Combo(RECORDS["top_k_top_p"], backend, torch.float32, "contig")
    budget = Budget(max_elements=2**16, max_batch=4, max_random_vocab=2048)

    @settings(max_examples=30, database=None)
    @given(case=combo.info.cases(budget))
    def vocab_is_declared(case):
        assert case.logits.vocab in (17, 8193)

    vocab_is_declared()


@pytest.mark.parametrize("declared", [(), (0, 17), ("8192",)])
def test_fixed_vocabs_declaration_rejects_malformed(monkeypatch, declared):
    _declaring(monkeypatch, {"fixed_vocabs": declared})
    with pytest.raises(ValueError, match="fixed_vocabs must be True, False or a non-empty tuple"):
        plugins.backend_from_target("top_k_top_p", "declared", DECLARED_TARGET)


# A plug-in module outside samplecheck, importable as PLUG_MODULE while a test uses `plug_module`.
PLUG_MODULE = "samplecheck_test_plug"
PLUG_SOURCE = """
def top_k_top_p_mask(logits, k=None, p=None):
    return logits


def renamed(logits, top_k=None, top_p=None):
    return logits


def requires_p(logits, k, p):
    return logits


def keyword_logits_only(*, logits, k=None, p=None):
    return logits


def anything(*args, **kwargs):
    return args[0]


def fails_to_declare(logits, k=None, p=None):
    return logits


fails_to_declare.samplecheck = {"devicez": ("cpu",)}
"""


@pytest.fixture
def plug_module(tmp_path, monkeypatch):
    (tmp_path / f"{PLUG_MODULE}.py").write_text(PLUG_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, PLUG_MODULE, raising=False)
    return PLUG_MODULE


@pytest.mark.parametrize("function", ["top_k_top_p_mask", "anything"])
def test_a_callable_taking_its_kernels_calls_plugs_in(plug_module, function):
    kernel, backend = plugins.parse_backend_option(f"top_k_top_p={plug_module}:{function}")
    assert (kernel, backend.name, backend.error_messages) == ("top_k_top_p", function, False)


@pytest.mark.parametrize("function, error", [
    ("renamed", "unexpected keyword argument 'k'"),
    ("requires_p", "missing a required argument: 'k'"),
    ("keyword_logits_only", "too many positional arguments"),
])
def test_a_callable_that_cannot_take_its_kernels_calls_is_named_with_the_expected_parameters(
        plug_module, function, error):
    with pytest.raises(TypeError) as raised:
        plugins.parse_backend_option(f"top_k_top_p={plug_module}:{function}")
    message = str(raised.value)
    assert f"{plug_module}:{function} cannot take samplecheck's calls of a top_k_top_p backend" in message, message
    assert error in message and "top_k_top_p(logits, k=None, p=None)" in message, message


def test_the_expected_parameters_are_the_records_own_implementations_without_knobs():
    for name, record in RECORDS.items():
        assert record.backends[0].target.startswith("samplecheck.kernels."), (name, record.backends[0])
    assert str(plugins.contract("gumbel_sample")) == "(logits, *, seeds, positions, temperature=None)"
    assert str(plugins.contract("penalties")) == ("(logits, *, prompt_token_ids, output_token_ids, repetition_penalty, "
                                                  "frequency_penalty, presence_penalty)")


def test_every_backend_samplecheck_ships_takes_its_kernels_calls():
    """No false alarm: our kernels, fallbacks and the packs' adapters (each pack module's `PACK`,
    built without its engine) pass the check."""
    import importlib
    from importlib.metadata import entry_points

    from samplecheck.harness.packs import PACK_GROUP

    packs = [importlib.import_module(ep.value.partition(":")[0]) for ep in entry_points(group=PACK_GROUP)
             if ep.dist is not None and ep.dist.name == "samplecheck"]
    shipped = [(name, b) for name, record in RECORDS.items() for b in record.backends]
    shipped += [pair for module in packs for pair in getattr(module, "PACK", ())]
    assert len(shipped) > sum(len(record.backends) for record in RECORDS.values()), "no pack's PACK was checked"
    for kernel, backend in shipped:
        plugins.check_call(kernel, backend.target, backend.resolve())


def test_unknown_kernel_is_named():
    with pytest.raises(ValueError, match="unknown kernel 'top_k' for mod:fn; registered: .*top_k_top_p"):
        plugins.parse_backend_option("top_k=mod:fn")


def _entry_points(monkeypatch, *entries, pack_error: str | None = None) -> None:
    """`entries` ((name, value) pairs of package acme-sampling) are the installed entry points
    of samplecheck.backends; the installed packs give nothing, or one broken pack with `pack_error`."""
    points = [SimpleNamespace(name=name, value=value, dist=SimpleNamespace(name="acme-sampling"))
              for name, value in entries]
    monkeypatch.setattr(plugins, "entry_points", lambda group: points)
    monkeypatch.setattr(plugins, "UNPLUGGED", [])

    def packs(unplugged, wanted):
        return [], [pack_error] if pack_error else []

    monkeypatch.setattr(plugins, "installed_packs", packs)


BROKEN = [
    (("top_k_top_p.gone", "acme_not_there:fn"), "ModuleNotFoundError: No module named 'acme_not_there'"),
    (("top_k.typo", "{module}:top_k_top_p_mask"), "ValueError: entry point names must be KERNEL.BACKEND"),
    (("top_k_top_p.renamed", "{module}:renamed"), "TypeError: {module}:renamed cannot take samplecheck's calls"),
    (("top_k_top_p.declared", "{module}:fails_to_declare"), "ValueError: {module}:fails_to_declare: unknown keys"),
]


@pytest.mark.parametrize("entry, error", BROKEN, ids=[e[0][0] for e in BROKEN])
def test_a_broken_entry_point_fails_the_run_naming_it_its_package_and_the_error(plug_module, monkeypatch, entry,
                                                                                  error):
    name, value = entry[0], entry[1].format(module=plug_module)
    _entry_points(monkeypatch, ("top_k_top_p.good", f"{plug_module}:top_k_top_p_mask"), (name, value))
    with pytest.raises(plugins.BrokenPlugins) as raised:
        plugins.installed_backends()
    message = str(raised.value)
    assert f"broken entry point {name!r} = {value!r} of package acme-sampling" in message, message
    assert error.format(module=plug_module) in message and "--sc-allow-broken-plugins" in message, message


@pytest.mark.parametrize("entry, error", BROKEN, ids=[e[0][0] for e in BROKEN])
def test_allow_broken_reports_a_broken_entry_point_and_skips_its_tests(plug_module, monkeypatch, entry, error):
    name, value = entry[0], entry[1].format(module=plug_module)
    _entry_points(monkeypatch, ("top_k_top_p.good", f"{plug_module}:top_k_top_p_mask"), (name, value))
    plugged = plugins.installed_backends(allow_broken=True)
    assert plugged[0][0] == "top_k_top_p" and plugged[0][1].name == "good" and not plugged[0][1].marks
    kernel = name.partition(".")[0]
    if kernel in RECORDS:  # its tests are skipped with the reason
        (_, skipped), = plugged[1:]
        (mark,) = skipped.marks
        assert mark.kind == "skip" and error.format(module=plug_module) in mark.reason and not plugins.UNPLUGGED
    else:  # no kernel to skip tests of: reported in the header
        assert plugged[1:] == [] and error in plugins.UNPLUGGED[0], plugins.UNPLUGGED


def test_a_broken_pack_fails_the_run_or_is_reported(monkeypatch):
    reason = "broken pack 'acme' = 'acme_pack:pack' of package acme-sampling (group samplecheck.packs): boom"
    _entry_points(monkeypatch, pack_error=reason)
    with pytest.raises(plugins.BrokenPlugins, match="broken pack 'acme'"):
        plugins.installed_backends()
    assert plugins.installed_backends(allow_broken=True) == [] and plugins.UNPLUGGED == [reason]


def test_backends_are_judged_by_tests_the_registry_parametrizes(request):
    record = RECORDS["top_k_top_p"]
    backend = record.backends[0]
    judged = [Combo(record, backend, torch.float32, "contig"), (record, backend, record.error_inputs[0]),
              ("bad-input table entry", backend)]
    for value in judged:
        assert judges_backends(SimpleNamespace(callspec=SimpleNamespace(params={"x": value})))
    not_judged = [SimpleNamespace(), SimpleNamespace(callspec=SimpleNamespace(params={"combo": object()})),
                  SimpleNamespace(callspec=SimpleNamespace(params={"text": "top_k_top_p", "n": 3})), request.node]
    assert not any(judges_backends(item) for item in not_judged)


def test_unknown_mutant_is_rejected():
    with pytest.raises(ValueError, match="--sc-mutant must be one of"):
        plugins.mutant_backend("no_such_mutant")


def test_a_mutant_replaces_the_backend_it_patches():
    kernel, backend = plugins.mutant_backend("temperature_contiguous_copy")
    own = next(b for b in RECORDS["temperature"].backends if b.name == "triton")
    assert (kernel, backend.name, backend.target) == (
        "temperature", "mutant-temperature_contiguous_copy", "samplecheck.mutants:temperature_contiguous_copy")
    assert (backend.marks, backend.knobs, backend.capturable) == (own.marks, own.knobs, own.capturable)


@pytest.mark.skipif(not EXAMPLE.is_dir(), reason="needs examples/external_topk of a samplecheck checkout (an "
                    "installed samplecheck has none; tests/install runs an external package against the wheel)")
def test_example_package_passes_the_suite_alone(device, tmp_path):
    """The example under examples/ runs every property that judges backends as the only
    backend (`samplecheck test --backend-only`), and passes; no framework self-test runs. On
    the CPU, tests/install/test_fresh_install.py runs that whole suite over the example installed
    from its wheel, so here it runs the oracle comparison alone, through `--backend`."""
    junit = tmp_path / "junit.xml"
    selection = "test_oracle_equivalence" if device.type == "cpu" else "not test_example_package_passes_the_suite_alone"
    command = [sys.executable, "-m", "samplecheck.tools.cli", "test", f"--device={device.type}", "--profile=ci",
               "--workers=0", "--backend-only", "--packs=none", "--backend",
               "top_k_top_p=external_topk:top_k_top_p_mask", "-q", f"--junitxml={junit}", "-k", selection]
    # The example alone: no pack is plugged (transformers' where it is installed, vLLM's where
    # SAMPLECHECK_VLLM_KERNELS is set); the suite's own run covers the packs.
    env = {**os.environ, "PYTHONPATH": f"{EXAMPLE}:{ROOT}"}
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env, timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "passed" in result.stdout.splitlines()[-1]
    modules = {case.get("classname").rsplit(".", 1)[-1] for case in ElementTree.parse(junit).getroot().iter("testcase")}
    assert "test_oracle_equivalence" in modules and not modules & SELF_TESTS, modules

