"""The `samplecheck` command: `samplecheck COMMAND [ARGS ...]`, each command in `COMMANDS`
(`samplecheck --help` lists them, `samplecheck COMMAND --help` gives each one's arguments).

`test` runs samplecheck's property suite on every registered backend: ours, installed plug-ins
(entry points in the group `samplecheck.backends`), packs and `--backend KERNEL=module:callable`;
add `--backend-only` to test only yours, with only the properties that judge backends. A
plug-in that fails to load fails the run before any test runs (`--allow-broken-plugins`:
reported, and its tests skipped). `gate` is the kernel-change PR gate: the suite under the
gate profile and, alongside it, every mutant of our kernels against it (the kill table); exit 0
only when the suite passes and every mutant dies; `--changed REF` gates only what the files
changed since git REF can affect (samplecheck.tools.gate). On a GPU, from a checkout with a
benchmark baseline (bench/baselines/h200.json or --bench-baseline), it then reports the ops
more than 15% slower than the baseline (report lines; never the exit status). The suite always
runs under samplecheck's own pytest configuration, never the configuration of the project it
runs in.
"""

import importlib
import sys
from typing import NamedTuple

from samplecheck.tools import flags


class Command(NamedTuple):
    what: str  # one line: what the command does (the overview and the command's --help)
    target: str  # "module:function" taking the command's arguments and returning its exit status


COMMANDS = {
    "test": Command("the property suite over every registered backend (pytest; extra arguments go to pytest)",
                    "samplecheck.tools.cli:test"),
    "gate": Command("the PR gate: the suite under the gate profile, with the mutant kill table alongside",
                    "samplecheck.tools.gate:main"),
    "sweep": Command("the verification sweep: the properties that judge backends, on the cells that run here, as "
                     "one table", "samplecheck.tools.sweep:main"),
    "killtable": Command("every mutant of our kernels against the suite: which property kills it, and when",
                         "samplecheck.tools.killtable:main"),
    "behaviour": Command("how much a bf16 in-place sampler changes the sampled law against an fp32 copy",
                         "samplecheck.tools.behaviour:main"),
    "calibration": Command("measured false-alarm rate and power of the sampling check",
                           "samplecheck.tools.calibration:main"),
    "mutate": Command("generated mutants of our kernels against the suite: mutation score per kernel and property",
                      "samplecheck.tools.mutate:main"),
    "probe": Command("a GPU probe of a third-party library's raw API (NAME: a module of samplecheck.probes)",
                     "samplecheck.tools.cli:probe"),
    "nightly": Command("the nightly sweep in a time budget, with its HTML/JSON/markdown report",
                       "samplecheck.tools.nightly:main"),
    "regress": Command("turn a nightly failure (from its report JSON) into a replayed regression example",
                       "samplecheck.tools.regress:main"),
    "badinputs": Command("the bad-input table's outcome counts on one device (clear error / documented result / ...)",
                         "samplecheck.tools.badinputs:main"),
    "flakiness": Command("rerun the statistical tests N times with fresh Hypothesis seeds: failures per rerun",
                         "samplecheck.tools.flakiness:main"),
    "interactions": Command("which pairs of the sampler's ops bind together in one row of its drawn cases",
                            "samplecheck.tools.interactions:main"),
}
PYTEST_EPILOG = "Arguments not listed here go to pytest (e.g. -k EXPR, -x, --junitxml=FILE)."


def test(argv: list[str]) -> int:
    from samplecheck.tools.bytecode import compile_sources
    from samplecheck.tools.suite import processes_of, pytest_command, run_pytest

    parser = flags.parser("test", COMMANDS["test"].what, epilog=PYTEST_EPILOG)
    flags.add_suite_flags(parser)
    flags.add_workers(parser)
    args, rest = parser.parse_known_args(argv)
    compile_sources()
    chosen = flags.suite_flags(parser, args)
    return run_pytest(pytest_command(chosen, flags.pytest_args(rest), workers=args.workers),
                      processes=processes_of(args.workers))


def probe(argv: list[str]) -> int:
    import pkgutil
    import subprocess

    import samplecheck.probes

    names = sorted(m.name for m in pkgutil.iter_modules(samplecheck.probes.__path__))
    usage = f"usage: samplecheck probe NAME [ARGS ...], NAME one of: {', '.join(names)}"
    if argv[:1] in (["-h"], ["--help"]):
        print(f"{usage}\n\n{COMMANDS['probe'].what}")
        return 0
    if not argv or argv[0] not in names:
        print(usage, file=sys.stderr)
        return 2
    return subprocess.run([sys.executable, "-m", f"samplecheck.probes.{argv[0]}", *argv[1:]]).returncode


def overview() -> str:
    return __doc__.strip() + "\n\ncommands:\n" + "\n".join(f"  samplecheck {k:<12} {c.what}"
                                                         for k, c in COMMANDS.items())


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
    module, _, function = COMMANDS[command].target.partition(":")
    return int(getattr(importlib.import_module(module), function)(rest) or 0)


def console() -> int:
    """The `samplecheck` command's entry point: `main` with the command line's arguments, in a
    process that shares its byte-code with the suite's processes (samplecheck.tools.bytecode)."""
    from samplecheck.tools import bytecode

    bytecode.share()
    return main()


if __name__ == "__main__":
    sys.exit(console())
