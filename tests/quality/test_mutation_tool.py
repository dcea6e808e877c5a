"""`samplecheck mutate` keeps working: on CPU, each operator yields distinct mutants that import,
and a generated mutant resolves by name through --sc-mutant and dies in a narrow hunt.

The full analysis (hundreds of mutants against the whole fast suite) runs on a GPU
(docs/mutation.md); this test keeps its parts honest in CPU CI, in well under a minute.
"""

import ast
import importlib.util
import json
from dataclasses import asdict
from pathlib import Path

import pytest

from samplecheck.mutants import GENERATED_ENV, MUTANTS
from samplecheck.tools.killtable import hunt
from samplecheck.tools.mutation.generate import generate, importable, targets
from samplecheck.tools.mutation.operators import ALL

# min_p has every operator but the pipeline reorder, which only the pipeline has, and the
# division, which it does not make (temperature's kernel does).
ELSEWHERE = {"reorder": "sampling_params", "division": "temperature"}
KERNEL_OF = {op: ELSEWHERE.get(op, "min_p") for op in ALL}


@pytest.fixture(autouse=True)
def registry_as_found():
    """The process's mutant registry as before the test: `importable` registers what it imports,
    and a later test in this worker must not see those generated mutants."""
    saved = dict(MUTANTS)
    yield
    MUTANTS.clear()
    MUTANTS.update(saved)


@pytest.fixture(scope="module")
def mutants():
    chosen = {t.kernel: t for t in targets() if not t.via}
    return {kernel: generate(chosen[kernel]) for kernel in set(KERNEL_OF.values())}


@pytest.mark.parametrize("operator", ALL)
def test_operator_yields_distinct_importable_mutants(operator, mutants):
    mine = [m for m in mutants[KERNEL_OF[operator]] if m.name.split("-")[1] == operator]
    assert mine, f"operator {operator} produced no mutant of {KERNEL_OF[operator]}"
    trees = {ast.dump(ast.parse(m.patched_source())) for m in mine}
    assert len(trees) == len(mine), "two mutants differ only in formatting"
    for m in mine:
        assert m.replace != m.find
        assert importable(m) is None, m.name


@pytest.mark.parametrize("module, operator, find, replace", [
    ("samplecheck.kernels.min_p", "compare", "(x < threshold)", "(x <= threshold)"),  # the entry module's
    ("samplecheck.kernels.row_splits", "minmax", "tl.max(", "tl.min("),  # a helper's, through min_p's module
])
def test_generated_mutant_is_killed_by_a_narrow_hunt(module, operator, find, replace, tmp_path, monkeypatch, device):
    if device.type != "cpu":
        pytest.skip("the CPU sample of the tool; the GPU runs the full analysis")
    [target] = [t for t in targets() if t.kernel == "min_p" and t.module == module]
    [flip] = [m for m in generate(target, (operator,)) if find in m.find and replace in m.replace]
    path = tmp_path / "mutants.json"
    path.write_text(json.dumps([asdict(flip)]))
    monkeypatch.setenv(GENERATED_ENV, str(path))
    from samplecheck.mutants import add_generated

    add_generated(path)
    result = hunt(flip.name, "cpu", "ci", timeout=300, tests=[str(_suite_file("test_oracle_equivalence.py"))])
    assert result.killed, f"{flip.name} ({flip.description}) survived:\n{result.output}"
    assert "test_oracle_equivalence" in result.killer


def test_helper_modules_are_targets_reached_through_their_importers():
    """Each helper target's first `via` module imports its `roots` from it, and its last is the
    entry module of its kernel's own target; no helper is a backend's entry module; the
    selection kernels' cut search and split paths are among the helpers."""
    every = targets()
    entries = {t.kernel: t.module for t in every if not t.via}
    helpers = [t for t in every if t.via]
    for t in helpers:
        importer = ast.parse(Path(importlib.util.find_spec(t.via[0]).origin).read_text())
        imported = {a.name for node in ast.walk(importer) if isinstance(node, ast.ImportFrom) and node.module == t.module
                    for a in node.names}
        assert t.roots and set(t.roots) <= imported, t
        assert t.via[-1] == entries[t.kernel] and t.module not in entries.values(), t
    reached = {t.module.rsplit(".", 1)[-1] for t in helpers if t.kernel == "top_k_top_p"}
    assert {"cut_search", "top_k_top_p_split", "top_k_split", "top_k_chunks", "cut_keys"} <= reached, reached


def test_modules_option_keeps_the_named_helpers_mutants(tmp_path):
    from samplecheck.tools.mutate import main

    assert main(["--kernels", "min_p", "--modules", "row_splits", "--sample", "1", "--list", "--out", str(tmp_path)]) == 0
    listed = json.loads((tmp_path / "mutants.json").read_text())
    assert listed and {(m["module"], m["via"][-1]) for m in listed} == {("samplecheck.kernels.row_splits",
                                                                         "samplecheck.kernels.min_p")}
    with pytest.raises(SystemExit, match="--modules: each must be one of .*row_splits.*; got nowhere"):
        main(["--kernels", "min_p", "--modules", "nowhere", "--list", "--out", str(tmp_path)])


def _suite_file(name: str):
    from samplecheck.harness.suite_files import suite_path

    return suite_path() / name


def _result(name: str, outcome: str) -> dict:
    kernel, operator = name.split("-")[:2]
    return {"name": name, "kernel": kernel, "operator": operator, "description": "d", "outcome": outcome,
            "killer": "test_x" if outcome == "killed" else None, "seconds": 1.0, "find": "a", "replace": "b",
            "output": ""}


def test_merge_keeps_each_mutants_last_result(tmp_path):
    from samplecheck.tools.mutate import main

    first, rehunt = tmp_path / "first.json", tmp_path / "rehunt.json"
    first.write_text(json.dumps({"header": "first", "results": [_result("min_p-mask-1", "survived"),
                                                                _result("min_p-mask-2", "killed")]}))
    rehunt.write_text(json.dumps({"header": "rehunt", "results": [_result("min_p-mask-1", "killed")]}))
    none = tmp_path / "dispositions.json"
    none.write_text("{}")
    assert main(["--merge", str(first), str(rehunt), "--dispositions", str(none), "--out", str(tmp_path)]) == 0
    merged = json.loads((tmp_path / "mutation.json").read_text())
    assert [(r["name"], r["outcome"]) for r in merged["results"]] == [("min_p-mask-1", "killed"),
                                                                      ("min_p-mask-2", "killed")]


def test_mutants_option_hunts_the_named_ones_alone(mutants, tmp_path):
    from samplecheck.tools.mutate import main

    name = next(m.name for m in mutants["min_p"] if m.name.split("-")[1] == "mask")
    assert main(["--kernels", "min_p", "--mutants", name, "--list", "--out", str(tmp_path)]) == 0
    assert [m["name"] for m in json.loads((tmp_path / "mutants.json").read_text())] == [name]
    with pytest.raises(SystemExit, match="not generated"):
        main(["--kernels", "min_p", "--mutants", "min_p-mask-00000000", "--list", "--out", str(tmp_path)])


@pytest.mark.parametrize("gate, nightly, expected", [
    ("survived", "killed", ("killed", "nightly", ["gate", "nightly"])),
    ("killed", None, ("killed", "gate", ["gate"])),
    ("not run", None, ("not run", "gate", ["gate"])),
    ("survived", "survived", ("survived", "nightly", ["gate", "nightly"])),
])
def test_nightly_hunt_escalates_from_the_gate_profile(gate, nightly, expected, monkeypatch):
    from types import SimpleNamespace

    from samplecheck.tools import mutate
    from samplecheck.tools.killtable import Hunt
    from samplecheck.tools.mutation.report import outcome

    planned = {"gate": gate, "nightly": nightly}
    hunted = []

    def fake_hunt(name, device, profile, timeout, tests, processes):
        hunted.append(profile)
        kind = planned[profile]
        return Hunt(name, kind != "not run", kind == "killed", "t::k" if kind == "killed" else None, 2.0, "",
                    {"killed": 1, "survived": 0, "not run": None}[kind])

    monkeypatch.setattr(mutate, "hunt", fake_hunt)
    args = SimpleNamespace(timeout=60.0, tests=None, workers=1)
    result, profile = mutate._escalate("m", "cuda", "nightly", args, None)
    assert (outcome(result), profile, hunted) == expected
    assert result.seconds == 2.0 * len(hunted)
    assert mutate.rungs("gate") == ("gate",)


def test_a_generated_mutant_registers_again_as_itself(mutants, tmp_path):
    """A mutant written by `samplecheck mutate` (JSON: tuples come back as lists) registers
    beside the same mutant already registered in this process (`importable` registers what it
    imports), every field read back as the type it was written from."""
    from samplecheck.mutants import add_generated

    first = next(m for m in mutants["min_p"] if importable(m) is None)
    path = tmp_path / "mutants.json"
    path.write_text(json.dumps([asdict(first)]))
    assert add_generated(path) == [first.name]
