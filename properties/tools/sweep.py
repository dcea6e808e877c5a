"""The verification sweep: every generic property over the whole registry, as one table.

    samplecheck sweep [--device auto|cpu|cuda] [--profile ci|gate|nightly|dev] [--backend KERNEL=MOD:FN ...]
                      [--backend-only] [--allow-broken-plugins] [--mutant NAME] [--stat-alpha A]
                      [--workers N] [--report FILE.md] [[--] PYTEST ARGS ...]

Runs tests/cover through pytest (so the sweep and the test suite share one code path and
samplecheck's pytest configuration) and prints kernel x backend x dtype x layout with each
property's outcome, the number of examples run, and the time taken. Exits with pytest's status.
"""

import argparse
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from samplecheck.harness import catalog
from samplecheck.harness.registry import declarations
from samplecheck.tools import flags
from samplecheck.tools.suite import config_args, suite_path

COLUMNS = tuple(name.removeprefix("test_") for name in (
    catalog.ORACLE_EQUIVALENCE, catalog.STRIDED_BITWISE, catalog.ROW_ISOLATION, catalog.DETERMINISTIC, catalog.OFF_ENCODINGS,
    catalog.EXACT_DISTRIBUTION, catalog.DISTRIBUTION, catalog.MEMORY_BOUND))
SYMBOL = {"passed": "pass", "failed": "FAIL", "skipped": "skip", "xfailed": "xfail", "xpassed": "XPASS"}


class SweepReport:
    """Collects pytest reports into rows keyed by the combo id in the test's brackets."""

    def __init__(self):
        self.cells = defaultdict(dict)  # combo id -> property -> outcome
        self.examples = defaultdict(int)
        self.seconds = defaultdict(float)
        self.other = defaultdict(int)
        self.failures = []

    def pytest_runtest_logreport(self, report):
        if report.when != "call" and not (report.when == "setup" and report.outcome != "passed"):
            return
        outcome = "xfailed" if hasattr(report, "wasxfail") and report.skipped else report.outcome
        if hasattr(report, "wasxfail") and report.passed:
            outcome = "xpassed"
        match = re.search(r"::test_(\w+)\[(.+)\]$", report.nodeid)
        if match and match.group(1) in COLUMNS:
            prop, combo = match.groups()
            self.cells[combo][prop] = outcome
            self.examples[combo] += dict(report.user_properties).get("examples", 0)
            self.seconds[combo] += report.duration
        else:
            self.other[outcome] += 1
        if outcome in ("failed", "xpassed"):
            self.failures.append(report.nodeid)

    def table(self) -> str:
        header = ("kernel", "backend", "dtype", "layout") + COLUMNS + ("examples", "time")
        rows = []
        for combo in sorted(self.cells):
            kernel, backend, dtype, layout = combo.rsplit("-", 3) if combo.count("-") == 3 else _split(combo)
            outcomes = tuple(SYMBOL.get(self.cells[combo].get(c), "-") for c in COLUMNS)
            rows.append((kernel, backend, dtype, layout) + outcomes
                        + (str(self.examples[combo]), f"{self.seconds[combo]:.1f}s"))
        widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
        lines = ["| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |",
                 "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
        lines += ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in rows]
        other = ", ".join(f"{n} {SYMBOL.get(k, k)}" for k, n in sorted(self.other.items()))
        lines.append(f"\nOther tests (error inputs, plug-ins, statistics, rounding): {other or 'none'}")
        if self.failures:
            lines.append("Failures (rerun one with the command printed in its 'reproduce' section):")
            lines += [f"  {f}" for f in self.failures]
        return "\n".join(lines)


def _split(combo: str):
    """kernel-backend-dtype-layout where the layout itself may contain '-' (never does today)."""
    kernel, backend, dtype, layout = combo.split("-", 3)
    return kernel, backend, dtype, layout


def main(argv=None) -> int:
    parser = flags.parser("sweep", __doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                          epilog="Arguments not listed here go to pytest.")
    flags.add_suite_flags(parser)
    flags.add_workers(parser)
    parser.add_argument("--report", type=Path, default=None, help="also write the table to this Markdown file")
    args, rest = parser.parse_known_args(argv)
    chosen = flags.suite_flags(parser, args)
    device, profile = chosen.device, chosen.resolved_profile
    report = SweepReport()
    command = [str(suite_path()), *config_args(), *chosen.pytest_options(), "-q", "-p", "no:cacheprovider"]
    if args.workers != "0":
        command += ["-n", args.workers]
    started = time.monotonic()
    status = pytest.main(command + flags.pytest_args(rest), plugins=[report])
    title = (f"Sweep on {device} (profile {profile}), {time.monotonic() - started:.0f} s wall, "
             f"pytest exit status {int(status)}")
    declared = "\n".join(declarations())  # the backends tested and what each declared
    text = f"{title}\n\n```\n{declared}\n```\n\n{report.table()}\n"
    print("\n" + text)
    if args.report:
        args.report.write_text(text)
    return int(status)


if __name__ == "__main__":
    sys.exit(main())
