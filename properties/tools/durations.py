"""Write the suite's expected test durations for one device type into the table the run order
reads (samplecheck.harness.ordering), from the results file of a run under the gate profile:

    samplecheck gate --device cuda --out OUT            # writes OUT/gate-results.json
    python -m samplecheck.tools.durations OUT/gate-results.json --device cuda

Each entry is the mean duration of the tests sharing a (test function, record, backend); the
device's other entries are replaced, other devices' kept.
"""

import argparse
import json
import statistics
import sys
from pathlib import Path

from samplecheck.harness.ordering import TABLE, key


def means(results: dict) -> dict[str, float]:
    """{key: mean seconds} over a results file's tests (samplecheck.harness.results)."""
    groups: dict[str, list[float]] = {}
    for test in results["tests"]:
        name = key(test["property"], test.get("kernel") or "", test.get("backend") or "")
        groups.setdefault(name, []).append(float(test.get("duration", 0.0)))
    return {name: round(statistics.fmean(values), 3) for name, values in sorted(groups.items())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m samplecheck.tools.durations", description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, help="a run's --sc-results JSON (gate-results.json)")
    parser.add_argument("--device", choices=("cuda", "cpu"), required=True, help="the device type the run used")
    parser.add_argument("--table", type=Path, default=TABLE, help=f"the table to update (default {TABLE})")
    args = parser.parse_args(argv)
    if not args.results.is_file():
        parser.error(f"results: no such file: {args.results}")
    try:
        measured = means(json.loads(args.results.read_text()))
    except (ValueError, KeyError) as err:
        parser.error(f"results: {args.results} is not a --sc-results file ({err})")
    table = json.loads(args.table.read_text()) if args.table.is_file() else {}
    table[args.device] = measured
    args.table.write_text(json.dumps(table, indent=0, sort_keys=True) + "\n")
    print(f"{args.table}: {len(measured)} {args.device} entries from {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
