"""The mutant kill table: every mutant against the fast suite, which property killed it, and when.

    samplecheck killtable [--device auto|cpu|cuda] [--profile gate] [--workers N] [--report FILE.md]
                          [MUTANT ...]

The mutants (samplecheck.mutants) are hunted under the given device and Hypothesis
profile, in two rounds; the first failing test of a mutant is its killer:
1. shared: one pytest run (WORKERS xdist workers) of the files of the mutants' known killers
   (`Mutant.killed_by`) over all of them at once (`--sc-mutant=A,B,... --sc-kills DIR`,
   samplecheck.harness.kills: each mutant's tests in its own known killer's file only, and none
   after its first kill). Each mutant is
   a backend of its own, its patched module imported under its own name, so the mutants and
   the real kernels never meet; its time to kill is from the run's start to its first kill.
   A mutant whose patch can fault memory (`Mutant.faults_memory`) skips this round.
2. alone: every mutant not killed yet runs `pytest tests/cover --sc-mutant=NAME -k mutant-NAME -x`
   in a process of its own (its known killer first, then the exact properties, then the rest),
   WORKERS at once, the memory-faulting ones alongside round 1; its time to kill is that
   process's wall time, start-up included.
Mutants whose patch only changes behaviour on another device are listed as not run. A mutant
whose patch does not apply once to its module's source (`Mutant.patched_source` raises) is
never hunted: its tests would fail on the import, not on the mutation, and read as a kill; it
is listed as "PATCH FAILS" and counts as a survivor. Exits 1 if any mutant that ran survived.
"""

import argparse
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from samplecheck.harness import mps
from samplecheck.harness.kills import MUTANT_PREFIX, read_kill
from samplecheck.harness.suite_files import config_args, suite_path
from samplecheck.mutants import MUTANTS
from samplecheck.registry import catalog
from samplecheck.tools import flags
from samplecheck.tools.suite import suite_environment

PATCH_FAILS = "patch does not apply: "  # the output of a mutant not hunted for its broken patch
POLL_S = 0.25  # how often the shared round looks for the kills it still waits for
STOP_GRACE_S = 10.0  # how long a stopped round's processes get to exit before they are killed

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


def hunt(name: str, device: str, profile: str, timeout: float = 1800, tests: list[str] | None = None,
         processes: int = 1) -> Hunt:
    """Run the fast suite's tests of the mutant (or those among the test files or node ids
    `tests`: `-k mutant-NAME` keeps the tests parametrized with it) against mutant `name` alone,
    stopping at the first failure, in one of `processes` hunts at once. Only a failed test of
    the mutant kills it: any other failure makes the hunt an error, never a kill."""
    if device not in MUTANTS[name].devices:
        return Hunt(name, False, False, None, 0.0, f"changes behaviour only on {', '.join(MUTANTS[name].devices)}")
    broken = patch_failure(name)
    if broken is not None:
        return broken
    cover = suite_path()
    known = f"{MUTANTS[name].killed_by}.py"
    rest = sorted(f.name for f in cover.glob("test_*.py") if f.name not in FIRST + (known,))
    selection = tests or [str(cover / f) for f in (known, *(f for f in FIRST if f != known), *rest)]
    command = _pytest(selection, [name], device, profile) + ["-x", "-p", "no:xdist"]
    start = time.monotonic()
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                                env=suite_environment(mps.without(), processes))
    except subprocess.TimeoutExpired as err:
        output = err.stdout.decode(errors="replace") if isinstance(err.stdout, bytes) else (err.stdout or "")
        return Hunt(name, True, True, f"timeout ({timeout:.0f} s)", time.monotonic() - start, output[-3000:])
    seconds = time.monotonic() - start
    failed = [line.split()[1] for line in result.stdout.splitlines() if line.startswith("FAILED ")]
    killer = next((test for test in failed if MUTANT_PREFIX + name in test), None) if result.returncode == 1 else None
    if result.returncode < 0:
        killer = f"crash (signal {-result.returncode})"
    return Hunt(name, True, killer is not None, killer, seconds,
                result.stdout[-3000:] + result.stderr[-2000:], result.returncode)


def patch_failure(name: str) -> Hunt | None:
    """The hunt of mutant `name` when its patch does not apply (survived, never run); else None."""
    try:
        MUTANTS[name].patched_source()
    except ValueError as error:
        return Hunt(name, True, False, None, 0.0, f"{PATCH_FAILS}{error}")
    return None


def _pytest(selection: list[str], mutants: list[str], device: str, profile: str) -> list[str]:
    """The pytest command running the tests of `mutants` in `selection`: those parametrized with
    a mutant's backend (`-k mutant-NAME`), never a framework test whose name holds "mutant"."""
    return [sys.executable, "-m", "pytest", *selection, *config_args(), f"--sc-mutant={','.join(mutants)}",
            f"--sc-device={device}", f"--sc-profile={profile}", "--sc-order=collection",
            "-k", " or ".join(MUTANT_PREFIX + name for name in mutants), "-q", "-p", "no:cacheprovider"]


def run_until_done(command: list[str], env: dict[str, str], timeout: float, done) -> tuple[str, str, int | None]:
    """Run `command` in a session of its own until it exits, `done()` holds (checked every
    POLL_S seconds) or `timeout` seconds pass; a run stopped early is terminated with its whole
    process group (its xdist workers). (stdout, stderr, exit status; None: stopped early or
    timed out)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, text=True, env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        while process.poll() is None and not done() and time.monotonic() < deadline:
            time.sleep(POLL_S)
        returncode = process.poll()
        if returncode is None:
            _signal_group(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                _signal_group(process.pid, signal.SIGKILL)
                process.wait()
        out.seek(0)
        err.seek(0)
        return out.read(), err.read(), returncode


def _signal_group(pid: int, sig: int) -> None:
    """Send `sig` to the process group led by `pid` (none left: nothing to do)."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


def hunt_shared(names: list[str], device: str, profile: str, workers: int, timeout: float = 1800,
                log: Path | None = None) -> dict[str, Hunt]:
    """Round 1: the known killers' files over all of `names` in one pytest run, `workers`
    xdist workers (1: none), each mutant stopping at its first kill; the run is stopped as soon
    as every mutant is killed (its tests still in flight would only burn the CPUs a gate's suite
    shares). The killed mutants' hunts, by name; the others are left to `hunt`. `log`: where the
    run's output goes, headed by its wall time (pytest lists its slowest tests last, when the
    run ends by itself)."""
    cover = suite_path()
    files = sorted({str(cover / f"{MUTANTS[name].killed_by}.py") for name in names})
    spread = ["-n", str(workers), "--dist", "worksteal"] if workers > 1 else ["-p", "no:xdist"]
    with tempfile.TemporaryDirectory(prefix="samplecheck-kills-") as folder:
        command = _pytest(files, names, device, profile) + [f"--sc-kills={folder}", "--durations=15",
                                                                       *spread]
        started = time.time()
        stdout, stderr, returncode = run_until_done(
            command, suite_environment(mps.without(), workers), timeout,
            lambda: all(read_kill(Path(folder), name) is not None for name in names))
        kills = {name: read_kill(Path(folder), name) for name in names}
        if returncode is not None:
            ended = "exited"
        else:
            ended = "stopped at its last kill" if all(kills.values()) else f"stopped at its {timeout:.0f} s timeout"
        output = stdout[-3000:] + stderr[-2000:]
        if log is not None:
            log.write_text(f"# the kill table's shared round: {time.time() - started:.0f} s wall ({ended})\n"
                           f"# {shlex.join(command)}\n{stdout}{stderr}")
    return {name: Hunt(name, True, True, kill[0], kill[1] - started, output, returncode)
            for name, kill in kills.items() if kill is not None}


def hunt_all(names: list[str], device: str, profile: str, workers: int, log: Path | None = None) -> list[Hunt]:
    """Every mutant of `names` hunted in the two rounds of this module's docstring, in order
    (`log`: the shared round's output, as `hunt_shared` writes it)."""
    shared = [n for n in names if device in MUTANTS[n].devices and not MUTANTS[n].faults_memory
              and patch_failure(n) is None]
    with ThreadPoolExecutor(workers + 1) as pool:
        alone = {n: pool.submit(hunt, n, device, profile, processes=workers) for n in names if n not in shared}
        found = hunt_shared(shared, device, profile, workers, log=log) if shared else {}
        alone |= {n: pool.submit(hunt, n, device, profile, processes=workers) for n in shared if n not in found}
        return [found[n] if n in found else alone[n].result() for n in names]


def table(hunts: list[Hunt]) -> str:

    lines = ["| mutant | kernel | killed | killed by | time to kill | bug reproduced (reference) |",
             "|---|---|---|---|---|---|"]
    for h in hunts:
        m = MUTANTS[h.name]
        if h.output.startswith(PATCH_FAILS):
            verdict, killer = "PATCH FAILS", h.output[len(PATCH_FAILS):]
        else:
            verdict = "yes" if h.killed else ("SURVIVED" if h.ran else "not run")
            killer = h.killer.split("::", 1)[-1] if h.killer else ("-" if h.ran else h.output)
        lines.append(f"| {h.name} | {m.kernel} | {verdict} | {killer} | {h.seconds:.0f} s | "
                     f"{m.description} ({m.ref}) |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = flags.parser("killtable", __doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    flags.add_suite_flags(parser, backends=False, mutant=False, stat_alpha=False)
    parser.add_argument("--workers", type=int, default=2,
                        help="xdist workers of the shared run, and mutants hunted alone at once (>= 1)")
    parser.add_argument("--report", type=Path, default=None, help="also write the table to this Markdown file")
    parser.add_argument("mutants", nargs="*", help="names (default: all)")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(f"--workers must be >= 1, got {args.workers}")
    unknown = sorted(set(args.mutants) - set(MUTANTS))
    if unknown:
        parser.error(f"MUTANT must be among {', '.join(sorted(MUTANTS))}; got {', '.join(unknown)}")
    chosen = flags.suite_flags(parser, args)
    text, status = run(args.mutants or sorted(MUTANTS), chosen.device, chosen.resolved_profile, args.workers)
    print(text)
    if args.report:
        args.report.write_text(text)
    return status


def run(names: list[str], device: str, profile: str, workers: int, log: Path | None = None) -> tuple[str, int]:
    """The kill table of `names` as text, and its exit status (0: every mutant run was killed);
    `log`: the shared round's output (`hunt_shared`)."""
    start = time.monotonic()
    hunts = hunt_all(names, device, profile, workers, log=log)
    killed = sum(h.killed for h in hunts)
    ran = sum(h.ran for h in hunts)
    last = max((h.seconds for h in hunts if h.killed), default=0.0)
    text = (f"Mutant kill table on {device} (profile {profile}): {killed} of {ran} run killed, "
            f"{len(hunts) - ran} not run on this device; {time.monotonic() - start:.0f} s wall (the last kill at "
            f"{last:.0f} s), {workers} at once\n\n{table(hunts)}\n")
    return text, 0 if killed == ran else 1


if __name__ == "__main__":
    sys.exit(main())
