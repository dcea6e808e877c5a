"""samplecheck is a guest: installed beside another project's tests, it changes nothing there.

A small project that knows nothing of samplecheck (files below) runs twice in an environment
where samplecheck is installed: as is, and with samplecheck's entry point turned off
(`-p no:samplecheck`). Its tests would notice each way samplecheck could leak into them: its
own `--device` and `--backend` options, fixtures named `combo` and `error_case`, its own `slow`
and `gpu` markers, an undeclared marker under `--strict-markers`, Hypothesis' default settings
and a deadline that must fail, a derandomized test's draws, `TRITON_INTERPRET`, torch or
triton imported. Each run records what its tests saw; the outcomes, the records and the
output must be the same, no line may mention samplecheck, no JUnit property is added and no
temporary folder is left behind. samplecheck is the wheel built from this checkout, in a fresh
venv (samplecheck.tests.install.wheel_venv); that `samplecheck test` run inside a project
ignores the project's configuration is tests/install/test_fresh_install.py's.
"""

import os
import re
import subprocess
import textwrap
from pathlib import Path
from xml.etree import ElementTree

import pytest

from samplecheck.tests.install.wheel_venv import CHECKOUT, fresh_venv, install_samplecheck

pytestmark = [pytest.mark.interpreter,
              pytest.mark.skipif(not (CHECKOUT / "pyproject.toml").is_file(),
                                 reason="builds the wheel from a samplecheck checkout; this is an installed copy")]

GUEST_FILES = {
    "pytest.ini": """
        [pytest]
        addopts = --strict-markers
        markers =
            slow: the guest's own slow tests (it runs them)
            gpu: the guest's own GPU tests (it runs them)
    """,
    "conftest.py": """
        import os
        import sys

        import pytest

        RECORD = open(os.environ["GUEST_RECORD"], "a")
        RECORD.write(f"conftest TRITON_INTERPRET={os.environ.get('TRITON_INTERPRET')}\\n")
        RECORD.write(f"conftest heavy={sorted(m for m in ('torch', 'triton') if m in sys.modules)}\\n")


        def pytest_addoption(parser):
            for name in ("--device", "--backend", "--backend-only", "--mutant", "--stat-alpha", "--test-timeout"):
                parser.addoption(name, default=f"guest{name}")


        @pytest.fixture
        def combo():
            return "the guest's combo"


        @pytest.fixture
        def error_case():
            return "the guest's error case"
    """,
    "test_guest.py": """
        import os
        import sys
        import threading
        import time

        import pytest
        from hypothesis import given, settings, strategies as st

        from conftest import RECORD


        def test_own_options(request):
            assert request.config.getoption("--device") == "guest--device"
            assert request.config.getoption("--backend") == "guest--backend"


        def test_own_fixtures(combo, error_case):
            assert (combo, error_case) == ("the guest's combo", "the guest's error case")


        @pytest.mark.slow
        def test_slow_runs():
            pass


        @pytest.mark.gpu
        def test_gpu_runs():
            pass


        def test_nothing_heavy_imported():
            RECORD.write(f"test heavy={sorted(m for m in ('torch', 'triton', 'scipy') if m in sys.modules)}\\n")
            RECORD.write(f"test TRITON_INTERPRET={os.environ.get('TRITON_INTERPRET')}\\n")
            RECORD.write(f"test threads={sorted(t.name for t in threading.enumerate())}\\n")


        @given(st.integers())
        def test_default_settings(x):
            RECORD.write(f"settings {settings.default!r} profile {settings.get_current_profile_name()}\\n")


        @given(st.integers(0, 10))
        def test_deadline_is_kept(x):
            time.sleep(0.4)  # over Hypothesis' default 200 ms deadline (with its 25% grace): must fail


        @settings(derandomize=True, max_examples=20, database=None)
        @given(st.floats(-4, 4), st.integers(-3, 3000))
        def test_derandomized_draws(x, n):
            RECORD.write(f"draw {x!r} {n}\\n")


        def test_fails():
            assert False, "the guest's own failure"
    """,
    "test_strict.py": """
        import pytest


        @pytest.mark.interpreter
        def test_undeclared_marker():
            pass
    """,
}
SUMMARY = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")
TIMES = re.compile(r" in [0-9.]+s")


def _write_guest(folder: Path) -> None:
    for name, text in GUEST_FILES.items():
        (folder / name).write_text(textwrap.dedent(text).lstrip())


def _junit_shape(path: Path) -> list[tuple]:
    """Each JUnit test case's name, outcome elements and property names (not their texts,
    which hold timings)."""
    return [(case.get("classname"), case.get("name"), tuple(child.tag for child in case if child.tag != "properties"),
             tuple(prop.get("name") for prop in case.iter("property")))
            for case in ElementTree.parse(path).iter("testcase")]


@pytest.fixture(scope="module")
def python(tmp_path_factory) -> Path:
    """The Python of a fresh venv holding samplecheck's wheel."""
    root = tmp_path_factory.mktemp("wheel")
    python = fresh_venv(root / "venv")
    install_samplecheck(python, root)
    return python


def _run_guest(python: Path, folder: Path, tag: str, *options: str, env: dict) -> tuple[str, list[str], list[tuple], list[str]]:
    """(terminal output, summary lines, JUnit XML, what the tests recorded) of one run."""
    record, junit, tmp = folder / f"record-{tag}.txt", folder / f"junit-{tag}.xml", folder / f"tmp-{tag}"
    tmp.mkdir()
    result = subprocess.run(
        [str(python), "-m", "pytest", "-rA", "-p", "no:cacheprovider", "--continue-on-collection-errors",
         f"--junitxml={junit}", *options],
        cwd=folder, capture_output=True, text=True, timeout=300,
        env={**env, "GUEST_RECORD": str(record), "TMPDIR": str(tmp)})
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-2000:]  # the guest's own failures
    output = result.stdout + result.stderr
    summary = sorted(TIMES.sub("", line) for line in output.splitlines() if SUMMARY.match(line))
    xml = _junit_shape(junit)
    leftovers = [p.name for p in tmp.iterdir() if not p.name.startswith("pytest-of-")]
    return output, summary, xml, record.read_text().splitlines() + [f"left in TMPDIR: {leftovers}"]


# Variables by which Hypothesis knows it runs on CI (and loads its own "ci" profile).
CI_VARIABLES = ("CI", "TF_BUILD", "BUILDKITE", "CIRCLECI", "CIRRUS_CI", "CODEBUILD_BUILD_ID", "GITHUB_ACTIONS",
                "GITLAB_CI", "HEROKU_TEST_RUN_ID", "TEAMCITY_VERSION", "bamboo.buildKey")


def _environment(**extra) -> dict:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("SAMPLECHECK_", "PYTEST_", "TRITON_")) and k not in CI_VARIABLES}
    return {**clean, **extra}


@pytest.mark.parametrize("ci", [{}, {"CI": "true"}], ids=["local", "ci"])
def test_guest_project_runs_as_without_samplecheck(python, tmp_path, ci):
    _write_guest(tmp_path)
    env = _environment(TRITON_INTERPRET="0", **ci)
    host, host_summary, host_xml, host_record = _run_guest(python, tmp_path, "with", "--sc-test-timeout=0.1", env=env)
    alone, alone_summary, alone_xml, alone_record = _run_guest(python, tmp_path, "without", "-p", "no:samplecheck", env=env)
    assert host_summary == alone_summary
    assert host_record == alone_record
    assert host_xml == alone_xml
    assert any(line.startswith("plugins:") and "samplecheck" in line for line in host.splitlines())  # loaded
    mentions = [line for line in host.splitlines() if "samplecheck" in line.lower() and not line.startswith("plugins:")]
    assert not mentions, mentions  # pytest itself lists installed plugins by name
    assert ("DeadlineExceeded" in host) == (not ci)  # Hypothesis' own ci profile has no deadline
    assert "TRITON_INTERPRET=0" in "\n".join(host_record)
    assert "heavy=[]" in "\n".join(host_record), host_record
