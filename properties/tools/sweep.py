"""The verification sweep of the kernels: the properties that judge backends, over every cell
(kernel x backend x dtype x layout) that can run on this device, as one table.

    samplecheck sweep [--device auto|cpu|cuda] [--profile ci|gate|nightly|dev] [--backend KERNEL=MOD:FN ...]
                      [--backend-only] [--allow-broken-plugins] [--packs all|none|NAME,...] [--mutant NAME]
                      [--stat-alpha A] [--workers N] [--log FILE] [--report FILE.md] [[--] PYTEST ARGS ...]

Runs samplecheck's suite through pytest under its own configuration, keeping the tests that
judge backends (the selection --backend-only applies; samplecheck.tools.sweep_selection) whose
backends run on this device. pytest's output goes to the log (--log; its path is printed);
the screen shows one progress line, then the report (samplecheck.tools.sweep_report): each
cell's outcome per property, examples run and time. Exits with pytest's status.
"""

import argparse
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from samplecheck.harness.suite_files import config_args, suite_path
from samplecheck.registry.matrix import REGISTRY, declarations
from samplecheck.tools import flags
from samplecheck.tools.sweep_report import SweepReport, elsewhere

SELECTION = "samplecheck.tools.sweep_selection"
# pytest statuses that leave the table empty (interrupted, internal error, usage error, nothing
# collected): the screen also gets the log's last lines, which say why.
NO_TABLE = (2, 3, 4, 5)
LOG_TAIL = 25


def default_log() -> Path:
    return Path(tempfile.gettempdir()) / f"samplecheck-sweep-{time.strftime('%Y%m%d-%H%M%S')}.log"


@contextmanager
def output_to(log: Path):
    """Inside, file descriptors 1 and 2 of this process and the processes it starts (pytest-xdist's
    workers) write to `log`; yields a line-buffered stream to the screen they wrote to before."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    screen = os.fdopen(os.dup(saved[0]), "w", buffering=1)
    with log.open("w") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
        try:
            yield screen
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, kept in zip((1, 2), saved):
                os.dup2(kept, fd)
                os.close(kept)
            screen.close()


class Progress:
    """One progress line: rewritten in place on a terminal, else printed at each tenth done."""

    def __init__(self, screen, started: float):
        self.screen, self.started = screen, started
        self.tty = screen.isatty()
        self.shown = -1

    def __call__(self, done: int, total: int, failed: int) -> None:
        tenth = 10 * done // total if total else 0
        if not self.tty and tenth == self.shown:
            return
        self.shown = tenth
        line = (f"sweep: {done}/{total or '?'} tests, {failed} failed, "
                f"{time.monotonic() - self.started:.0f} s")
        self.screen.write(f"\r{line}\x1b[K" if self.tty else line + "\n")

    def end(self) -> None:
        if self.tty and self.shown >= 0:
            self.screen.write("\n")


def main(argv=None) -> int:
    parser = flags.parser("sweep", __doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                          epilog="Arguments not listed here go to pytest.")
    flags.add_suite_flags(parser)
    flags.add_workers(parser)
    parser.add_argument("--log", type=Path, default=None,
                        help="where pytest's output goes (default: samplecheck-sweep-DATE-TIME.log in the temp folder)")
    parser.add_argument("--report", type=Path, default=None, help="also write the report to this Markdown file")
    args, rest = parser.parse_known_args(argv)
    chosen = flags.suite_flags(parser, args)
    device, profile = chosen.device, chosen.resolved_profile
    log = (args.log or default_log()).resolve()
    command = [str(suite_path()), *config_args(), *chosen.pytest_options(), "-p", SELECTION, "-p", "no:cacheprovider",
               "-ra", "--durations=20"]
    if args.workers != "0":
        command += ["-n", args.workers, "--dist", "worksteal"]
    print(f"sweep on {device}, profile {profile}: pytest's output goes to {log}", flush=True)
    started = time.monotonic()
    with output_to(log) as screen:
        progress = Progress(screen, started)
        report = SweepReport(device, progress)
        status = int(pytest.main(command + flags.pytest_args(rest), plugins=[report]))
        progress.end()
    if status in NO_TABLE:
        print(f"pytest exit status {status}; the log's last lines ({log}):")
        print("".join(log.read_text(errors="replace").splitlines(keepends=True)[-LOG_TAIL:]))
    tests = f"{report.done} test{'s' if report.done != 1 else ''}"
    title = [f"Sweep on {device} (profile {profile}): {tests} in {time.monotonic() - started:.0f} s, pytest exit "
             f"status {status}", f"pytest's output (failures, skip reasons, slowest tests): {log}"]
    text = report.text(title, declarations(), elsewhere(REGISTRY.values(), device))
    print("\n" + text, end="")
    if args.report:
        args.report.write_text(text)
    return status


if __name__ == "__main__":
    sys.exit(main())
