"""The mutant kill table: every mutant against the fast suite, which property killed it, and when.

    samplecheck killtable [--device auto|cpu|cuda] [--profile gate] [--workers N] [--report FILE.md]
                          [MUTANT ...]

Each mutant (samplecheck.kernels.mutants) runs `pytest tests/cover --sc-mutant=NAME -k mutant -x`
(its own tests: the property known to kill it (`Mutant.killed_by`) first, then the exact
properties, then the rest) in its own process (so its patched kernel module never
meets the real one), under the given device and Hypothesis profile; the first failing test of
the mutant is the killer and the wall time of that process (start-up included) the time to
kill. Mutants whose patch only changes behaviour on another
device are listed as not run. Exits 1 if any mutant that ran survived.
"""

import argparse
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from samplecheck.harness import catalog
from samplecheck.kernels.mutants import MUTANTS
from samplecheck.tools import flags
from samplecheck.tools.suite import config_args, suite_path

# After a mutant's known killer: exact checks first, the sampling test last (-x stops at the
# first kill, so a mutant that an exact property catches never waits for the statistical
# one), then the large-offset test (GPU only, skipped on CPU). Each of these properties
# lives in the module named after it.
FIRST = tuple(f"{name}.py" for name in (catalog.ORACLE_EQUIVALENCE, catalog.EXACT_DISTRIBUTION, catalog.STRIDED_BITWISE,
                                        catalog.ROW_ISOLATION, catalog.ERROR_INPUTS, catalog.EMPTY_BATCH,
                                        catalog.LARGE_OFFSETS))


@dataclass(frozen=True)
class Hunt:
    """One mutant's run: killed when pytest failed a test (`killer`: that test's node id), when
    the run died of a signal (`killer`: "crash (signal N)", e.g. a segfault of the
    interpreter) or when it outran the timeout (`killer`: "timeout (N s)", a hang).
    `returncode` is pytest's exit status (None: not run or timed out)."""

    name: str
    ran: bool
    killed: bool
    killer: str | None
    seconds: float
    output: str
    returncode: int | None = None


def hunt(name: str, device: str, profile: str, timeout: float = 1800, tests: list[str] | None = None) -> Hunt:
    """Run the fast suite's tests of the mutant (or those among the test files or node ids
    `tests`: `-k mutant` keeps the tests parametrized with it) against mutant `name` alone,
    stopping at the first failure. Only a failed test of the mutant kills it: any other
    failure makes the hunt an error, never a kill."""
    if device not in MUTANTS[name].devices:
        return Hunt(name, False, False, None, 0.0, f"changes behaviour only on {', '.join(MUTANTS[name].devices)}")
    cover = suite_path()
    known = f"{MUTANTS[name].killed_by}.py"
    rest = sorted(f.name for f in cover.glob("test_*.py") if f.name not in FIRST + (known,))
    selection = tests or [str(cover / f) for f in (known, *(f for f in FIRST if f != known), *rest)]
    command = [sys.executable, "-m", "pytest", *selection, *config_args(), f"--sc-mutant={name}",
               f"--sc-device={device}", f"--sc-profile={profile}", "-k", "mutant", "-x", "-q", "-p", "no:cacheprovider",
               "-p", "no:xdist"]
    start = time.monotonic()
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as err:
        output = err.stdout.decode(errors="replace") if isinstance(err.stdout, bytes) else (err.stdout or "")
        return Hunt(name, True, True, f"timeout ({timeout:.0f} s)", time.monotonic() - start, output[-3000:])
    seconds = time.monotonic() - start
    failed = [line.split()[1] for line in result.stdout.splitlines() if line.startswith("FAILED ")]
    killer = next((test for test in failed if f"mutant-{name}" in test), None) if result.returncode == 1 else None
    if result.returncode < 0:
        killer = f"crash (signal {-result.returncode})"
    return Hunt(name, True, killer is not None, killer, seconds,
                result.stdout[-3000:] + result.stderr[-2000:], result.returncode)


def table(hunts: list[Hunt]) -> str:

    lines = ["| mutant | kernel | killed | killed by | time to kill | bug reproduced (reference) |",
             "|---|---|---|---|---|---|"]
    for h in hunts:
        m = MUTANTS[h.name]
        verdict = "yes" if h.killed else ("SURVIVED" if h.ran else "not run")
        killer = h.killer.split("::", 1)[-1] if h.killer else ("-" if h.ran else h.output)
        lines.append(f"| {h.name} | {m.kernel} | {verdict} | {killer} | {h.seconds:.0f} s | "
                     f"{m.description} ({m.ref}) |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = flags.parser("killtable", __doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    flags.add_suite_flags(parser, backends=False, mutant=False, stat_alpha=False)
    parser.add_argument("--workers", type=int, default=2, help="mutants hunted at once (>= 1)")
    parser.add_argument("--report", type=Path, default=None, help="also write the table to this Markdown file")
    parser.add_argument("mutants", nargs="*", help="names (default: all)")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(f"--workers must be >= 1, got {args.workers}")
    unknown = sorted(set(args.mutants) - set(MUTANTS))
    if unknown:
        parser.error(f"MUTANT must be among {', '.join(sorted(MUTANTS))}; got {', '.join(unknown)}")
    chosen = flags.suite_flags(parser, args)
    device, profile = chosen.device, chosen.resolved_profile
    names = args.mutants or sorted(MUTANTS)
    start = time.monotonic()
    with ThreadPoolExecutor(args.workers) as pool:
        hunts = list(pool.map(lambda n: hunt(n, device, profile), names))
    killed = sum(h.killed for h in hunts)
    ran = sum(h.ran for h in hunts)
    text = (f"Mutant kill table on {device} (profile {profile}): {killed} of {ran} run killed, "
            f"{len(hunts) - ran} not run on this device; {time.monotonic() - start:.0f} s wall, "
            f"{args.workers} at once\n\n{table(hunts)}\n")
    print(text)
    if args.report:
        args.report.write_text(text)
    return 0 if killed == ran else 1


if __name__ == "__main__":
    sys.exit(main())
