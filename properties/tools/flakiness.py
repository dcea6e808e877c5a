"""`samplecheck flakiness`: the measured false-alarm rate of the statistical tests.

Reruns the sampling tests (tests/cover/test_distribution.py and test_exact_distribution.py)
N times under the `dev` profile (random examples) with Hypothesis seeds K = first .. first +
N - 1 (`--hypothesis-seed=K`), each rerun in a fresh temporary working directory so that no
example database carries a failure from one rerun into the next, and prints one markdown
row per rerun: tests run, passed, failed, errors, skipped, wall time and the failing test
ids, then the totals. `--backend`, `--backend-only`, `--allow-broken-plugins` and `--stat-alpha`
act as in `samplecheck test`; extra arguments go to pytest (e.g. `-k top_k`).
`--concurrent J` runs J reruns at once (each with its own `--workers`), which fills a GPU that
one rerun's start-up and compile leave idle; every rerun stays its own pytest process.

On the H200: `samplecheck flakiness --device cuda --runs 30`. On CPU, a tiny check:
`samplecheck flakiness --device cpu --runs 2 -k "gumbel and fp32-contig"`.
"""

import concurrent.futures
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field, replace
from pathlib import Path

from samplecheck.tools import flags
from samplecheck.tools.flags import SuiteFlags

TEST_FILES = ("test_distribution.py", "test_exact_distribution.py")


@dataclass
class Rerun:
    seed: int
    tests: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    wall_s: float = 0.0
    failing: list[str] = field(default_factory=list)
    exit_code: int = 0

    @property
    def passed(self) -> int:
        return self.tests - self.failed - self.errors - self.skipped


def read_junit(path: Path, rerun: Rerun) -> None:
    """Fill `rerun` from a pytest junit xml report (every testsuite element summed)."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    for suite in suites:
        rerun.tests += int(suite.get("tests", 0))
        rerun.failed += int(suite.get("failures", 0))
        rerun.errors += int(suite.get("errors", 0))
        rerun.skipped += int(suite.get("skipped", 0))
        for case in suite.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                rerun.failing.append(f"{case.get('classname')}::{case.get('name')}")


def command(chosen: SuiteFlags, seed: int, workers: str, report: Path, pytest_args: list[str]) -> list[str]:
    """One rerun's pytest command (`chosen`'s profile is the dev profile)."""
    from samplecheck.harness.suite_files import config_args, suite_path

    files = [str(suite_path() / name) for name in TEST_FILES]
    cmd = [sys.executable, "-m", "pytest", *files, *config_args(), "-p", "no:cacheprovider", *chosen.pytest_options(),
           f"--hypothesis-seed={seed}", f"--junitxml={report}", "-q"]
    if workers != "0":
        cmd += ["-n", workers]
    return cmd + pytest_args


def run_once(chosen: SuiteFlags, seed: int, workers: str, pytest_args: list[str]) -> Rerun:
    rerun = Rerun(seed)
    with tempfile.TemporaryDirectory(prefix="samplecheck-flakiness-") as tmp:
        report = Path(tmp) / "report.xml"
        start = time.monotonic()
        done = subprocess.run(command(chosen, seed, workers, report, pytest_args), cwd=tmp,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        rerun.wall_s = time.monotonic() - start
        rerun.exit_code = done.returncode
        if report.exists():
            read_junit(report, rerun)
        else:
            rerun.failing.append(f"no report (pytest exit {done.returncode}): {done.stdout[-300:]!r}")
    return rerun


def table(device: str, reruns: list[Rerun]) -> str:
    lines = [f"Flakiness of {', '.join(TEST_FILES)} on {device}: {len(reruns)} reruns, dev profile, "
             "fresh Hypothesis seeds", "",
             "| rerun | hypothesis seed | tests | passed | failed | errors | skipped | wall s | failing tests |",
             "|---|---|---|---|---|---|---|---|---|"]
    for i, r in enumerate(reruns, 1):
        lines.append(f"| {i} | {r.seed} | {r.tests} | {r.passed} | {r.failed} | {r.errors} | {r.skipped} | "
                     f"{r.wall_s:.0f} | {'<br>'.join(r.failing) or '-'} |")
    executed = sum(r.tests - r.skipped for r in reruns)
    bad = sum(r.failed + r.errors for r in reruns)
    lines += ["", f"Total: {bad} failures or errors in {executed} executed tests "
                  f"({sum(1 for r in reruns if r.failed + r.errors)} of {len(reruns)} reruns with any)."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = flags.parser("flakiness", __doc__.splitlines()[0], epilog="Arguments not listed here go to pytest.")
    flags.add_suite_flags(parser, profile=False, mutant=False)
    parser.add_argument("--runs", type=int, default=30, help="reruns (default 30)")
    parser.add_argument("--first-seed", type=int, default=1, help="Hypothesis seed of the first rerun")
    flags.add_workers(parser)
    parser.add_argument("--concurrent", type=int, default=1, help="reruns at once (default 1)")
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    args, rest = parser.parse_known_args(argv)
    pytest_args = flags.pytest_args(rest)
    if args.runs < 1:
        parser.error(f"--runs must be >= 1, got {args.runs}")
    if args.concurrent < 1:
        parser.error(f"--concurrent must be >= 1, got {args.concurrent}")
    chosen = replace(flags.suite_flags(parser, args), profile="dev")
    device = chosen.device
    seeds = range(args.first_seed, args.first_seed + args.runs)
    with concurrent.futures.ThreadPoolExecutor(args.concurrent) as pool:
        futures = [pool.submit(run_once, chosen, seed, args.workers, pytest_args) for seed in seeds]
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            r = future.result()
            print(f"rerun {done}/{args.runs} (seed {r.seed}): {r.failed + r.errors} failures of {r.tests} "
                  f"tests, {r.wall_s:.0f} s", file=sys.stderr, flush=True)
    reruns = [future.result() for future in futures]
    report = table(device, reruns)
    print(report)
    if args.out is not None:
        args.out.write_text(report + "\n")
    return int(any(r.failed + r.errors or r.tests == 0 for r in reruns))
