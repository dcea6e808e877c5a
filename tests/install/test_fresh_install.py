"""samplecheck as a new user gets it: the built wheel in a fresh venv outside the checkout, and
a tiny external package whose backends are verified by the documented command run there.

The external package declares three `samplecheck.backends` entry points for top_k_top_p: a
correct implementation, a deliberately broken one (top-k keeps one entry too many), and one
whose module does not exist. `samplecheck test --backend-only` in that package's directory
must pass the correct one, fail the broken one, skip the missing one with its package and
target named, and print a reproduce command that, run verbatim, fails the same test again.

The fresh venv gets samplecheck's dependencies (torch, triton, hypothesis, pytest, ...) from
this environment through a folder of links that leaves out this environment's own samplecheck,
so the wheel is installed exactly as `pip install` does, with no network and no second torch.
"""

import shlex
import subprocess
import sys
import sysconfig
import textwrap
import venv
from pathlib import Path
from xml.etree import ElementTree

import pytest

CHECKOUT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not (CHECKOUT / "pyproject.toml").is_file(),
                                reason="builds the wheel from a samplecheck checkout; this is an installed copy")

EXTERNAL_PYPROJECT = """
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "acme_sampling"
version = "0.1.0"

[project.entry-points."samplecheck.backends"]
"top_k_top_p.acme_sorted" = "acme_sampling:top_k_mask"
"top_k_top_p.acme_off_by_one" = "acme_sampling:top_k_mask_off_by_one"
"top_k_top_p.acme_missing" = "acme_sampling_not_there:top_k_mask"
"""

EXTERNAL_MODULE = '''
"""Top-k masking (keep every value tied with the k-th largest), in place, top-p unsupported."""

import torch


def _mask(logits, k, extra):
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
    on = (k > 0) & (k < vocab)
    keep = torch.where(on, torch.clamp(k + extra, max=vocab), vocab).long()
    ordered = logits.float().sort(dim=-1, descending=True).values
    cut = ordered.gather(1, (keep - 1)[:, None])
    logits.masked_fill_(logits.float() < cut, float("-inf"))
    return logits


def top_k_mask(logits, k=None, p=None):
    if p is not None:
        raise NotImplementedError("top-p")
    return _mask(logits, k, 0)


def top_k_mask_off_by_one(logits, k=None, p=None):
    if p is not None:
        raise NotImplementedError("top-p")
    return _mask(logits, k, 1)


def _top_k_only(case):
    return case.p is None


top_k_mask.samplecheck = {"accepts": _top_k_only, "extra_memory": lambda logits, args: 32 * logits.numel()}
top_k_mask_off_by_one.samplecheck = top_k_mask.samplecheck
'''


def _run(command, cwd, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900, **kwargs)


def _fresh_venv(root: Path) -> Path:
    """A venv whose own site-packages is empty but for pip; this environment's packages other
    than samplecheck are visible through links (a .pth line), as if installed beside it."""
    env = root / "venv"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root).stdout.strip())
    deps = root / "deps"
    deps.mkdir()
    ours = Path(sysconfig.get_paths()["purelib"])
    for entry in ours.iterdir():
        name = entry.name.lower()
        if not (name.startswith(("samplecheck", "__editable__", "_samplecheck")) or name.endswith(".pth")):
            (deps / entry.name).symlink_to(entry)
    (site / "dependencies.pth").write_text(f"{deps}\n")
    return python


def _wheel(project: Path, dist: Path) -> Path:
    """The project's wheel, built by this environment's setuptools (no network)."""
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist),
                  str(project)], dist.parent)
    assert built.returncode == 0, built.stderr[-3000:]
    name = project.name if project != CHECKOUT else "samplecheck"
    wheel, = dist.glob(f"{name.replace('-', '_')}-*.whl")
    return wheel


def test_wheel_in_fresh_venv_verifies_an_external_package(tmp_path):
    dist = tmp_path / "dist"
    wheel = _wheel(CHECKOUT, dist)

    python = _fresh_venv(tmp_path)
    site = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp_path).stdout.strip())
    before = {p.name for p in site.iterdir()}
    pip = [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--no-build-isolation"]
    installed = _run(pip + [str(wheel)], tmp_path)
    assert installed.returncode == 0, installed.stderr[-3000:]
    added = {p.name for p in site.iterdir()} - before
    assert {name for name in added if not name.endswith(".dist-info")} == {"samplecheck"}, added
    assert {name for name in added if name.endswith(".dist-info")} == {wheel.name.split("-py3")[0] + ".dist-info"}, added

    external = tmp_path / "acme_sampling"
    (external / "acme_sampling").mkdir(parents=True)
    (external / "pyproject.toml").write_text(EXTERNAL_PYPROJECT)
    (external / "acme_sampling" / "__init__.py").write_text(textwrap.dedent(EXTERNAL_MODULE))
    assert _run(pip + [str(_wheel(external, dist))], tmp_path).returncode == 0

    # The documented command, from the external package's own directory.
    command = [str(python.parent / "samplecheck"), "test", "--device=cpu", "--workers=0", "--backend-only",
               "-k", "test_oracle_equivalence or test_strided_bitwise", "-rfs", f"--junitxml={tmp_path / 'junit.xml'}"]
    first = _run(command, external)
    out = first.stdout
    assert first.returncode == 1, out[-4000:] + first.stderr[-2000:]
    assert "FAILED" in out and "acme_off_by_one" in out, out[-4000:]
    failed = {line.split()[1] for line in out.splitlines() if line.startswith("FAILED ")}
    assert failed and all("acme_off_by_one" in nodeid for nodeid in failed), failed
    assert "passed" in out.splitlines()[-1], out.splitlines()[-1]
    assert "broken entry point 'top_k_top_p.acme_missing' = 'acme_sampling_not_there:top_k_mask' " \
           "of package acme_sampling" in out, out[-4000:]

    # JUnit XML carries each failure's reproduce command.
    cases = ElementTree.parse(tmp_path / "junit.xml").getroot().iter("testcase")
    reproduce = {case.get("name"): prop.get("value") for case in cases if case.find("failure") is not None
                 for prop in case.iter("property") if prop.get("name") == "reproduce"}
    assert len(reproduce) == len(failed) and all("--backend-only" in cmd for cmd in reproduce.values()), reproduce

    # The first failure's reproduce command, run verbatim, fails the same test again.
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Reproduce with"))
    rerun_text = lines[at + 1].strip()
    assert "--backend-only" in rerun_text and "--device=cpu" in rerun_text, rerun_text
    rerun = _run(shlex.split(rerun_text), external)
    assert rerun.returncode == 1, rerun.stdout[-4000:]
    refailed = {line.split()[1].split("::", 1)[1] for line in rerun.stdout.splitlines() if line.startswith("FAILED ")}
    assert len(refailed) == 1 and refailed <= {nodeid.split("::", 1)[1] for nodeid in failed}, (refailed, failed)
