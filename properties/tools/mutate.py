"""Mutation analysis of our kernels: generated mutants against the suite, scored.

    samplecheck mutate [--kernels K ...] [--modules M ...] [--operators OP ...] [--sample N] [--mutants NAME ...] [--device D]
                       [--profile P] [--workers N] [--timeout S] [--budget S] [--tests PATH ...]
                       [--dispositions FILE] [--out DIR] [--list]
    samplecheck mutate --merge DIR/mutation.json ... [--out DIR]

Mutants come from `samplecheck.tools.mutation.generate` (standard operators over the kernel
modules' code and the helper modules they import; see samplecheck.tools.mutation.operators);
`--modules` keeps those of the named modules of samplecheck.kernels (e.g. cut_search) among
the selected kernels' (every kernel's by default); those that fail to import are
dropped (counted in the report). They are written to OUT/mutants.json, which the
SAMPLECHECK_GENERATED_MUTANTS variable makes resolvable by `pytest --sc-mutant=NAME` in every
hunt's process; each runs the fast suite's tests of that mutant alone
(`samplecheck.tools.killtable.hunt`: -k mutant-NAME, -x, exact properties first), WORKERS at once;
`--budget` bounds the whole run's wall time (mutants it leaves unfinished are not scored).
Under the nightly profile a mutant is hunted first under the gate profile (the suite's 30
derandomized examples per test) and only if it survives that, under nightly: a test that
fails is a kill under either, and a nightly pass runs every example of each test it passes
before it reaches the next one, so a mutant that only a late test catches would otherwise
take minutes to be killed. The report says under which profile each kill came.
OUT/mutation.json holds every outcome and OUT/mutation.md the report (score per kernel,
operator and killing property; survivors with their diff and recorded disposition).
`--merge` reports over several runs' results (e.g. one per kernel group); where several hold
the same mutant, the last file's result stands (a re-hunt of some mutants with `--mutants`,
after the suite gained a property). Exits 1 when a scored survivor has no disposition.
"""

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, replace
from pathlib import Path

from samplecheck import mutants as machinery
from samplecheck.tools import flags
from samplecheck.tools.killtable import Hunt, hunt
from samplecheck.tools.mutation import report
from samplecheck.tools.mutation.generate import generate, importable, targets
from samplecheck.tools.mutation.operators import ALL

DISPOSITIONS = Path("docs/mutation-dispositions.json")


def sample(mutants: list, per_group: int | None) -> list:
    """At most `per_group` mutants per (kernel, operator), evenly spread over the module."""
    if per_group is None:
        return mutants
    groups: dict[tuple[str, str], list] = {}
    for m in mutants:
        groups.setdefault((m.kernel, m.name.split("-")[1]), []).append(m)
    kept = []
    for group in groups.values():
        step = max(len(group) / per_group, 1)
        kept += [group[int(i * step)] for i in range(min(per_group, len(group)))]
    return kept


def build(kernels: list[str] | None, operators: tuple[str, ...], per_group: int | None,
          names: list[str] | None = None, modules: list[str] | None = None) -> tuple[list, list[str]]:
    """The importable mutants of the selected kernels' targets (of the kernel-package modules
    `modules` alone, when given; those named in `names` alone, when given), and the import
    failures."""
    every = targets()
    for flag, wanted, known in (("--kernels", kernels, [t.kernel for t in every]),
                                ("--modules", modules, [t.module.rsplit(".", 1)[-1] for t in every])):
        unknown = sorted(set(wanted or ()) - set(known))
        if unknown:
            raise SystemExit(f"{flag}: each must be one of {', '.join(dict.fromkeys(known))}; got {' '.join(unknown)}")
    chosen = [t for t in every if (kernels is None or t.kernel in kernels)
              and (modules is None or t.module.rsplit(".", 1)[-1] in modules)]
    mutants, failures, seen = [], [], set()
    for target in chosen:
        # A helper's patch reached through several importers is hunted through the first alone.
        fresh = [m for m in generate(target, operators) if (m.kernel, m.module, m.find, m.replace) not in seen]
        seen.update((m.kernel, m.module, m.find, m.replace) for m in fresh)
        for mutant in sample(fresh, per_group):
            if names is not None and mutant.name not in names:
                continue
            error = importable(mutant)
            if error is None:
                mutants.append(mutant)
            else:
                failures.append(f"{mutant.name}: {error}")
    return mutants, failures


def main(argv=None) -> int:
    parser = flags.parser("mutate", __doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernels", nargs="+", default=None, help="registry records (default: every Triton kernel)")
    parser.add_argument("--modules", nargs="+", default=None,
                        help="only these modules of samplecheck.kernels (entry or helper, e.g. cut_search)")
    parser.add_argument("--operators", nargs="+", default=list(ALL), choices=ALL)
    parser.add_argument("--sample", type=int, default=None, help="at most N mutants per kernel and operator")
    parser.add_argument("--mutants", nargs="+", default=None,
                        help="hunt only these generated mutants (names as in a report; the same --sample)")
    flags.add_suite_flags(parser, backends=False, mutant=False, stat_alpha=False)
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1), help="mutants hunted at once")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per mutant; beyond it the mutant counts as a hang (killed)")
    parser.add_argument("--budget", type=float, default=None,
                        help="wall seconds for the whole hunt: mutants not finished within it are 'not run' (unscored)")
    parser.add_argument("--tests", nargs="+", default=None, help="test files or node ids instead of the fast suite")
    parser.add_argument("--dispositions", type=Path, default=DISPOSITIONS)
    parser.add_argument("--out", type=Path, default=Path("mutation"))
    parser.add_argument("--list", action="store_true", help="generate and list the mutants, hunt none")
    parser.add_argument("--merge", nargs="+", type=Path, default=None, help="report over these mutation.json files")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    dispositions = report.load_dispositions(args.dispositions)

    if args.merge:
        runs = [json.loads(p.read_text()) for p in args.merge]
        results = list({r["name"]: r for run in runs for r in run["results"]}.values())
        header = "# Mutation analysis (merged: " + "; ".join(run["header"] for run in runs) + ")"
        return _write(args.out, results, dispositions, header, runs[0].get("import_failures", []))

    # The device is checked before mutants are generated (minutes), though --list needs none.
    chosen = None if args.list else flags.suite_flags(parser, args)
    start = time.monotonic()
    mutants, failures = build(args.kernels, tuple(args.operators), args.sample, args.mutants, args.modules)
    missing = sorted(set(args.mutants or ()) - {m.name for m in mutants})
    if missing:
        raise SystemExit(f"--mutants: not generated (other --kernels, --sample or sources?): {' '.join(missing)}")
    generated = args.out / "mutants.json"
    generated.write_text(json.dumps([asdict(m) for m in mutants], indent=1))
    if args.list:
        for m in mutants:
            print(f"{m.name}  {'/'.join(m.devices)}  {m.description}")
        print(f"{len(mutants)} mutants ({len(failures)} more failed to import), written to {generated}")
        return 0
    os.environ[machinery.GENERATED_ENV] = str(generated.resolve())
    device, profile = chosen.device, chosen.resolved_profile
    deadline = None if args.budget is None else start + args.budget
    with ThreadPoolExecutor(args.workers) as pool:
        hunts = list(pool.map(lambda m: _escalate(m.name, device, profile, args, deadline), mutants))
    results = [report.result(m, h, p) for m, (h, p) in zip(mutants, hunts)]
    header = (f"Mutation analysis on {device}, profile {profile}: {len(mutants)} mutants, "
              f"{time.monotonic() - start:.0f} s wall, {args.workers} hunted at once")
    return _write(args.out, results, dispositions, "# " + header, failures)


def rungs(profile: str) -> tuple[str, ...]:
    """The profiles a mutant is hunted under, in order, for the requested `profile`."""
    return ("gate", "nightly") if profile == "nightly" else (profile,)


def _escalate(name: str, device: str, profile: str, args, deadline: float | None) -> tuple[Hunt, str]:
    """The mutant hunted under each of `rungs(profile)` until one kills it or leaves it
    unfinished or in error; the last hunt (its seconds summed over the rungs) and its profile."""
    spent = 0.0
    for rung in rungs(profile):
        result = _hunt_within(name, device, rung, args, deadline)
        spent += result.seconds
        if report.outcome(result) != "survived":
            break
    return replace(result, seconds=spent), rung


def _hunt_within(name: str, device: str, profile: str, args, deadline: float | None) -> Hunt:
    """`hunt` with the per-mutant timeout, cut to what is left of the budget; a hunt the budget
    cut short is 'not run' (a hang counts as killed only when it outran --timeout itself)."""
    left = args.timeout if deadline is None else deadline - time.monotonic()
    if left <= 0:
        return Hunt(name, False, False, None, 0.0, "not run: --budget spent before it started")
    if left >= args.timeout:
        return hunt(name, device, profile, args.timeout, args.tests, args.workers)
    result = hunt(name, device, profile, left, args.tests, args.workers)
    if result.killer is not None and result.killer.startswith("timeout"):
        return Hunt(name, False, False, None, result.seconds, "not run: --budget spent while it ran")
    return result


def _write(out: Path, results: list[dict], dispositions: dict, header: str, failures: list[str]) -> int:
    text = report.markdown(results, dispositions, header)
    if failures:
        text += f"\n## Mutants that failed to import ({len(failures)}, not scored)\n\n" + "\n".join(f"- {f}" for f in failures) + "\n"
    (out / "mutation.md").write_text(text)
    (out / "mutation.json").write_text(json.dumps({"header": header.lstrip("# "), "summary": report.summary(results, dispositions),
                                                   "results": results, "import_failures": failures}, indent=1))
    print(text)
    open_survivors = [r["name"] for r in results if r["outcome"] in ("survived", "error") and r["name"] not in dispositions]
    return 1 if open_survivors else 0


if __name__ == "__main__":
    sys.exit(main())
