"""The slowest tests of a pytest-reportlog file (`--report-log=F`: one JSON line per test
phase, appended as tests finish, so a run stopped by a time limit keeps what it finished):

    python scripts/slowest.py F [N]

Prints a markdown table of the N (default 30) longest tests (setup + call + teardown) and the
summed time per test file and per backend in the test id."""

import collections
import json
import re
import sys

COMBO = re.compile(r"\[[a-z_]+-([a-z0-9_-]+?)-(?:fp32|bf16|fp16)-")  # record-backend-dtype-layout ids


def durations(path: str) -> dict[str, float]:
    """Seconds per test id, all phases summed."""
    total: dict[str, float] = collections.defaultdict(float)
    with open(path) as lines:
        for line in lines:
            entry = json.loads(line)
            if entry.get("$report_type") == "TestReport":
                total[entry["nodeid"]] += entry.get("duration", 0.0)
    return total


def main() -> None:
    path, count = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 30
    total = durations(path)
    print(f"{len(total)} tests, {sum(total.values()):.0f} s summed\n")
    print("| s | test |\n|---|---|")
    for test, seconds in sorted(total.items(), key=lambda item: -item[1])[:count]:
        print(f"| {seconds:.1f} | {test} |")
    for title, key in (("file", lambda t: t.split("::")[0]),
                       ("backend", lambda t: (COMBO.search(t) or [None, "(not a combo)"])[1])):
        groups = collections.Counter()
        for test, seconds in total.items():
            groups[key(test)] += seconds
        print(f"\n| {title} | s summed |\n|---|---|")
        for name, seconds in groups.most_common():
            print(f"| {name} | {seconds:.0f} |")


if __name__ == "__main__":
    main()
