"""The `samplecheck` command: its flags become samplecheck's `--sc-` pytest options, the suite
runs under samplecheck's own pytest configuration, every subcommand names itself, and a bad
command or flag ends with a clear error naming it."""

import configparser
import os
import sys
from pathlib import Path

import pytest
import torch

from samplecheck.harness import suite_files
from samplecheck.tests.cover.fake_suite import passed
from samplecheck.tools import bytecode, cli, flags, suite

SUBCOMMANDS = sorted(cli.COMMANDS)


def _pytest_command(monkeypatch, argv: list[str]) -> list[str]:
    """The pytest command `samplecheck ARGV` (test or gate) runs."""
    ran = []
    monkeypatch.setattr(suite, "run_pytest",
                        lambda command, log=None, processes=1: ran.append(command) or passed(command))
    assert cli.main(argv) == 0
    (command,) = ran
    return command


def test_flags_become_sc_options_and_the_rest_goes_to_pytest(monkeypatch):
    command = _pytest_command(monkeypatch, [
        "test", "--device=cpu", "--profile", "dev", "--backend", "top_k_top_p=acme.mask:top_k", "-k", "oracle",
        "--backend=min_p=acme.mask:min_p", "--backend-only", "--allow-broken-plugins", "--mutant", "some_mutant",
        "--stat-alpha", "1e-3", "--workers", "0", "--dev", "--", "-x"])
    at = command.index("--sc-device=cpu")
    assert command[at:] == [
        "--sc-device=cpu", "--sc-profile=dev", "--sc-backend=top_k_top_p=acme.mask:top_k",
        "--sc-backend=min_p=acme.mask:min_p", "--sc-backend-only", "--sc-allow-broken-plugins",
        "--sc-mutant=some_mutant", "--sc-stat-alpha=0.001", "-k", "oracle", "--dev", "-x"], command


def test_defaults_run_every_core_under_the_devices_profile(monkeypatch):
    command = _pytest_command(monkeypatch, ["test", "--device", "cpu"])
    assert command[command.index("--sc-device=cpu"):] == ["--sc-device=cpu", "--sc-profile=ci", "-n", "auto",
                                                          "--dist", "worksteal"], command
    assert flags.SuiteFlags(device="cuda").pytest_options() == ["--sc-device=cuda", "--sc-profile=gate"]


def test_gate_runs_the_suite_under_the_gate_profile(monkeypatch, tmp_path):
    command = _pytest_command(monkeypatch, ["gate", "--device=cpu", "--no-killtable", "--out", str(tmp_path),
                                            "--backend-only", "--workers=1"])
    assert {"--sc-profile=gate", "--sc-backend-only", "-n", "1"} <= set(command), command


def test_the_suite_runs_under_samplecheck_configuration_alone(monkeypatch):
    """-c names the ini file shipped in the package; --rootdir and --confcutdir the folder
    holding the suite, so no ini file or conftest.py of the folders around it applies."""
    command = _pytest_command(monkeypatch, ["test", "--device=cpu"])
    root = str(suite_files.suite_root())
    assert command[3:12] == [str(suite_files.suite_path()), "-c", str(suite_files.CONFIG), "--rootdir", root,
                             "--confcutdir", root, "-p", "no:cacheprovider"], command
    assert suite_files.suite_path().is_relative_to(suite_files.suite_root()) and (suite_files.suite_root() / "tests").is_dir()
    ini = configparser.ConfigParser()
    assert ini.read(suite_files.CONFIG) == [str(suite_files.CONFIG)]
    assert ini.sections() == ["pytest"] and dict(ini["pytest"]) == {
        "addopts": "--strict-markers", "filterwarnings": "\nignore::RuntimeWarning:triton.runtime.interpreter"}


def test_help_lists_every_command():
    assert cli.main(["--help"]) == 0


def test_an_unknown_command_is_named_with_the_commands(capsys):
    assert cli.main(["bogus"]) == 2
    err = capsys.readouterr().err
    assert "unknown command 'bogus'" in err and all(name in err for name in cli.COMMANDS), err
    assert cli.main([]) == 2


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_every_subcommand_names_itself_in_its_usage(name, capsys):
    try:
        status = cli.main([name, "--help"])
    except SystemExit as done:  # argparse's --help
        status = done.code
    assert status == 0
    assert capsys.readouterr().out.startswith(f"usage: samplecheck {name}"), name


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
@pytest.mark.parametrize("name", ["test", "gate", "sweep", "nightly", "flakiness", "killtable", "mutate",
                                  "badinputs", "interactions", "behaviour"])
def test_device_cuda_without_cuda_is_one_line_naming_the_flag(name, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # mutate writes its output folder before it needs the device
    with pytest.raises(SystemExit) as done:
        cli.main([name, "--device=cuda"])
    err = capsys.readouterr().err
    assert done.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"samplecheck {name}: error: --device=cuda: no CUDA device here"), err


@pytest.mark.parametrize("argv, error", [
    (["--stat-alpha", "2"], "argument --stat-alpha: must be a number in (0, 1), got '2'"),
    (["--stat-alpha", "often"], "argument --stat-alpha: must be a number in (0, 1), got 'often'"),
    (["--backend", "top_k_top_p"], "argument --backend: expected KERNEL=package.module:callable, got 'top_k_top_p'"),
    (["--workers", "-1"], "argument --workers: must be auto or a count >= 0, got '-1'"),
    (["--profile", "fast"], "argument --profile: invalid choice: 'fast'"),
    (["--device", "tpu"], "argument --device: invalid choice: 'tpu'"),
])
def test_a_bad_flag_value_names_the_flag_and_its_range(argv, error, capsys):
    with pytest.raises(SystemExit) as done:
        cli.main(["test", *argv])
    assert done.value.code == 2 and error in capsys.readouterr().err


@pytest.fixture(params=[False, True], ids=["beside-the-sources", "byte-code-forbidden"])
def forbidden(request, monkeypatch, tmp_path) -> bool:
    """Whether the caller's environment forbids writing byte-code (PYTHONDONTWRITEBYTECODE), with
    no byte-code folder named and the user's cache folder in tmp_path."""
    monkeypatch.delenv(bytecode.PYCACHE_PREFIX, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    if request.param:
        monkeypatch.setenv(bytecode.NO_BYTECODE, "1")
    else:
        monkeypatch.delenv(bytecode.NO_BYTECODE, raising=False)
    return request.param


def test_the_suites_processes_read_byte_code_compiled_once(monkeypatch, tmp_path, forbidden):
    """`test` and `gate` compile samplecheck's sources before starting the suite's processes,
    where those will read it: beside the sources, or, where the caller forbids writing byte-code,
    in samplecheck's byte-code folder."""
    import samplecheck.harness.mps as compiled

    monkeypatch.setattr(bytecode, "SUITE_IMPORTS", ())  # samplecheck's own sources only, here
    cached = bytecode.cached_path(Path(compiled.__file__), suite.suite_environment().get(bytecode.PYCACHE_PREFIX))
    assert cached.is_relative_to(tmp_path) == forbidden
    cached.unlink(missing_ok=True)
    _pytest_command(monkeypatch, ["test", "--device=cpu"])
    assert cached.is_file(), f"no byte-code at {cached} after `samplecheck test`"


def test_the_command_shares_its_byte_code_with_the_suite_s_processes(monkeypatch, forbidden):
    """The `samplecheck` command's own imports (torch first, before the suite starts) keep their
    byte-code where the suite's processes read it; a process kept from writing byte-code by
    other means than the environment (`python -B`) stays as it is."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.setattr(sys, "argv", ["samplecheck", "--help"])
    assert cli.console() == 0
    expected = (False, str(bytecode.folder(os.environ))) if forbidden else (True, None)
    assert (sys.dont_write_bytecode, sys.pycache_prefix) == expected
