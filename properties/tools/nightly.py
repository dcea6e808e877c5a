"""The nightly property sweep and its report.

    samplecheck nightly [--budget 30m] [--database DIR] [--out DIR] [--history DIR] [--device D]
                        [--backend KERNEL=MOD:FN ...] [--backend-only] [--allow-broken-plugins] [--mutant NAME]
                        [--stat-alpha A] [--workers N] [--examples N] [PYTEST ARGS ...]
    samplecheck nightly --from-results A.json [B.json ...] [--out DIR] [--history DIR]

How the budget is spent: one pytest run of the whole suite under the `nightly` Hypothesis
profile (random, the example database in --database, target() steering, shrinking) with
every test sized to the same number of examples. That number is planned from the latest
night in --history (seconds per example of every test, spread over the workers, to fill
80% of the budget; clamped to 30..1000) or given with --examples; without a previous night
it is 100. The stopping rule: a test that would start after the budget's end (less a
reserve for the report, a tenth of the budget up to 2 minutes) is skipped and reported as
not reached; a test still running when the budget ends is interrupted (SIGINT: pytest writes
every finished test's results on the way out) and the run is reported as cut short.

Then the report (`samplecheck.tools.report`): report.html, report.json and summary.md in
--out; tonight's report.json is also kept in --history for the next night's comparison.
One summary line goes to stdout. Exit status: 0 when no test failed (failed, error or a
strict xfail that passed), 1 when one did, pytest's status (>= 2) when the run itself broke
without results. `--from-results` builds the report from results files of runs made
elsewhere (pieces of one night, e.g. one per device call), merged.
"""

import argparse
import dataclasses
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from samplecheck.harness.profiles import EXAMPLE_DB_ENV, NIGHTLY, NIGHTLY_EXAMPLES_ENV
from samplecheck.tools import flags
from samplecheck.tools import report as reports
from samplecheck.tools.report.data import BAD, load_history

DEFAULT_EXAMPLES = 100
EXAMPLE_RANGE = (30, 1000)
FILL = 0.8
RESULTS = "results.json"
UNITS = {"s": 1, "m": 60, "h": 3600}


def parse_budget(text: str) -> float:
    """Seconds in a budget such as 30m, 1h, 90s or 1h30m (a bare number is minutes)."""
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text) * 60
    parts = re.findall(r"(\d+(?:\.\d+)?)([smh])", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise argparse.ArgumentTypeError(f"--budget: expected a time such as 30m, 1h or 90s, got {text!r}")
    return sum(float(n) * UNITS[u] for n, u in parts)


def reserve(budget: float) -> float:
    return min(120.0, budget / 10)


def plan_examples(history: list[dict], seconds: float, workers: int) -> tuple[int, str]:
    """Examples per test that fill FILL of `seconds` on `workers`, from the latest night's
    seconds per example of each test that ran; (number, how it was chosen)."""
    if not history:
        return DEFAULT_EXAMPLES, f"{DEFAULT_EXAMPLES} (no previous night to plan from)"
    ran = [r for r in history[-1]["tests"] if r.get("examples")]
    per_example = sum(r["duration"] / r["examples"] for r in ran)
    if per_example <= 0:
        return DEFAULT_EXAMPLES, f"{DEFAULT_EXAMPLES} (the previous night drew no examples)"
    planned = int(FILL * seconds * workers / per_example)
    chosen = max(EXAMPLE_RANGE[0], min(EXAMPLE_RANGE[1], planned))
    return chosen, (f"{chosen} (planned: {FILL:.0%} of {seconds:.0f} s on {workers} worker(s) at "
                    f"{per_example:.2f} s per example across {len(ran)} tests the previous night)")


def worker_count(workers: str, device: str) -> int:
    """Workers the plan may count on (auto: one per GPU on CUDA, else the pytest processes the
    value runs at once)."""
    if workers == "auto" and device == "cuda":
        import torch

        return max(1, torch.cuda.device_count())
    from samplecheck.tools.suite import processes_of

    return processes_of(workers)


def run_suite(command: list[str], env: dict, log: Path, stop_at: float) -> tuple[int, bool]:
    """Run pytest, echo its output to `log`; SIGINT it at `stop_at` (epoch seconds), kill it a
    minute later. (exit status, whether it was cut short)."""
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
        try:
            return process.wait(timeout=max(1.0, stop_at - time.time())), False
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGINT)
            try:
                return process.wait(timeout=60), True
            except subprocess.TimeoutExpired:
                process.kill()
                return process.wait(), True


def git_commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=Path(__file__).parent, check=True).stdout.strip() or None
    except (OSError, subprocess.CalledProcessError):
        return None


def parser() -> argparse.ArgumentParser:
    p = flags.parser("nightly", __doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                     epilog="Arguments not listed here go to pytest.")
    p.add_argument("--budget", type=parse_budget, default=parse_budget("30m"), help="time budget (default 30m)")
    p.add_argument("--database", type=Path, default=Path(".hypothesis/examples"),
                   help="Hypothesis example database directory, cached by CI between nights")
    p.add_argument("--out", type=Path, default=Path("nightly-report"), help="where the report files go")
    p.add_argument("--history", type=Path, default=None, help="previous nights' report JSON (tonight's is added)")
    flags.add_suite_flags(p, profile=False)
    flags.add_workers(p)
    p.add_argument("--examples", type=int, default=None, help="examples per test (default: planned from --history)")
    p.add_argument("--from-results", type=Path, nargs="+", default=None, metavar="RESULTS.json",
                   help="no run: build the report from these results files (pieces of one night, merged)")
    p.add_argument("--link", default=None, help="URL of the published report, for the markdown summary")
    return p


def main(argv: list[str] | None = None) -> int:
    command_parser = parser()
    args, rest = command_parser.parse_known_args(argv)
    pytest_args = flags.pytest_args(rest)
    history = load_history(args.history)
    meta = {"commit": git_commit()}
    cut_short, status = False, 0
    if args.from_results:
        results = args.from_results
    else:
        from samplecheck.tools.bytecode import compile_sources
        from samplecheck.tools.suite import processes_of, pytest_command, suite_environment

        compile_sources()
        chosen = dataclasses.replace(flags.suite_flags(command_parser, args), profile=NIGHTLY)
        device = chosen.device
        start = time.time()
        end = start + args.budget
        examples, how = ((args.examples, f"{args.examples} (--examples)") if args.examples
                         else plan_examples(history, args.budget - reserve(args.budget),
                                            worker_count(args.workers, device)))
        args.out.mkdir(parents=True, exist_ok=True)
        results = [args.out / RESULTS]
        command = pytest_command(chosen, pytest_args + [f"--sc-results={results[0]}",
                                                        f"--sc-deadline={end - reserve(args.budget):.0f}"],
                                 workers=args.workers)
        env = suite_environment({**os.environ, EXAMPLE_DB_ENV: str(args.database.resolve()),
                                 NIGHTLY_EXAMPLES_ENV: str(examples)}, processes_of(args.workers))
        print(f"nightly: budget {args.budget:.0f} s, {how} examples per test, database {args.database}", flush=True)
        status, cut_short = run_suite(command, env, args.out / "nightly-suite.log", end - reserve(args.budget) / 2)
        meta.update(budget=f"{args.budget:.0f} s" + (" (cut short: tests were interrupted)" if cut_short else ""),
                    examples_per_test=how, database=str(args.database))
        if not results[0].exists():
            print(f"nightly: pytest exited {status} without results; see {args.out / 'nightly-suite.log'}",
                  file=sys.stderr)
            return status or 2
    report = reports.build(results, args.out, args.history, meta, args.link)
    if args.history is not None:
        reports.keep_in_history(args.out / reports.JSON, args.history)
    print(report["line"] + f"; report {args.out / reports.HTML}")
    if any(report["counts"][o] for o in BAD):
        return 1
    return 0 if status in (0, 1, 5) or cut_short else status
