"""The nightly report's numbers, from per-test results (`samplecheck.harness.results`) and the
previous nights' report JSON: outcome counts, the matrix, coverage, the sampling checks'
p-values and false alarms, time, and what changed since the previous night.

Everything here is plain data (dicts, lists, numbers), so the same summary goes into the
report's JSON, its HTML page and its markdown message.
"""

import gzip
import json
import re
import time
from collections import Counter, defaultdict
from pathlib import Path

from samplecheck.harness.results import BUDGET_SPENT

OUTCOMES = ("failed", "error", "xpassed", "passed", "xfailed", "skipped", "budget")
BAD = ("failed", "error", "xpassed")
SLOWEST = 15
# A coverage label's dimension (`samplecheck.inputs.coverage`): a short name; Hypothesis' own
# events ("Retried draw from ... to satisfy filter") are longer sentences.
COVERAGE_DIMENSION = re.compile(r"^[\w+ -]{1,24}$")
ADDRESS = re.compile(r" at 0x[0-9a-f]+")
DRAWN_CASE = re.compile(r"Draw \d+ \(case\): |data=(?=Replay\()")


def read_json(path: Path) -> dict:
    """A JSON file, gzip-compressed when its name ends in .gz."""
    path = Path(path)
    if path.suffix == ".gz":
        with gzip.open(path, "rt") as f:
            return json.load(f)
    return json.loads(path.read_text())


def load_results(paths: list[Path]) -> dict:
    """One run from the results files of its pieces: records merged (a later file's record of
    the same test wins), meta from the first file with the earliest start and latest end."""
    runs = [read_json(p) for p in paths]
    if not runs:
        raise ValueError("no results files given")
    records = {}
    for run in runs:
        for record in run["tests"]:
            records[record["nodeid"]] = record
    meta = dict(runs[0]["meta"])
    meta["started"] = min(r["meta"]["started"] for r in runs)
    meta["finished"] = max(r["meta"]["finished"] for r in runs)
    meta["exit_status"] = max(r["meta"]["exit_status"] for r in runs)
    meta["pieces"] = len(runs)
    return {"meta": meta, "tests": list(records.values())}


def load_history(folder: Path | None) -> list[dict]:
    """Previous nights' report JSON in `folder`, oldest first (unreadable files are skipped)."""
    if folder is None or not folder.is_dir():
        return []
    nights = []
    for path in [*folder.glob("*.json"), *folder.glob("*.json.gz")]:
        try:
            night = read_json(path)
        except (OSError, ValueError):
            continue
        if "tests" in night and "meta" in night:
            nights.append(night)
    return sorted(nights, key=lambda n: n["meta"]["started"])


def outcome(record: dict) -> str:
    """The record's outcome, with tests skipped for a spent budget counted apart."""
    if record["outcome"] == "skipped" and record.get("message") == BUDGET_SPENT:
        return "budget"
    return record["outcome"]


def counts(records: list[dict]) -> dict:
    tally = Counter(outcome(r) for r in records)
    return {name: tally.get(name, 0) for name in OUTCOMES}


def matrix(records: list[dict]) -> dict:
    """{"properties": [...], "rows": [{"kernel", "backend", "dtype", "layout", "cells": {property: nodeid}}]}
    over the tests that ran on a registry combo."""
    properties, rows = [], {}
    for r in records:
        if r.get("dtype") is None:
            continue
        if r["property"] not in properties:
            properties.append(r["property"])
        key = (r["kernel"], r["backend"], r["dtype"], r["layout"])
        rows.setdefault(key, {})[r["property"]] = r["nodeid"]
    return {"properties": properties,
            "rows": [{"kernel": k, "backend": b, "dtype": d, "layout": l, "cells": cells}
                     for (k, b, d, l), cells in sorted(rows.items())]}


def other_tests(records: list[dict]) -> list[dict]:
    """Outcome counts per property for the tests outside the combo matrix."""
    table = defaultdict(Counter)
    for r in records:
        if r.get("dtype") is None:
            table[r["property"]][outcome(r)] += 1
    return [{"property": p, **{o: c.get(o, 0) for o in OUTCOMES}} for p, c in sorted(table.items())]


def coverage(records: list[dict]) -> dict:
    """{dimension: {bucket: examples}} summed over every test, from the "DIMENSION: BUCKET"
    event labels (`samplecheck.inputs.coverage`), the events Hypothesis reports itself
    (filter retries, ...), and the target() maxima per label."""
    dims: dict[str, Counter] = defaultdict(Counter)
    own: Counter = Counter()
    targets: dict[str, float] = {}
    for r in records:
        for label, n in r.get("events", {}).items():
            dimension, _, bucket = label.partition(": ")
            if bucket and COVERAGE_DIMENSION.match(dimension):
                dims[dimension][bucket] += n
            else:
                own[ADDRESS.sub("", label)] += n
        for label, value in r.get("targets", {}).items():
            targets[label] = max(targets.get(label, float("-inf")), value)
    return {"dimensions": {d: dict(sorted(c.items(), key=_bucket_order)) for d, c in sorted(dims.items())},
            "targets": dict(sorted(targets.items())), "hypothesis_events": dict(own.most_common()),
            "examples": sum(r.get("examples", 0) for r in records)}


def _bucket_order(item):
    """Numeric buckets by their first number, then the rest by name."""
    text = item[0].lstrip("<>=")
    head = text.split("-")[0].split(" ")[0]
    try:
        return (0, float(head), item[0])
    except ValueError:
        return (1, 0.0, item[0])


def checks(records: list[dict]) -> dict:
    """Every sampling check's p-values (G-test and excess test, each at the plan's level
    `share`), the tests whose checks rejected, and the number of rejections the stated levels
    expect if every kernel were correct (the sum of the levels): calibration in the wild.
    Left out: checks in tests marked xfail (known defects) and in tests outside the matrix
    (the checks' own tests, which feed them biased samples on purpose); vacuous G-tests (one
    bin) from the G p-values. Rejections are grouped per test (a failing test repeats its
    check while Hypothesis shrinks), with the test's outcome."""
    g, excess, expected, vacuous = [], [], 0.0, 0
    fired: dict[str, dict] = {}
    for r in records:
        if outcome(r) not in ("passed", "failed") or not r.get("kernel"):
            continue
        for gp, ep, share, name, *df in r.get("checks", []):
            if df and df[0] == 0:
                vacuous += 1  # one bin: the G-test is 0 with p = 1 and says nothing
            else:
                g.append(gp)
                expected += share
            excess.append(ep)
            expected += share
            if name in ("G", "excess"):
                p = gp if name == "G" else ep
                entry = fired.setdefault(r["nodeid"], {"nodeid": r["nodeid"], "outcome": outcome(r), "count": 0,
                                                       "check": name, "p": p, "level": share})
                entry["count"] += 1
                if p < entry["p"]:
                    entry.update(check=name, p=p, level=share)
    return {"g": g, "excess": excess, "n": len(excess), "vacuous_g": vacuous,
            "expected_false_alarms": expected, "rejections": list(fired.values()),
            "rejected": sum(e["count"] for e in fired.values()),
            "below_1pct": {"g": sum(p < 0.01 for p in g), "excess": sum(p < 0.01 for p in excess)}}


def timing(records: list[dict]) -> dict:
    per_property = defaultdict(float)
    for r in records:
        per_property[r["property"]] += r.get("duration", 0.0)
    slow_tests = sorted(records, key=lambda r: -r.get("duration", 0.0))[:SLOWEST]
    slow_cases = sorted((r for r in records if r.get("slowest_case")), key=lambda r: -r["slowest_case"]["seconds"])
    return {"per_property": dict(sorted(per_property.items(), key=lambda kv: -kv[1])),
            "total": sum(per_property.values()),
            "slowest_tests": [{"nodeid": r["nodeid"], "seconds": r.get("duration", 0.0),
                               "examples": r.get("examples", 0)} for r in slow_tests],
            "slowest_cases": [{"nodeid": r["nodeid"], "seconds": r["slowest_case"]["seconds"],
                               "case": drawn_case(r["slowest_case"]["case"])} for r in slow_cases[:SLOWEST]]}


def drawn_case(representation: str) -> str:
    """The case in Hypothesis' representation of a test call (the drawn case, or the
    replayed regression), on one line."""
    match = DRAWN_CASE.search(representation)
    text = representation[match.end():] if match else representation
    return " ".join(line.strip() for line in text.splitlines()).removesuffix(" )").strip()


def changes(records: list[dict], history: list[dict]) -> dict:
    """What changed since the latest previous night: new and fixed failures, and the trends
    of time, examples and checks over every previous night (oldest first)."""
    trend = [{"started": n["meta"]["started"], "seconds": n.get("timing", {}).get("total", 0.0),
              "examples": n.get("coverage", {}).get("examples", 0), "failed": n.get("counts", {}).get("failed", 0),
              "tests": len(n["tests"])} for n in history]
    if not history:
        return {"previous": None, "new_failures": [], "fixed": [], "still_failing": [], "trend": trend}
    before = {r["nodeid"]: outcome(r) for r in history[-1]["tests"]}
    now = {r["nodeid"]: outcome(r) for r in records}
    return {"previous": history[-1]["meta"]["started"],
            "new_failures": sorted(t for t, o in now.items() if o in BAD and before.get(t) not in BAD),
            "fixed": sorted(t for t, o in now.items() if o == "passed" and before.get(t) in BAD),
            "still_failing": sorted(t for t, o in now.items() if o in BAD and before.get(t) in BAD),
            "trend": trend}


def summarise(run: dict, history: list[dict]) -> dict:
    """The report's JSON: the run's records and meta with every summary above."""
    records = run["tests"]
    tally = counts(records)
    summary = {
        "meta": run["meta"], "counts": tally, "matrix": matrix(records), "other": other_tests(records),
        "coverage": coverage(records), "checks": checks(records), "timing": timing(records),
        "changes": changes(records, history),
        "failures": [r for r in records if outcome(r) in BAD],
        "tests": records,
    }
    summary["line"] = summary_line(summary)
    return summary


def summary_line(summary: dict) -> str:
    """One line for a CI job's log."""
    c, meta, ch = summary["counts"], summary["meta"], summary["changes"]
    bad = sum(c[o] for o in BAD)
    parts = [f"{sum(c.values())} tests", f"{c['passed']} passed", f"{bad} failing ({len(ch['new_failures'])} new)",
             f"{c['xfailed']} xfailed", f"{c['skipped']} skipped"]
    if c["budget"]:
        parts.append(f"{c['budget']} not reached in the budget")
    checks_ = summary["checks"]
    wall = meta["finished"] - meta["started"]
    return (f"nightly {time.strftime('%Y-%m-%d', time.gmtime(meta['started']))} on {meta['device']} "
            f"({meta['profile']}): " + ", ".join(parts)
            + f"; {checks_['n']} sampling checks, {checks_['rejected']} rejected in {len(checks_['rejections'])} tests "
            f"({checks_['expected_false_alarms']:.2g} false alarms expected); {wall:.0f} s")
