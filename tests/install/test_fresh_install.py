"""samplecheck as a new user gets it: the built wheel in a fresh venv inside a host project, and
external packages whose backends the documented command, run in that project, verifies.

The host project keeps its own pytest configuration beside the venv, which must not reach
samplecheck's runs: a pytest.ini that turns samplecheck's entry point off, makes markers strict
and names its own testpaths, and a conftest.py that fails when loaded. In order:
1. the wheel installs samplecheck alone, and declares pytest and pytest-xdist as dependencies
   (so `pip install samplecheck` brings what `samplecheck test` runs);
2. with examples/external_topk installed (a correct top_k_top_p, plugged by its entry point),
   `samplecheck test --backend-only` runs every property that judges backends on it, on
   every core, and exits 0 without running a framework self-test;
3. with an entry point whose module does not exist added (package acme_missing), the same
   command fails before any test runs, naming the entry point, its package and the error;
   with `--allow-broken-plugins` the run goes on, that backend's tests skipped with the reason;
4. with that package removed and a deliberately wrong backend added (acme_off_by_one: top-k
   keeps one entry too many), the oracle comparison fails that backend alone, and a failure's
   reproduce command (printed, and in JUnit XML), run verbatim there, fails the same test again.

The fresh venv: samplecheck.tests.install.wheel_venv.
"""

import shlex
import textwrap
from pathlib import Path
from xml.etree import ElementTree

import pytest

from samplecheck.tests.install.wheel_venv import (CHECKOUT, copy_sources, fresh_venv, run, site_packages,
                                                  wheel_of)

EXAMPLE = CHECKOUT / "examples" / "external_topk"
pytestmark = pytest.mark.skipif(not (CHECKOUT / "pyproject.toml").is_file(),
                                reason="builds the wheel from a samplecheck checkout; this is an installed copy")

HOST_FILES = {
    "pytest.ini": "[pytest]\naddopts = -p no:samplecheck --strict-markers\ntestpaths = host_tests\n",
    "conftest.py": "raise RuntimeError('the host project conftest.py was loaded by a samplecheck run')\n",
}
# Framework self-tests: they judge no backend, so --backend-only leaves them out.
SELF_TESTS = {"test_stats", "test_rounding", "test_catalog", "test_plugins", "test_report", "test_cli"}
# Properties every top_k_top_p backend is judged by.
JUDGING = {"test_oracle_equivalence", "test_strided_bitwise", "test_row_isolation", "test_error_inputs",
           "test_off_encodings", "test_edge_values", "test_empty_batch", "test_bad_inputs"}

PLUG_PYPROJECT = """
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "0.1.0"

[project.entry-points."samplecheck.backends"]
"top_k_top_p.{name}" = "{target}"

[tool.setuptools]
py-modules = [{modules}]
"""

OFF_BY_ONE = '''
"""Top-k masking that keeps one entry too many, in place; top-p unsupported."""

import torch


def top_k_mask(logits, k=None, p=None):
    if p is not None:
        raise NotImplementedError("top-p")
    if logits.dim() != 2:
        raise ValueError("logits must be 2-D")
    if logits.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        raise TypeError("logits dtype")
    if logits.size(1) > 1 and logits.stride(1) != 1:
        raise ValueError("column stride 1")
    if k is not None and (k.dtype not in (torch.int32, torch.int64) or k.shape != (logits.size(0),)):
        raise (TypeError if k.dtype not in (torch.int32, torch.int64) else ValueError)("k")
    if k is None or logits.numel() == 0:
        return logits
    if bool((k < -1).any()):
        raise ValueError("k must be -1 or 0 (off) or >= 1")
    vocab = logits.size(1)
    keep = torch.where((k > 0) & (k < vocab), torch.clamp(k + 1, max=vocab), vocab).long()
    ordered = logits.float().sort(dim=-1, descending=True).values
    logits.masked_fill_(logits.float() < ordered.gather(1, (keep - 1)[:, None]), float("-inf"))
    return logits


def _top_k_only(case):
    return case.p is None


top_k_mask.samplecheck = {"accepts": _top_k_only}
'''


def _plug(root: Path, name: str, target: str, module: str | None = None) -> Path:
    """A project `name` declaring one top_k_top_p entry point, `target`, and holding the
    module `name` with the source `module` (none when not given)."""
    project = root / name
    project.mkdir()
    (project / "pyproject.toml").write_text(PLUG_PYPROJECT.format(name=name, target=target,
                                                                  modules=f'"{name}"' if module else ""))
    if module:
        (project / f"{name}.py").write_text(module)
    return project


def _modules(junit: Path) -> set[str]:
    """The test modules a JUnit XML report ran tests of."""
    return {case.get("classname").rsplit(".", 1)[-1] for case in ElementTree.parse(junit).getroot().iter("testcase")}


def _failed(output: str) -> set[str]:
    return {line.split()[1] for line in output.splitlines() if line.startswith("FAILED ")}


def test_wheel_in_fresh_venv_verifies_external_packages(tmp_path):
    dist = tmp_path / "dist"
    sources = tmp_path / "sources"
    wheel = wheel_of(copy_sources(CHECKOUT, sources), dist, "samplecheck")
    host = tmp_path / "host"
    host.mkdir()
    for name, text in HOST_FILES.items():
        (host / name).write_text(text)
    python = fresh_venv(host / ".venv")
    site = site_packages(python)
    pip = [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--no-build-isolation"]

    # 1. samplecheck alone, with pytest and pytest-xdist among its dependencies.
    before = {p.name for p in site.iterdir()}
    installed = run(pip + [str(wheel)], host)
    assert installed.returncode == 0, installed.stderr[-3000:]
    added = {p.name for p in site.iterdir()} - before
    assert {name for name in added if not name.endswith(".dist-info")} == {"samplecheck"}, added
    assert {name for name in added if name.endswith(".dist-info")} == {wheel.name.split("-py3")[0] + ".dist-info"}, added
    requires = run([str(python), "-c", "from importlib.metadata import requires; print(*requires('samplecheck'))"],
                    host).stdout.split()
    assert {"pytest>=8", "pytest-xdist>=3.5"} <= set(requires), requires
    unmet = [line for line in run([str(python), "-m", "pip", "check"], host).stdout.splitlines()
             if line.startswith("samplecheck ")]
    assert not unmet, unmet
    helped = run([str(python.parent / "samplecheck"), "--help"], host)
    assert helped.returncode == 0 and "samplecheck test" in helped.stdout, helped.stdout + helped.stderr

    # 2. The correct example: every judging property, every core, exit 0.
    assert run(pip + [str(wheel_of(copy_sources(EXAMPLE, sources), dist, "external-topk"))], host).returncode == 0
    # The external package's backends alone: packs whose engines this environment has stay out.
    samplecheck = [str(python.parent / "samplecheck"), "test", "--device=cpu", "--backend-only", "--packs=none", "-rfs"]
    correct = run(samplecheck + ["--workers=auto", f"--junitxml={tmp_path / 'correct.xml'}"], host)
    out = correct.stdout
    assert correct.returncode == 0, out[-4000:] + correct.stderr[-2000:]
    summary = out.splitlines()[-1]
    assert "sorted_threshold" in out and "passed" in summary and "failed" not in summary, out[-2000:]
    ran = _modules(tmp_path / "correct.xml")
    assert JUDGING <= ran and not ran & SELF_TESTS, ran

    # 3. A broken entry point fails the run before any test; allowed, its tests are skipped.
    missing = _plug(tmp_path, "acme_missing", "acme_sampling_not_there:top_k_mask")
    assert run(pip + [str(wheel_of(missing, dist, "acme_missing"))], host).returncode == 0
    reason = ("broken entry point 'top_k_top_p.acme_missing' = 'acme_sampling_not_there:top_k_mask' of package "
              "acme_missing (group samplecheck.backends): ModuleNotFoundError: "
              "No module named 'acme_sampling_not_there'")
    broken = run(samplecheck + ["--workers=auto"], host)
    assert broken.returncode == pytest.ExitCode.USAGE_ERROR, broken.stdout[-4000:] + broken.stderr[-2000:]
    assert reason in broken.stderr and "--allow-broken-plugins" in broken.stderr, broken.stderr[-4000:]
    assert " passed" not in broken.stdout and " failed" not in broken.stdout, broken.stdout[-2000:]
    allowed = run(samplecheck + ["--allow-broken-plugins", "--workers=0", "-k", "test_oracle_equivalence"], host)
    out = allowed.stdout
    assert allowed.returncode == 0, out[-4000:] + allowed.stderr[-2000:]
    assert "passed" in out.splitlines()[-1] and "skipped" in out.splitlines()[-1], out.splitlines()[-1]
    skips = [line for line in out.splitlines() if line.startswith("SKIPPED ")]
    assert skips and all("acme_missing" in line for line in skips) and reason in skips[0], skips

    # 4. A wrong backend fails alone, and its reproduce command fails it again.
    assert run([str(python), "-m", "pip", "uninstall", "-y", "-q", "acme_missing"], host).returncode == 0
    wrong = _plug(tmp_path, "acme_off_by_one", "acme_off_by_one:top_k_mask", textwrap.dedent(OFF_BY_ONE))
    assert run(pip + [str(wheel_of(wrong, dist, "acme_off_by_one"))], host).returncode == 0
    first = run(samplecheck + ["--workers=0", "-k", "test_oracle_equivalence",
                                f"--junitxml={tmp_path / 'wrong.xml'}"], host)
    out = first.stdout
    assert first.returncode == 1, out[-4000:] + first.stderr[-2000:]
    failed = _failed(out)
    assert failed and all("acme_off_by_one" in nodeid for nodeid in failed), failed
    assert "passed" in out.splitlines()[-1], out.splitlines()[-1]
    cases = ElementTree.parse(tmp_path / "wrong.xml").getroot().iter("testcase")
    reproduce = {case.get("name"): prop.get("value") for case in cases if case.find("failure") is not None
                 for prop in case.iter("property") if prop.get("name") == "reproduce"}
    assert len(reproduce) == len(failed) and all("--sc-backend-only" in cmd for cmd in reproduce.values()), reproduce
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Reproduce with"))
    rerun_text = lines[at + 1].strip()
    assert "--sc-backend-only" in rerun_text and "--sc-device=cpu" in rerun_text, rerun_text
    rerun = run(shlex.split(rerun_text), host)
    assert rerun.returncode == 1, rerun.stdout[-4000:] + rerun.stderr[-2000:]
    refailed = {nodeid.split("::", 1)[1] for nodeid in _failed(rerun.stdout)}
    assert len(refailed) == 1 and refailed <= {nodeid.split("::", 1)[1] for nodeid in failed}, (refailed, failed)
