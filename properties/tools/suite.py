"""samplecheck's property suite as a command: where its tests are installed, and the pytest
run of `samplecheck test` and `samplecheck gate`.

The suite is the package `samplecheck.tests` (tests/ in a checkout), so the same files run
from a checkout and from an installed wheel; the plugin (entry point `pytest11`) provides
everything they need. Without `--hypothesis-profile`, the profile is `gate` on a GPU and `ci`
(interpreter-sized, derandomized) on CPU.
"""

import subprocess
import sys
from pathlib import Path


def suite_path(folder: str = "cover") -> Path:
    """The folder of the installed property tests (`cover`: the fast suite)."""
    import samplecheck.tests

    return Path(samplecheck.tests.__path__[0]) / folder


def default_profile(device: str) -> str:
    return "gate" if device == "cuda" else "ci"


def pytest_command(device: str, pytest_args: list[str], *, profile: str | None = None,
                   workers: str = "auto", folder: str = "cover") -> list[str]:
    """`python -m pytest` over the installed suite with samplecheck's defaults; `pytest_args`
    come last, so they override the device, the profile and the selection. Workers steal
    queued tests from each other (`--dist worksteal`): one long test (a large kernel's first
    compile) holds its own worker only, not the tests queued behind it."""
    command = [sys.executable, "-m", "pytest", str(suite_path(folder)), "-p", "no:cacheprovider",
               f"--sc-device={device}"]
    if not any(a.startswith("--sc-profile") for a in pytest_args):
        command.append(f"--sc-profile={profile or default_profile(device)}")
    if workers != "0":
        command += ["-n", workers, "--dist", "worksteal"]
    return command + pytest_args


def run_pytest(command: list[str], log: Path | None = None) -> int:
    """Run `command`, echoing its output (and writing it to `log` when given); its exit status."""
    if log is None:
        return subprocess.run(command).returncode
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for line in process.stdout:
            out.write(line)
            sys.stdout.write(line)
        return process.wait()
