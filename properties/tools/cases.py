"""Distinct cases per kernel: how many different inputs a run of the suite really tried.

    python -m samplecheck.tools.cases [--log FILE] [PYTEST ARGS ...]

Runs pytest (the given arguments, e.g. test files, --sc-device, --sc-profile, -n) with
$SAMPLECHECK_CASE_LOG set, so every case drawn by `draw_case` is logged (test, combo, repr),
then prints, per kernel: the cases drawn, the distinct (test, case) pairs, and the distinct
pairs a combo-shared sequence would give at most (the most any one combo drew, per test).
`-p no:samplecheck-seeds` among the pytest arguments measures Hypothesis' own seeding
(every combo of a test replays one sequence) for comparison.
"""

import argparse
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from samplecheck.inputs.drawing import CASE_LOG


def count(log: Path) -> dict[str, tuple[int, int, int]]:
    """kernel -> (cases drawn, distinct (test, case), largest per-combo count summed over tests)."""
    drawn = defaultdict(int)
    distinct = defaultdict(set)
    per_combo = defaultdict(lambda: defaultdict(set))
    for line in log.read_text().splitlines():
        test, combo, case = line.split("\t", 2)
        kernel = combo.split("-", 1)[0]
        drawn[kernel] += 1
        distinct[kernel].add((test, case))
        per_combo[(kernel, test)][combo].add(case)
    shared = defaultdict(int)
    for (kernel, _), combos in per_combo.items():
        shared[kernel] += max(len(cases) for cases in combos.values())
    return {k: (drawn[k], len(distinct[k]), shared[k]) for k in sorted(drawn)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--log", type=Path, default=None, help="keep the case log here (default: a temporary file)")
    args, pytest_args = parser.parse_known_args(argv)
    log = args.log or Path(tempfile.mkdtemp(prefix="samplecheck-cases-")) / "cases.tsv"
    log.unlink(missing_ok=True)
    status = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *pytest_args],
                            env={**os.environ, CASE_LOG: str(log)}).returncode
    print("\n| kernel | cases drawn | distinct (test, case) | one combo's cases per test, summed |\n|---|---|---|---|")
    totals = [0, 0, 0]
    for kernel, numbers in count(log).items():
        print(f"| {kernel} | " + " | ".join(map(str, numbers)) + " |")
        totals = [t + n for t, n in zip(totals, numbers)]
    print("| all | " + " | ".join(map(str, totals)) + " |")
    print(f"\ncase log: {log}; pytest exit {status}")
    return status


if __name__ == "__main__":
    sys.exit(main())
