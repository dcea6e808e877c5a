"""`samplecheck gate`: the kernel-change PR gate.

    samplecheck gate [--device D] [--backend ...] [--backend-only] [--allow-broken-plugins]
                     [--stat-alpha A] [--workers N] [--mutant-workers N] [--out DIR]
                     [--no-killtable] [--changed REF] [--budget SECONDS] [--gpu-share mps|time-slice]
                     [--bench-baseline FILE] [PYTEST ARGS ...]

The suite under the gate profile and, alongside it (its own processes, started with the
suite's), every mutant of our kernels against it (the kill table); exit 0 only when the suite
passes and every mutant dies. `--changed REF` gates only what the files changed since git REF
can affect (samplecheck.harness.changes): the cells of the kernels and adapters they implement
and those kernels' mutants; a kernel's own changed test module (one the registry does not
parametrize) runs whole, with the mutants of the modules it imports; a framework file gates
everything, documentation nothing. Into `--out` go the suite's log (gate-suite.log), one JSON
record per test with its duration (gate-results.json), the kill table (gate-kills.md) and its
shared round's pytest output with that round's slowest tests (gate-kills-shared.log); the
gate prints the 20 slowest tests, what Triton compiled for them (specializations and seconds
by kernel: samplecheck.harness.compiles), its wall time, and a warning when the suite and kill
table took longer than `--budget` (default: 180 s on CUDA, none on CPU). On CUDA the suite's workers
share the GPU through a private MPS server where one can be started (samplecheck.harness.mps;
`--gpu-share=time-slice` gives each its own context); the kill table's processes, whose
mutants may fault, keep contexts of their own. On a GPU, from a checkout with a benchmark
baseline, it then reports the ops more than 15% slower than the baseline (report lines; never
the exit status).
"""

import contextlib
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
                        help="gate only the cells, kernel test modules and mutants that the files changed since "
                             "git REF can affect")
    parser.add_argument("--budget", type=float, default=None, metavar="SECONDS",
                        help=f"warn when the gate's wall time exceeds this (default {CUDA_BUDGET_S:.0f} s on CUDA)")
    parser.add_argument("--gpu-share", choices=("mps", "time-slice"), default=None,
                        help="how the suite's workers share a CUDA device: through a private MPS server "
                             "(default where nvidia-cuda-mps-control is installed) or time-sliced, a context each")
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
    from samplecheck.harness.plugins import register_all
    from samplecheck.registry.matrix import REGISTRY, plug

    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if top.returncode != 0:
        raise ValueError(f"--changed {ref!r}: not inside a git checkout ({top.stderr.strip()})")
    root = Path(top.stdout.strip())
    register_all()
    plug(plugins.requested_backends(list(chosen.backends), allow_broken=True, packs=packs.selected(chosen.packs)),
         only=False)
    return changes.scope(changes.changed_files(ref, root), REGISTRY, root)


def run_suite(command: list[str], log: Path, share: str, processes: int = 1) -> int:
    """The suite's exit status (`processes` pytest processes at once), its workers sharing the
    GPU as `share` says. A run under MPS
    that met a fatal GPU error is run again time-sliced: under MPS one test's fault ends every
    worker's context, so only a run with a context per worker says which test faulted."""
    from samplecheck.harness import mps
    from samplecheck.tools.suite import run_pytest

    if share != "mps":
        return run_pytest(command, log=log, processes=processes)
    try:
        with mps.server() as environment:
            print("gate: the suite's workers share the GPU through a private MPS server")
            status = run_pytest(command, log=log, env=environment, processes=processes)
            faulted = status != 0 and mps.fatal_error(environment)
    except OSError as err:
        print(f"gate: no MPS server ({err}); the suite's workers time-slice the GPU")
        return run_pytest(command, log=log, processes=processes)
    if not faulted:
        return status
    log.replace(log.with_name(f"{log.stem}-mps{log.suffix}"))
    print("gate: a kernel met a fatal GPU error under MPS, which ends every worker's context; the suite again "
          "with a context per worker, where a fault fails only its own test")
    return run_pytest(command, log=log, processes=processes)


@contextlib.contextmanager
def sharing_gpus(processes: int):
    """For the block, the processes this one starts know that `processes` share the GPUs
    (`mps.SHARING_PROCESSES`: the suite's workers and the kill table's hunts run at once),
    unless this process's environment names a number already."""
    from samplecheck.harness.mps import SHARING_PROCESSES

    if SHARING_PROCESSES in os.environ:
        yield
        return
    os.environ[SHARING_PROCESSES] = str(processes)
    try:
        yield
    finally:
        del os.environ[SHARING_PROCESSES]


def recorded_tests(results: Path) -> list[dict]:
    """The test records of a results file (none when the suite wrote none)."""
    return json.loads(results.read_text())["tests"] if results.is_file() else []


def slowest(records: list[dict], count: int = SLOWEST) -> list[str]:
    """The `count` slowest of the test `records`, one line each."""
    ranked = sorted(records, key=lambda r: -r.get("duration", 0.0))
    return [f"{r.get('duration', 0.0):8.1f} s  {r['nodeid']}" for r in ranked[:count]]


def worker_summary(records: list[dict], began: float) -> str | None:
    """One line on how the suite's pytest-xdist workers spent the run, from the records' start
    and duration (a test's call; its fixtures' setup and teardown not counted): their seconds in
    test calls (mean, least, most), the span from the first call's start to the last call's end
    (the gap between the two is fixtures, scheduling or a worker sitting idle), and how long
    after `began` (the gate's start, epoch seconds) the first call started (start-up: byte-code,
    imports, collection). None without worker records."""
    busy: dict[str, float] = {}
    spans: list[tuple[float, float]] = []
    for record in records:
        if record.get("worker") and record.get("start"):
            busy[record["worker"]] = busy.get(record["worker"], 0.0) + record["duration"]
            spans.append((record["start"], record["start"] + record["duration"]))
    if not busy:
        return None
    first = min(start for start, _ in spans)
    span = max(end for _, end in spans) - first
    mean = sum(busy.values()) / len(busy)
    return (f"the suite's {len(busy)} workers spent {mean:.0f} s on average in test calls (least "
            f"{min(busy.values()):.0f} s, most {max(busy.values()):.0f} s) of the {span:.0f} s from the first call's "
            f"start to the last one's end; the first call started {first - began:.0f} s after the gate")


def main(argv: list[str]) -> int:
    from samplecheck.tools.bytecode import compile_sources

    start, began = time.monotonic(), time.time()  # the gate's wall time counts from here
    parser, args, rest = parse(argv)
    compile_sources()  # first: the imports below (torch) read its byte-code
    from samplecheck.harness import compiles, mps
    from samplecheck.mutants import MUTANTS
    from samplecheck.tools import bench_check, killtable
    from samplecheck.tools.suite import processes_of, pytest_command
    chosen = dataclasses.replace(flags.suite_flags(parser, args), profile="gate")
    share = args.gpu_share or ("mps" if chosen.device == "cuda" and mps.available() else "time-slice")
    budget = args.budget if args.budget is not None else (CUDA_BUDGET_S if chosen.device == "cuda" else None)
    args.out.mkdir(parents=True, exist_ok=True)
    mutants: list[str] = []
    suite_wanted = hunt_all = True
    if args.changed is not None:
        try:
            scope = changed_scope(args.changed, chosen)
        except ValueError as err:
            parser.error(str(err))
        print(f"gate --changed {args.changed}: {scope.describe()}")
        if not scope.everything:
            suite_wanted, hunt_all = bool(scope.cells or scope.tests), False
            chosen = dataclasses.replace(chosen, cells=",".join(f"{r}/{b}" for r, b in sorted(scope.cells)),
                                         tests=",".join(sorted(scope.tests)))
            mutants = sorted(scope.mutants)
            if not suite_wanted and not mutants:
                return 0
    results = args.out / "gate-results.json"
    suite = kills = 0
    records: list[dict] = []
    hunt = not args.no_killtable and (hunt_all or bool(mutants))
    sharing = processes_of(args.workers) * suite_wanted + args.mutant_workers * hunt
    with ThreadPoolExecutor(1) as pool, sharing_gpus(sharing):
        hunting = None
        if hunt:
            hunting = pool.submit(killtable.run, mutants or sorted(MUTANTS), chosen.device, chosen.resolved_profile,
                                  args.mutant_workers, args.out / "gate-kills-shared.log")
        if suite_wanted:
            command = pytest_command(chosen, [f"--sc-results={results}", *flags.pytest_args(rest)],
                                     workers=args.workers)
            suite = run_suite(command, args.out / "gate-suite.log", share, processes_of(args.workers))
            records = recorded_tests(results)
            if suite == 0 and not records:
                print(f"gate: the suite ran no test (see {args.out / 'gate-suite.log'})", file=sys.stderr)
                suite = 1
        if hunting is not None:
            text, kills = hunting.result()
            print(text)
            (args.out / "gate-kills.md").write_text(text)
    wall = time.monotonic() - start
    if args.changed is None:
        print(bench_check.report(chosen.device, args.out, args.bench_baseline))
    lines = slowest(records)
    if lines:
        print(f"gate: the {len(lines)} slowest tests (all durations: {results})\n" + "\n".join(lines))
    for line in (worker_summary(records, began), compiles.summary(records)):
        if line:
            print(f"gate: {line}")
    print(f"gate: suite exit {suite}, mutants exit {kills}, wall {wall:.0f} s (from the command's start to the end of "
          f"the suite and kill table; "
          f"{time.monotonic() - start:.0f} s with the benchmark report)")
    if budget is not None and wall > budget:
        print(f"gate: WARNING: the gate took {wall:.0f} s to the end of its suite and kill table, over the budget of "
              f"{budget:.0f} s",
              file=sys.stderr)
    return int(suite != 0 or kills != 0)
