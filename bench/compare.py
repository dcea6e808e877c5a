"""Regression check: our time per op and size in a new benchmark run against a stored baseline.

    python -m bench.compare bench/baselines/h200.json NEW.json [--threshold 15] [--floor-us 1]

Both files are `python -m bench.kernels --json` results (bench.report). For every (op, size)
that both measured, our time (`ours.us`, net of the restore copy) is slower when it exceeds
the baseline's by more than `threshold` percent AND by more than `floor_us` microseconds (a
figure of a few µs moves by more than 15% from noise alone). Prints one line per slower
pair, then a summary (also naming pairs that got faster, pairs present in one run only, and
a copy-time drift that says the machines differ). Timings are noisy, so this reports and
never fails: the exit status is 0 whatever it finds.
"""

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

THRESHOLD_PCT = 15.0
FLOOR_US = 1.0


@dataclass(frozen=True)
class Change:
    op: str
    size: str
    before_us: float
    after_us: float

    @property
    def pct(self) -> float:
        return 100 * (self.after_us - self.before_us) / self.before_us

    def line(self, word: str) -> str:
        return (f"{word} {self.op} @ {self.size}: {self.before_us:.1f} -> {self.after_us:.1f} µs "
                f"({self.pct:+.1f}%)")


def _ours(result: dict) -> dict[tuple[str, str], float]:
    """Our net time by (op, size), for the cells that were measured."""
    return {(row["op"], row["size"]): row["ours"]["us"] for row in result["rows"]
            if row["ours"]["status"] == "ok"}


def _copies(result: dict) -> dict[str, float]:
    return {row["size"]: row["copy_us"] for row in result["rows"]}


def _significant(delta_us: float, before_us: float, threshold_pct: float, floor_us: float) -> bool:
    """True when a change of `delta_us` (> 0) from `before_us` exceeds both the threshold and the floor."""
    return delta_us > floor_us and delta_us > threshold_pct / 100 * abs(before_us)


def compare(baseline: dict, new: dict, *, threshold_pct: float = THRESHOLD_PCT,
            floor_us: float = FLOOR_US) -> tuple[list[Change], list[str]]:
    """(the slower (op, size) pairs, every report line: one per slower pair, then the summary)."""
    before, after = _ours(baseline), _ours(new)
    changes = [Change(op, size, before[op, size], after[op, size]) for op, size in before if (op, size) in after]
    slower = [c for c in changes if _significant(c.after_us - c.before_us, c.before_us, threshold_pct, floor_us)]
    faster = [c for c in changes if _significant(c.before_us - c.after_us, c.before_us, threshold_pct, floor_us)]
    lines = [c.line("SLOWER") for c in slower]
    lines.append(f"summary: {len(changes)} op/size pairs compared, {len(slower)} more than {threshold_pct:g}% "
                 f"(and {floor_us:g} µs) slower, {len(faster)} as much faster")
    lines += ["  " + c.line("faster") for c in faster]
    only_before = sorted(set(before) - set(after))
    only_after = sorted(set(after) - set(before))
    if only_before:
        lines.append("  not measured in the new run: " + ", ".join(f"{op} @ {size}" for op, size in only_before))
    if only_after:
        lines.append("  not in the baseline: " + ", ".join(f"{op} @ {size}" for op, size in only_after))
    copies_before, copies_after = _copies(baseline), _copies(new)
    for size in sorted(set(copies_before) & set(copies_after)):
        copy = Change("copy", size, copies_before[size], copies_after[size])
        if abs(copy.pct) > threshold_pct:
            lines.append("  " + copy.line("the restore copy moved:") + ": another machine or a busy GPU?")
    dtypes = [result["meta"].get("dtype", "bf16") for result in (baseline, new)]
    if dtypes[0] != dtypes[1]:
        lines.append(f"  the runs timed different logits dtypes: {dtypes[0]} vs {dtypes[1]}")
    if baseline["meta"]["device"] != new["meta"]["device"]:
        lines.append(f"  the runs were on different devices: {baseline['meta']['device']} vs {new['meta']['device']}")
    return slower, lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__.split("\n\n")[0])
    parser.add_argument("baseline", type=Path, help="a stored result, e.g. bench/baselines/h200.json")
    parser.add_argument("new", type=Path, help="the run to check (python -m bench.kernels --json FILE)")
    parser.add_argument("--threshold", type=float, default=THRESHOLD_PCT,
                        help=f"percent slower that is reported (default {THRESHOLD_PCT:g})")
    parser.add_argument("--floor-us", type=float, default=FLOOR_US,
                        help=f"µs slower below which nothing is reported (default {FLOOR_US:g})")
    args = parser.parse_args(argv)
    baseline, new = (json.loads(path.read_text()) for path in (args.baseline, args.new))
    print("\n".join(compare(baseline, new, threshold_pct=args.threshold, floor_us=args.floor_us)[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
