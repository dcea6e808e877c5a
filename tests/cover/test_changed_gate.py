"""`samplecheck gate --changed REF`: changed files mapped through the registry to the cells and
mutants they can affect (samplecheck.harness.changes), the suite narrowed to those cells
(`--sc-cells`) and the kill table to those mutants."""

import dataclasses
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from samplecheck.harness import changes
from samplecheck.harness.plugins import register_all
from samplecheck.harness.selection import judged_cells, parse_cells
from samplecheck.harness.suite_files import suite_root
from samplecheck.mutants import MUTANTS
from samplecheck.mutants import temperature as temperature_mutants
from samplecheck.registry.matrix import RECORDS, Combo
from samplecheck.registry.records import Backend
from samplecheck.tests.cover.fake_suite import passed
from samplecheck.tools import gate, killtable, suite

ROOT = suite_root()
pytestmark = pytest.mark.skipif(not (ROOT / "kernels" / "min_p.py").is_file(),
                                reason="needs a checkout (the mapping is over the repository's files)")


@pytest.fixture(scope="module")
def records():
    register_all()
    adapter = Backend("adapter", "samplecheck.backends.vllm:v1_torch_top_k_top_p")
    top = RECORDS["top_k_top_p"]
    return {**RECORDS, "top_k_top_p": dataclasses.replace(top, backends=top.backends + (adapter,))}


def mutants_of(kernel_module: str) -> set[str]:
    return {m.name for m in MUTANTS.values() if m.module == kernel_module}


def test_a_kernel_file_selects_its_backends_and_their_mutants_alone(records):
    scope = changes.scope(["kernels/penalties.py"], records, ROOT)
    assert not scope.everything
    assert ("penalties", "triton") in scope.cells and ("sampling_params", "triton") in scope.cells  # the pipeline calls it
    assert not {("min_p", "triton"), ("top_k_top_p", "adapter"), ("temperature", "torch")} & scope.cells, scope.cells
    assert mutants_of("samplecheck.kernels.penalties") <= scope.mutants
    assert not mutants_of("samplecheck.kernels.min_p") & scope.mutants


def test_a_split_path_file_selects_the_mutants_reached_through_the_entry_point(records):
    scope = changes.scope(["kernels/top_k_top_p_split.py"], records, ROOT)
    reached = mutants_of("samplecheck.kernels.top_k_top_p_split")
    assert reached and reached <= scope.mutants and ("top_k_top_p", "triton") in scope.cells
    assert reached <= changes.scope(["kernels/top_k_top_p.py"], records, ROOT).mutants


def test_a_kernel_file_leaves_the_adapters_that_share_only_its_validation(records):
    """The FlashInfer adapters check their parameters with our validation helpers, not our
    kernels: a change to the min-p kernel does not select them, a change to the checks does."""
    register_all()
    records = {**records, "min_p_sample": dataclasses.replace(RECORDS["min_p_sample"], backends=(
        Backend("flashinfer_probs", "samplecheck.backends.flashinfer:min_p_sampling_from_probs"),))}
    assert ("min_p_sample", "flashinfer_probs") not in changes.scope(["kernels/min_p.py"], records, ROOT).cells
    assert ("min_p_sample", "flashinfer_probs") in changes.scope(["kernels/validation.py"], records, ROOT).cells


def test_an_adapter_file_selects_its_pack_backends(records):
    scope = changes.scope(["properties/backends/vllm.py"], records, ROOT)
    assert scope.cells == {("top_k_top_p", "adapter")} and not scope.mutants, scope.describe()


def test_an_oracle_selects_every_backend_of_its_record(records):
    scope = changes.scope(["oracles/bad_words.py"], records, ROOT)
    assert {("bad_words", "triton")} <= scope.cells and ("min_p", "triton") not in scope.cells, scope.describe()
    assert mutants_of("samplecheck.kernels.bad_words") <= scope.mutants


def test_a_mutant_file_selects_its_mutants_and_no_cell(records):
    """The mutants the file declares; not generated ones of the same kernel that this process
    registered (`samplecheck mutate` does, and another test may have run it here)."""
    scope = changes.scope(["properties/mutants/temperature.py"], records, ROOT)
    assert not scope.cells and scope.mutants == {m.name for m in temperature_mutants.MUTANTS}


@pytest.mark.parametrize("path", ["properties/harness/plugin.py", "tests/cover/test_oracle_equivalence.py",
                                  "pyproject.toml", "properties/harness/reproduce.py"])
def test_a_framework_file_selects_everything(records, path):
    scope = changes.scope(["docs/findings.md", path, "kernels/min_p.py"], records, ROOT)
    assert scope.everything and path in scope.reason


def test_documentation_selects_nothing(records):
    scope = changes.scope(["README.md", "docs/gpu-runs.md", "bench/kernels.py"], records, ROOT)
    assert not scope.everything and not scope.cells and not scope.mutants
    assert scope.describe().startswith("nothing")


def test_changed_files_are_the_diff_against_ref_and_untracked_files(tmp_path):
    def git(*args):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)
    git("init", "-q")
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text("x = 1\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base")
    (tmp_path / "a.py").write_text("x = 2\n")
    (tmp_path / "c.py").write_text("new\n")
    assert changes.changed_files("HEAD", tmp_path) == ["a.py", "c.py"]
    with pytest.raises(ValueError, match="--changed 'nope'"):
        changes.changed_files("nope", tmp_path)


def test_cells_select_the_tests_that_judge_them():
    register_all()
    record = RECORDS["min_p"]
    triton, torch_backend = record.backends
    item = SimpleNamespace(callspec=SimpleNamespace(params={"combo": Combo(record, triton, torch.float32, "contig")}))
    assert judged_cells(item) == {("min_p", "triton")}
    error = SimpleNamespace(callspec=SimpleNamespace(params={"error_case": (record, torch_backend, None)}))
    assert judged_cells(error) == {("min_p", "torch")}
    assert parse_cells("min_p/triton, penalties/triton") == {("min_p", "triton"), ("penalties", "triton")}
    with pytest.raises(ValueError, match="--sc-cells takes RECORD/BACKEND"):
        parse_cells("min_p")


def run_gate(monkeypatch, tmp_path, scope) -> tuple[list, list]:
    """The pytest commands and kill tables (mutant names) `gate --changed HEAD` runs for `scope`."""
    suites, hunts = [], []
    monkeypatch.setattr(gate, "changed_scope", lambda ref, chosen: scope)
    monkeypatch.setattr(suite, "run_pytest",
                        lambda command, log=None, processes=1: suites.append(command) or passed(command))
    monkeypatch.setattr(killtable, "run",
                        lambda names, device, profile, workers, log=None: hunts.append(names) or ("", 0))
    assert gate.main(["--device=cpu", "--changed", "HEAD", "--out", str(tmp_path)]) == 0
    return suites, hunts


def test_the_gate_runs_the_scope_alone(monkeypatch, tmp_path):
    scope = changes.Scope(False, frozenset({("min_p", "triton")}), frozenset({"min_p_row0_parameter"}))
    suites, hunts = run_gate(monkeypatch, tmp_path, scope)
    (command,) = suites
    assert "--sc-cells=min_p/triton" in command and "--sc-profile=gate" in command, command
    assert hunts == [["min_p_row0_parameter"]], hunts


def test_a_change_that_touches_no_verdict_runs_nothing(monkeypatch, tmp_path):
    assert run_gate(monkeypatch, tmp_path, changes.Scope(False)) == ([], [])


def test_a_framework_change_runs_the_whole_gate(monkeypatch, tmp_path):
    suites, hunts = run_gate(monkeypatch, tmp_path, changes.Scope(True, reason="x.py is framework"))
    assert len(suites) == 1 and not any(option.startswith("--sc-cells") for option in suites[0])
    assert len(hunts) == 1 and set(hunts[0]) == set(MUTANTS), "a framework change hunts every mutant"
    assert (Path(tmp_path) / "gate-kills.md").is_file()


def test_a_kernel_test_module_selects_itself_and_the_mutants_of_what_it_imports(records):
    """A changed test module the registry does not parametrize (a kernel's own tests) runs whole,
    beside the cells of the other changed files, with the mutants of the modules it imports; a
    generic property test stays framework (test_a_framework_file_selects_everything)."""
    scope = changes.scope(["tests/cover/test_top_p_split.py", "kernels/min_p.py"], records, ROOT)
    assert not scope.everything and scope.tests == {"tests/cover/test_top_p_split.py"}, scope.describe()
    assert mutants_of("samplecheck.kernels.top_k_top_p_split") <= scope.mutants
    assert mutants_of("samplecheck.kernels.min_p") <= scope.mutants and ("min_p", "triton") in scope.cells
    assert not mutants_of("samplecheck.kernels.penalties") & scope.mutants
    assert "test modules tests/cover/test_top_p_split.py" in scope.describe()


def test_a_kernel_test_module_runs_whole_beside_the_cells(monkeypatch, tmp_path):
    scope = changes.Scope(False, frozenset({("min_p", "triton")}), tests=frozenset({"tests/cover/test_top_p_split.py"}))
    (command,), _ = run_gate(monkeypatch, tmp_path, scope)
    assert "--sc-cells=min_p/triton" in command and "--sc-tests=tests/cover/test_top_p_split.py" in command, command
    suites, _ = run_gate(monkeypatch, tmp_path, changes.Scope(False, tests=frozenset({"tests/cover/test_x.py"})))
    assert len(suites) == 1 and "--sc-cells=" in suites[0], "a test module alone still runs the suite"
