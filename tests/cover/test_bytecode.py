"""Byte-code compiled once for all of a run's processes (samplecheck.tools.bytecode): where the
caller forbids writing it, the processes samplecheck starts keep it in samplecheck's folder
(never beside the sources), and `compile_sources` compiles, in parallel, what is not current
there, a source that does not compile left to the import that reports it."""

import os
import subprocess
import sys

import pytest

from samplecheck.tools import bytecode, suite

SOURCES = 150  # more than one CHUNK: compiled by a pool of processes


def test_byte_code_forbidden_by_the_caller_goes_to_samplecheck_s_folder(tmp_path):
    caller = {"PATH": os.environ.get("PATH", ""), bytecode.NO_BYTECODE: "1", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    environment = suite.suite_environment(caller)
    folder = tmp_path / "cache" / "samplecheck" / "pycache"
    assert environment[bytecode.PYCACHE_PREFIX] == str(folder) and bytecode.NO_BYTECODE not in environment
    own = {**caller, bytecode.PYCACHE_PREFIX: "/mine"}
    assert suite.suite_environment(own) == {**own, suite.COMPILE_ONCE[0]: suite.COMPILE_ONCE[1]}, "the caller's folder"
    assert bytecode.PYCACHE_PREFIX not in suite.suite_environment({"PATH": "/bin"}), "allowed: Python's default"
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "imported_module.py").write_text("VALUE = 1\n")
    environment["PYTHONPATH"] = str(tmp_path / "src")
    subprocess.run([sys.executable, "-c", "import imported_module"], env=environment, check=True)
    assert list(folder.rglob("imported_module.*.pyc")), "the process kept its byte-code in the folder"
    assert not (tmp_path / "src" / "__pycache__").exists(), "nothing written beside the sources"


@pytest.fixture
def package(tmp_path, monkeypatch):
    """An importable package of SOURCES modules and one that does not compile, as the only
    package `compile_sources` compiles; byte-code forbidden, samplecheck's folder in tmp_path."""
    root = tmp_path / "src" / "many_modules"
    root.mkdir(parents=True)
    for i in range(SOURCES):
        (root / f"m{i}.py").write_text(f"VALUE = {i}\n")
    (root / "broken.py").write_text("def (:\n")
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    monkeypatch.setattr(bytecode, "OWN_PACKAGES", ("many_modules",))
    monkeypatch.setattr(bytecode, "SUITE_IMPORTS", ("no_such_package_here",))
    monkeypatch.setenv(bytecode.NO_BYTECODE, "1")
    monkeypatch.delenv(bytecode.PYCACHE_PREFIX, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return root


def test_compile_sources_compiles_what_is_not_current_into_the_folder(package, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1")  # py_compile's default would then check by hash, not by time
    bytecode.compile_sources()
    into = bytecode.prefix(dict(os.environ))
    assert into == str(tmp_path / "cache" / "samplecheck" / "pycache")
    sources = sorted(package.glob("m*.py"))
    assert all(bytecode.current(s, bytecode.cached_path(s, into)) for s in sources), "every source compiled"
    assert not bytecode.cached_path(package / "broken.py", into).exists(), "left to the import that reports it"
    assert not (package / "__pycache__").exists(), "nothing written beside the sources"
    compiled = {s: bytecode.cached_path(s, into).stat().st_mtime_ns for s in sources}
    bytecode.compile_sources()
    assert {s: bytecode.cached_path(s, into).stat().st_mtime_ns for s in sources} == compiled, "current: left alone"
    (package / "m0.py").write_text("VALUE = 'changed'\n")
    os.utime(package / "m0.py", ns=(1, 1))
    assert not bytecode.current(package / "m0.py", bytecode.cached_path(package / "m0.py", into))
    bytecode.compile_sources()
    assert bytecode.current(package / "m0.py", bytecode.cached_path(package / "m0.py", into)), "a changed source again"


@pytest.mark.parametrize("caller, expected", [
    ({bytecode.NO_BYTECODE: "1", bytecode.PYCACHE_PREFIX: "", "HOME": "/h"}, "/h/.cache/samplecheck/pycache"),
    ({bytecode.NO_BYTECODE: "1", "XDG_CACHE_HOME": "relative", "HOME": "/h"}, "/h/.cache/samplecheck/pycache"),
    ({bytecode.NO_BYTECODE: "", "HOME": "/h"}, None),
], ids=["an-empty-folder-names-none", "a-relative-cache-folder-is-ignored", "an-empty-switch-forbids-nothing"])
def test_the_environment_is_read_as_python_and_the_xdg_spec_read_it(caller, expected):
    assert bytecode.prefix(caller) == expected


def test_without_a_known_home_folder_nothing_is_redirected(monkeypatch):
    def no_home():
        raise RuntimeError("Could not determine home directory.")
    monkeypatch.setattr(bytecode.Path, "home", no_home)
    caller = {bytecode.NO_BYTECODE: "1"}
    assert bytecode.prefix(caller) is None
    assert suite.suite_environment(caller)[bytecode.NO_BYTECODE] == "1", "the caller's environment as it was"


def test_compile_sources_compiles_in_this_process_when_no_pool_starts(package, monkeypatch):
    class NoPool:
        def __init__(self, *args, **kwargs):
            raise OSError("no /dev/shm here")
    monkeypatch.setattr(bytecode, "ProcessPoolExecutor", NoPool)
    bytecode.compile_sources()
    into = bytecode.prefix(dict(os.environ))
    assert all(bytecode.current(s, bytecode.cached_path(s, into)) for s in package.glob("m*.py"))
