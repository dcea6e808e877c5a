"""Where the byte-code of what samplecheck's processes import is kept, and compiling it once.

A run starts dozens of Python processes (the suite's xdist workers, the kill table's, hunts,
the subprocess tests), each importing torch, FlashInfer, SciPy, Hypothesis and samplecheck.
Where the caller forbids writing byte-code (PYTHONDONTWRITEBYTECODE, set by some container
images) and names no byte-code folder (PYTHONPYCACHEPREFIX), every one of them would compile
every module it imports: seconds of CPU each, on cores the tests need. So:
- `redirect` (applied to every environment samplecheck starts a pytest process in,
  samplecheck.tools.suite.suite_environment) and `share` (the samplecheck command's own
  process) send the byte-code to samplecheck's own folder (`folder`), never beside the sources;
- `compile_sources` compiles, in parallel, before a run starts its processes, samplecheck's
  sources and those of the packages its suite imports (SUITE_IMPORTS), where those processes
  will read them: in that folder, or beside the sources where writing there is allowed.
Elsewhere nothing changes: Python's own caching applies.
"""

import importlib.util
import multiprocessing
import os
import py_compile
import struct
import sys
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

# Python's switches for where an import keeps the byte-code it compiles: nowhere, or in a folder
# tree of its own instead of beside the sources.
NO_BYTECODE, PYCACHE_PREFIX = "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX"
# samplecheck's packages, and the installed packages its suite's processes import.
OWN_PACKAGES = ("samplecheck", "samplecheck.kernels", "samplecheck.oracles", "samplecheck.tests")
SUITE_IMPORTS = ("torch", "triton", "numpy", "scipy", "hypothesis", "_pytest", "pluggy", "xdist", "execnet",
                 "flashinfer")
CHUNK = 64  # sources per task of the compiling processes


def folder(environment: dict[str, str]) -> Path | None:
    """samplecheck's byte-code folder: samplecheck/pycache in the user's cache folder
    ($XDG_CACHE_HOME when absolute, as the XDG spec requires, else ~/.cache); None where no home
    folder is known (no HOME, no passwd entry)."""
    cache = environment.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(cache):
        home = environment.get("HOME")
        if not home:
            try:
                home = str(Path.home())
            except RuntimeError:
                return None
        cache = os.path.join(home, ".cache")
    return Path(cache) / "samplecheck" / "pycache"


def redirect(environment: dict[str, str]) -> None:
    """Where `environment` forbids writing byte-code and names no folder for it (an empty value
    names none, as for Python), make it name samplecheck's folder instead (in place); where no
    folder is known, leave it as it is."""
    if not environment.get(NO_BYTECODE) or environment.get(PYCACHE_PREFIX):
        return
    into = folder(environment)
    if into is not None:
        del environment[NO_BYTECODE]
        environment[PYCACHE_PREFIX] = str(into)


def prefix(environment: dict[str, str]) -> str | None:
    """The byte-code folder of a process started in `environment` as samplecheck starts them
    (None: beside the sources)."""
    redirected = dict(environment)
    redirect(redirected)
    return redirected.get(PYCACHE_PREFIX) or None


def share() -> None:
    """This process keeps the byte-code of what it imports where the processes it starts will
    look for it (`redirect`); where writing byte-code is allowed, or it already names a folder,
    nothing changes."""
    redirected = prefix(dict(os.environ))
    if sys.dont_write_bytecode and sys.pycache_prefix is None and redirected is not None:
        sys.dont_write_bytecode, sys.pycache_prefix = False, redirected


def cached_path(source: Path, into: str | None) -> Path:
    """Where Python looks for the byte-code of `source` with the byte-code folder `into`."""
    saved, sys.pycache_prefix = sys.pycache_prefix, into
    try:
        return Path(importlib.util.cache_from_source(str(source)))
    finally:
        sys.pycache_prefix = saved


def current(source: Path, cached: Path) -> bool:
    """Whether `cached` holds the byte-code `_compile` writes for `source` as it is now
    (this Python's magic number; checked by the source's modification time and size)."""
    try:
        with cached.open("rb") as f:
            header = f.read(16)
        stat = source.stat()
    except OSError:
        return False
    expected = struct.pack("<4sIII", importlib.util.MAGIC_NUMBER, 0, int(stat.st_mtime) & 0xFFFFFFFF,
                           stat.st_size & 0xFFFFFFFF)
    return header == expected


def _compile(jobs: list[tuple[str, str]]) -> None:
    """Byte-code checked by timestamp (what `current` reads), whatever SOURCE_DATE_EPOCH says."""
    for source, cached in jobs:
        try:
            py_compile.compile(source, cfile=cached, doraise=True,
                               invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
        except (py_compile.PyCompileError, OSError):  # a source that does not compile, or a folder not writable
            pass


def writable(cached: Path) -> bool:
    """Whether `cached` can be written: its nearest existing folder is writable."""
    place = cached.parent
    while not place.exists() and place != place.parent:
        place = place.parent
    return os.access(place, os.W_OK)


def package_folders(names) -> list[Path]:
    """The folders of the packages `names` installed here (found without importing them)."""
    folders = []
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        folders += [Path(f) for f in (spec.submodule_search_locations or [])] if spec else []
    return folders


def compile_sources() -> None:
    """Byte-compile samplecheck's sources and those of SUITE_IMPORTS where the suite's processes
    will look for their byte-code (`prefix` of this process's environment), in parallel, those
    not compiled already and where it can be written; so no process compiles a module another
    one imports too. A speed-up only: a pool that cannot start compiles in this process."""
    into = prefix(dict(os.environ))
    jobs = [(str(source), str(cached)) for root in package_folders(OWN_PACKAGES + SUITE_IMPORTS)
            for source in root.rglob("*.py")
            if not current(source, cached := cached_path(source, into)) and writable(cached)]
    chunks = [jobs[i:i + CHUNK] for i in range(0, len(jobs), CHUNK)]
    if len(chunks) <= 1:
        _compile(jobs)
        return
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        # A fresh interpreter per worker (forkserver): the caller may hold threads, which fork would copy.
        with ProcessPoolExecutor(min(len(chunks), cores), mp_context=multiprocessing.get_context("forkserver")) as pool:
            list(pool.map(_compile, chunks))
    except (OSError, BrokenProcessPool):
        _compile(jobs)
