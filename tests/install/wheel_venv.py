"""A samplecheck wheel, built from this checkout, in a fresh venv: what a new user gets from
`pip install samplecheck`. The venv gets samplecheck's dependencies (torch, triton, hypothesis,
pytest, ...) from this environment through a folder of links that leaves out this
environment's own samplecheck, so wheels are installed exactly as `pip install` does, with no
network and no second torch."""

import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]


def run(command, cwd) -> subprocess.CompletedProcess:
    """`command` in `cwd`, its output captured as text."""
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900)


def fresh_venv(env: Path) -> Path:
    """A venv whose own site-packages is empty but for pip; this environment's packages other
    than samplecheck are visible through links (a .pth line), as if installed beside it."""
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    deps = env / "deps"
    deps.mkdir()
    ours = Path(sysconfig.get_paths()["purelib"])
    for entry in ours.iterdir():
        name = entry.name.lower()
        if not (name.startswith(("samplecheck", "__editable__", "_samplecheck")) or name.endswith(".pth")):
            (deps / entry.name).symlink_to(entry)
    (site_packages(python) / "dependencies.pth").write_text(f"{deps}\n")
    return python


def site_packages(python: Path) -> Path:
    """The site-packages folder of the venv of `python`."""
    return Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                    python.parent).stdout.strip())


def wheel_of(project: Path, dist: Path, name: str) -> Path:
    """The wheel of distribution `name` from the project folder, built by this environment's
    setuptools (no network), which leaves build/ and *.egg-info in that folder."""
    built = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist),
                 str(project)], dist.parent)
    assert built.returncode == 0, built.stderr[-3000:]
    wheel, = dist.glob(f"{name.replace('-', '_')}-*.whl")
    return wheel


def copy_sources(folder: Path, root: Path) -> Path:
    """`folder` copied into `root` to build from, without hidden folders (.venv, .git) and build
    leftovers: a build never writes into the checkout, nor packs a stale build/lib file."""
    return shutil.copytree(folder, root / folder.name, ignore=shutil.ignore_patterns(
        ".*", "__pycache__", "*.egg-info", "build"))


def install_samplecheck(python: Path, root: Path) -> Path:
    """samplecheck's wheel (built under `root`) installed into the venv of `python`; the wheel."""
    wheel = wheel_of(copy_sources(CHECKOUT, root / "sources"), root / "dist", "samplecheck")
    installed = run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--no-build-isolation",
                     str(wheel)], root)
    assert installed.returncode == 0, installed.stderr[-3000:]
    return wheel
