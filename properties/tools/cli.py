"""The `samplecheck` command.

    samplecheck test [--device D] [--workers N] [PYTEST ARGS ...]
    samplecheck gate [--device D] [--workers N] [--mutant-workers N] [--out DIR] [--no-killtable]
                     [--bench-baseline FILE] [PYTEST ARGS ...]
    samplecheck sweep | killtable | mutate | behaviour | calibration | nightly | regress | badinputs | flakiness
                | interactions                           [ARGS ...] (each: --help)
    samplecheck probe NAME [ARGS ...]                                    (GPU probes of third-party APIs)

`test` runs samplecheck's property suite on every registered backend: ours, installed plug-ins
(entry points in the group `samplecheck.backends`) and `--backend KERNEL=module:callable`;
add `--backend-only` to test only yours. `gate` is the kernel-change PR gate: the suite under
the gate profile, then every mutant of our kernels against it (the kill table); exit 0 only
when the suite passes and every mutant dies. On a GPU, from a checkout with a benchmark baseline
(bench/baselines/h200.json or --bench-baseline), it then reports the ops more than 15% slower
than the baseline (report lines; never the exit status).
"""

import argparse
import sys
import time
from pathlib import Path

COMMANDS = {
    "test": "the property suite over every registered backend (pytest; extra arguments go to pytest)",
    "gate": "the PR gate: the suite under the gate profile, then the mutant kill table",
    "sweep": "the suite as one table: kernel x backend x dtype x layout x property",
    "killtable": "every mutant of our kernels against the suite: which property kills it, and when",
    "behaviour": "how much a bf16 in-place sampler changes the sampled law against an fp32 copy",
    "calibration": "measured false-alarm rate and power of the sampling check",
    "mutate": "generated mutants of our kernels against the suite: mutation score per kernel and property",
    "probe": "a GPU probe of a third-party library's raw API (NAME: a module of samplecheck.probes)",
    "nightly": "the nightly sweep in a time budget, with its HTML/JSON/markdown report",
    "regress": "turn a nightly failure (from its report JSON) into a replayed regression example",
    "badinputs": "the bad-input table's outcome counts on one device (clear error / documented result / ...)",
    "flakiness": "rerun the statistical tests N times with fresh Hypothesis seeds: failures per rerun",
    "interactions": "which pairs of the sampler's ops bind together in one row of its drawn cases",
}
DELEGATED = {name: f"samplecheck.tools.{name}" for name in ("sweep", "killtable", "behaviour", "calibration", "mutate",
                                                            "nightly", "regress", "badinputs", "flakiness",
                                                            "interactions")}


def _suite_parser(name: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"samplecheck {name}", description=COMMANDS[name],
                                     epilog="Arguments not listed here go to pytest (e.g. --backend-only, -k EXPR).")
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--workers", default="auto", help="pytest-xdist workers (default auto; 0 for none)")
    return parser


def test(argv: list[str]) -> int:
    from samplecheck.kernels.runtime import resolve_device
    from samplecheck.tools.suite import pytest_command, run_pytest

    args, pytest_args = _suite_parser("test").parse_known_args(argv)
    return run_pytest(pytest_command(resolve_device(args.device), pytest_args, workers=args.workers))


def gate(argv: list[str]) -> int:
    from samplecheck.kernels.runtime import resolve_device
    from samplecheck.tools import bench_check, killtable
    from samplecheck.tools.suite import pytest_command, run_pytest

    parser = _suite_parser("gate")
    parser.add_argument("--mutant-workers", type=int, default=2, help="mutants hunted at once")
    parser.add_argument("--out", type=Path, default=Path("."), help="where gate-suite.log and gate-kills.md go")
    parser.add_argument("--no-killtable", action="store_true", help="the suite alone (e.g. for plugged backends)")
    parser.add_argument("--bench-baseline", type=Path, default=None,
                        help="benchmark JSON to compare a fresh table with (default: bench/baselines/h200.json)")
    args, pytest_args = parser.parse_known_args(argv)
    device = resolve_device(args.device)
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    suite = run_pytest(pytest_command(device, pytest_args, profile="gate", workers=args.workers),
                       log=args.out / "gate-suite.log")
    kills = 0
    if not args.no_killtable:
        kills = killtable.main(["--device", device, "--profile", "gate", "--workers", str(args.mutant_workers),
                                "--report", str(args.out / "gate-kills.md")])
    print(bench_check.report(device, args.out, args.bench_baseline))
    print(f"gate: suite exit {suite}, mutants exit {kills}, wall {time.monotonic() - start:.0f} s")
    return int(suite != 0 or kills != 0)


def probe(argv: list[str]) -> int:
    import pkgutil
    import subprocess

    import samplecheck.probes

    names = sorted(m.name for m in pkgutil.iter_modules(samplecheck.probes.__path__))
    if not argv or argv[0] not in names:
        print(f"usage: samplecheck probe NAME [ARGS ...], NAME one of: {', '.join(names)}", file=sys.stderr)
        return 2
    return subprocess.run([sys.executable, "-m", f"samplecheck.probes.{argv[0]}", *argv[1:]]).returncode


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        print(__doc__.strip() + "\n\ncommands:\n" + "\n".join(f"  {k:<12} {v}" for k, v in COMMANDS.items()))
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    command, rest = argv[0], argv[1:]
    if command in DELEGATED:
        import importlib

        return int(importlib.import_module(DELEGATED[command]).main(rest) or 0)
    return {"test": test, "gate": gate, "probe": probe}[command](rest)


if __name__ == "__main__":
    sys.exit(main())
