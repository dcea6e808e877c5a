"""The `samplecheck` command.

    samplecheck test [--device D] [--profile P] [--backend KERNEL=MOD:FN ...] [--backend-only]
                     [--allow-broken-plugins] [--mutant NAME] [--stat-alpha A] [--workers N] [PYTEST ARGS ...]
    samplecheck gate [--device D] [--backend ...] [--backend-only] [--allow-broken-plugins] [--stat-alpha A]
                     [--workers N] [--mutant-workers N] [--out DIR] [--no-killtable] [--changed REF]
                     [--budget SECONDS] [--bench-baseline FILE] [PYTEST ARGS ...]
    samplecheck sweep | killtable | mutate | behaviour | calibration | nightly | regress | badinputs | flakiness
                | interactions                           [ARGS ...] (each: --help)
    samplecheck probe NAME [ARGS ...]                                    (GPU probes of third-party APIs)

`test` runs samplecheck's property suite on every registered backend: ours, installed plug-ins
(entry points in the group `samplecheck.backends`), packs and `--backend KERNEL=module:callable`;
add `--backend-only` to test only yours, with only the properties that judge backends. A
plug-in that fails to load fails the run before any test runs (`--allow-broken-plugins`:
reported, and its tests skipped). `gate` is the kernel-change PR gate: the suite under the
gate profile, then every mutant of our kernels against it (the kill table); exit 0 only when
the suite passes and every mutant dies; `--changed REF` gates only what the files changed
since git REF can affect (samplecheck.tools.gate). On a GPU, from a checkout with a benchmark baseline
(bench/baselines/h200.json or --bench-baseline), it then reports the ops more than 15% slower
than the baseline (report lines; never the exit status). The suite always runs under
samplecheck's own pytest configuration, never the configuration of the project it runs in.
"""

import sys

from samplecheck.tools import flags

COMMANDS = {
    "test": "the property suite over every registered backend (pytest; extra arguments go to pytest)",
    "gate": "the PR gate: the suite under the gate profile, then the mutant kill table",
    "sweep": "the verification sweep: the properties that judge backends, on the cells that run here, as one table",
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
DELEGATED = {name: f"samplecheck.tools.{name}" for name in ("gate", "sweep", "killtable", "behaviour", "calibration", "mutate",
                                                            "nightly", "regress", "badinputs", "flakiness",
                                                            "interactions")}
PYTEST_EPILOG = "Arguments not listed here go to pytest (e.g. -k EXPR, -x, --junitxml=FILE)."


def test(argv: list[str]) -> int:
    from samplecheck.tools.suite import pytest_command, run_pytest

    parser = flags.parser("test", COMMANDS["test"], epilog=PYTEST_EPILOG)
    flags.add_suite_flags(parser)
    flags.add_workers(parser)
    args, rest = parser.parse_known_args(argv)
    chosen = flags.suite_flags(parser, args)
    return run_pytest(pytest_command(chosen, flags.pytest_args(rest), workers=args.workers))


def probe(argv: list[str]) -> int:
    import pkgutil
    import subprocess

    import samplecheck.probes

    names = sorted(m.name for m in pkgutil.iter_modules(samplecheck.probes.__path__))
    usage = f"usage: samplecheck probe NAME [ARGS ...], NAME one of: {', '.join(names)}"
    if argv[:1] in (["-h"], ["--help"]):
        print(f"{usage}\n\n{COMMANDS['probe']}")
        return 0
    if not argv or argv[0] not in names:
        print(usage, file=sys.stderr)
        return 2
    return subprocess.run([sys.executable, "-m", f"samplecheck.probes.{argv[0]}", *argv[1:]]).returncode


def overview() -> str:
    return __doc__.strip() + "\n\ncommands:\n" + "\n".join(f"  {k:<12} {v}" for k, v in COMMANDS.items())


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (["-h"], ["--help"]):
        print(overview())
        return 0
    if not argv:
        print(overview(), file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    if command not in COMMANDS:
        print(f"samplecheck: unknown command {command!r}; commands: {', '.join(COMMANDS)} "
              "(samplecheck --help describes each)", file=sys.stderr)
        return 2
    if command in DELEGATED:
        import importlib

        return int(importlib.import_module(DELEGATED[command]).main(rest) or 0)
    return {"test": test, "probe": probe}[command](rest)


if __name__ == "__main__":
    sys.exit(main())
