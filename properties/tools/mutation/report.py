"""The mutation report: outcomes of hunted mutants, scored per kernel, operator and killing property.

A result is one dict per mutant (JSON-ready): name, kernel, operator, outcome (killed,
survived, error, not run), killer, seconds, the Hypothesis profile of its last hunt, and the
patch. Survivors carry a disposition
from the dispositions file (docs/mutation-dispositions.json), a JSON object keyed by mutant
name:
    {"NAME": {"disposition": "equivalent", "reason": "why no input can tell it apart"}}
    {"NAME": {"disposition": "answered", "property": "tests/cover/test_x.py::test_y", "reason": "..."}}
The score of a group is killed / (run - equivalent): a survivor without a disposition, or
one answered by a property added since, counts against it until a rerun kills it.
"""

import difflib
import json
from collections import Counter, defaultdict
from pathlib import Path

from samplecheck.mutants import Mutant
from samplecheck.tools.killtable import Hunt

OUTCOMES = ("killed", "survived", "error", "not run")


def outcome(h: Hunt) -> str:
    if not h.ran:
        return "not run"
    if h.killed:
        return "killed"
    return "survived" if h.returncode == 0 else "error"


def result(mutant: Mutant, h: Hunt, profile: str) -> dict:
    return {"name": mutant.name, "kernel": mutant.kernel, "operator": mutant.name.split("-")[1],
            "description": mutant.description, "outcome": outcome(h), "killer": h.killer,
            "seconds": round(h.seconds, 1), "profile": profile, "find": mutant.find, "replace": mutant.replace,
            "output": h.output if outcome(h) in ("survived", "error") else ""}


def load_dispositions(path: Path | None) -> dict:
    return json.loads(path.read_text()) if path is not None and path.exists() else {}


def diff(r: dict) -> str:
    lines = [(r[k] + "\n").splitlines(True) for k in ("find", "replace")]
    return "".join(difflib.unified_diff(*lines, "original", "mutant", n=0)).rstrip()


def _property(killer: str) -> str:
    """The test function of a node id (file::test, without parameters), or the crash/timeout kind."""
    if "::" not in killer:
        return killer.split(" (")[0]
    path, _, test = killer.partition("::")
    return f"{Path(path).name}::{test.split('[')[0]}"


def _score_rows(results: list[dict], key: str, dispositions: dict) -> list[str]:
    groups = defaultdict(list)
    for r in results:
        groups[r[key]].append(r)
    rows = []
    for name, group in sorted(groups.items()):
        count = {o: sum(r["outcome"] == o for r in group) for o in OUTCOMES}
        equivalent = sum(r["outcome"] == "survived" and dispositions.get(r["name"], {}).get("disposition") == "equivalent"
                         for r in group)
        scored = count["killed"] + count["survived"] + count["error"] - equivalent
        score = f"{100 * count['killed'] / scored:.1f}%" if scored else "-"
        rows.append(f"| {name} | {len(group)} | {count['killed']} | {count['survived']} | {equivalent} | "
                    f"{count['error']} | {count['not run']} | {score} |")
    return rows


def summary(results: list[dict], dispositions: dict) -> dict:
    killed = sum(r["outcome"] == "killed" for r in results)
    run = sum(r["outcome"] != "not run" for r in results)
    equivalent = sum(r["outcome"] == "survived" and dispositions.get(r["name"], {}).get("disposition") == "equivalent"
                     for r in results)
    return {"mutants": len(results), "run": run, "killed": killed, "equivalent": equivalent,
            "score": killed / (run - equivalent) if run > equivalent else None}


def markdown(results: list[dict], dispositions: dict, header: str) -> str:
    s = summary(results, dispositions)
    score = f"{100 * s['score']:.1f}%" if s["score"] is not None else "-"
    head = "| {} | mutants | killed | survived | equivalent | error | not run | score |\n|---|---|---|---|---|---|---|---|"
    lines = [header, "",
             f"{s['mutants']} mutants, {s['run']} run, {s['killed']} killed, {s['equivalent']} survivors equivalent: "
             f"score {score} (killed / (run - equivalent)).", "",
             "## Per kernel", "", head.format("kernel"), *_score_rows(results, "kernel", dispositions), "",
             "## Per operator", "", head.format("operator"), *_score_rows(results, "operator", dispositions), "",
             "## Per killing property", "",
             "| property | mutants killed first | median time to kill | under profile |", "|---|---|---|---|"]
    kills = defaultdict(list)
    for r in results:
        if r["outcome"] == "killed":
            kills[_property(r["killer"])].append(r)
    for prop, killed in sorted(kills.items(), key=lambda kv: -len(kv[1])):
        times = sorted(r["seconds"] for r in killed)
        # Results written before hunts recorded their profile carry none.
        profiles = Counter(r.get("profile", "unrecorded") for r in killed)
        under = ", ".join(f"{name} {n}" for name, n in sorted(profiles.items()))
        lines.append(f"| {prop} | {len(killed)} | {times[len(times) // 2]:.0f} s | {under} |")
    lines += ["", "## Survivors and errors", ""]
    for r in results:
        if r["outcome"] in ("survived", "error"):
            d = dispositions.get(r["name"], {})
            verdict = d.get("disposition", "OPEN: no disposition recorded")
            because = "; ".join(x for x in (d.get("property"), d.get("reason")) if x)
            lines += [f"### {r['name']} ({r['outcome']}): {verdict}" + (f": {because}" if because else ""), "",
                      r["description"], "", "```diff", diff(r), "```", ""]
    return "\n".join(lines) + "\n"
