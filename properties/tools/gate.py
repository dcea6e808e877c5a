"""`samplecheck gate`: the kernel-change PR gate.

    samplecheck gate [--device D] [--backend ...] [--backend-only] [--allow-broken-plugins]
                     [--stat-alpha A] [--workers N] [--mutant-workers N] [--out DIR]
                     [--no-killtable] [--changed REF] [--budget SECONDS] [--bench-baseline FILE]
                     [PYTEST ARGS ...]

The suite under the gate profile and, alongside it (its own processes, started with the
suite's), every mutant of our kernels against it (the kill table); exit 0 only when the suite
passes and every mutant dies. `--changed REF` gates only
what the files changed since git REF can affect (samplecheck.harness.changes): the cells of
the kernels and adapters they implement and those kernels' mutants; a framework file gates
everything, documentation nothing. Into `--out` go the suite's log (gate-suite.log), one JSON
record per test with its duration (gate-results.json) and the kill table (gate-kills.md); the
gate prints the 20 slowest tests, its wall time, and a warning when the suite and kill table
took longer than `--budget` (default: 180 s on CUDA, none on CPU). On a GPU, from a checkout with a benchmark
baseline, it then reports the ops more than 15% slower than the baseline (report lines; never
the exit status).
"""

import dataclasses
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from samplecheck.tools import flags

CUDA_BUDGET_S = 180.0
SLOWEST = 20


def parse(argv: list[str]):
    from samplecheck.tools.cli import COMMANDS, PYTEST_EPILOG

    parser = flags.parser("gate", COMMANDS["gate"].what, epilog=PYTEST_EPILOG)
    flags.add_suite_flags(parser, profile=False, mutant=False)
    flags.add_workers(parser)
    parser.add_argument("--mutant-workers", type=int, default=max(1, (os.cpu_count() or 2) // 2),
                        help="mutants hunted at once (default: half the cores)")
    parser.add_argument("--out", type=Path, default=Path("."),
                        help="where gate-suite.log, gate-results.json and gate-kills.md go")
    parser.add_argument("--no-killtable", action="store_true", help="the suite alone (e.g. for plugged backends)")
    parser.add_argument("--changed", default=None, metavar="REF",
                        help="gate only the cells and mutants that the files changed since git REF can affect")
    parser.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                        help=f"warn when the gate's wall time exceeds this (default {CUDA_BUDGET_S:.0f} s on CUDA)")
    parser.add_argument("--bench-baseline", type=Path, default=None,
                        help="benchmark JSON to compare a fresh table with (default: bench/baselines/h200.json)")
    args, rest = parser.parse_known_args(argv)
    if args.mutant_workers < 1:
        parser.error(f"--mutant-workers must be >= 1, got {args.mutant_workers}")
    if args.budget is not None and args.budget <= 0:
        parser.error(f"--budget must be > 0 seconds, got {args.budget:g}")
    return parser, args, rest


def changed_scope(ref: str, chosen: flags.SuiteFlags):
    """The Scope of the files changed since `ref` in the git checkout around the working
    directory, mapped through the registry as this run would plug it."""
    import subprocess

    from samplecheck.harness import changes, packs, plugins
    from samplecheck.harness.registry import REGISTRY, plug, register_all

    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if top.returncode != 0:
        raise ValueError(f"--changed {ref!r}: not inside a git checkout ({top.stderr.strip()})")
    root = Path(top.stdout.strip())
    register_all()
    plug(plugins.requested_backends(list(chosen.backends), allow_broken=True, packs=packs.selected(chosen.packs)),
         only=False)
    return changes.scope(changes.changed_files(ref, root), REGISTRY, root)


def slowest(results: Path, count: int = SLOWEST) -> list[str]:
    """The `count` slowest tests of a results file, one line each."""
    if not results.is_file():
        return []
    records = sorted(json.loads(results.read_text())["tests"], key=lambda r: -r.get("duration", 0.0))
    return [f"{r.get('duration', 0.0):8.1f} s  {r['nodeid']}" for r in records[:count]]


def main(argv: list[str]) -> int:
    from samplecheck.kernels.mutants import MUTANTS
    from samplecheck.tools import bench_check, killtable
    from samplecheck.tools.suite import pytest_command, run_pytest

    parser, args, rest = parse(argv)
    chosen = dataclasses.replace(flags.suite_flags(parser, args), profile="gate")
    budget = args.budget if args.budget is not None else (CUDA_BUDGET_S if chosen.device == "cuda" else None)
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    mutants: list[str] = []
    run_suite = hunt_all = True
    if args.changed is not None:
        try:
            scope = changed_scope(args.changed, chosen)
        except ValueError as err:
            parser.error(str(err))
        print(f"gate --changed {args.changed}: {scope.describe()}")
        if not scope.everything:
            run_suite, hunt_all = bool(scope.cells), False
            chosen = dataclasses.replace(chosen, cells=",".join(f"{r}/{b}" for r, b in sorted(scope.cells)))
            mutants = sorted(scope.mutants)
            if not run_suite and not mutants:
                return 0
    results = args.out / "gate-results.json"
    suite = kills = 0
    with ThreadPoolExecutor(1) as pool:
        hunting = None
        if not args.no_killtable and (hunt_all or mutants):
            hunting = pool.submit(killtable.run, mutants or sorted(MUTANTS), chosen.device, chosen.resolved_profile,
                                  args.mutant_workers)
        if run_suite:
            command = pytest_command(chosen, [f"--sc-results={results}", *flags.pytest_args(rest)],
                                     workers=args.workers)
            suite = run_pytest(command, log=args.out / "gate-suite.log")
        if hunting is not None:
            text, kills = hunting.result()
            print(text)
            (args.out / "gate-kills.md").write_text(text)
    wall = time.monotonic() - start
    if args.changed is None:
        print(bench_check.report(chosen.device, args.out, args.bench_baseline))
    lines = slowest(results)
    if lines:
        print(f"gate: the {len(lines)} slowest tests (all durations: {results})\n" + "\n".join(lines))
    print(f"gate: suite exit {suite}, mutants exit {kills}, wall {wall:.0f} s (suite and kill table; "
          f"{time.monotonic() - start:.0f} s with the benchmark report)")
    if budget is not None and wall > budget:
        print(f"gate: WARNING: the suite and kill table took {wall:.0f} s, over the budget of {budget:.0f} s",
              file=sys.stderr)
    return int(suite != 0 or kills != 0)
