"""The nightly report: from per-test results files (`--sc-results`) and the previous
nights' report JSON, three files in one folder:

- report.html: a self-contained page (`page.render`);
- report.json: the numbers and every test record, for machines and for the next night's
  comparison (`data.summarise`);
- summary.md: a short markdown message for a chat channel (`markdown`).
"""

import json
import time
from pathlib import Path

from samplecheck.tools.report import data, page

HTML, JSON, MARKDOWN = "report.html", "report.json", "summary.md"
LISTED = 10


def markdown(report: dict, link: str | None = None) -> str:
    """A few lines: the summary line, new and fixed failures, the worst offenders."""
    ch = report["changes"]
    lines = [f"**samplecheck nightly**: {report['line']}"]
    if link:
        lines.append(f"Report: {link}")
    for key, title in (("new_failures", "New failures"), ("fixed", "Fixed")):
        if ch[key]:
            lines.append(f"{title} ({len(ch[key])}):")
            lines += [f"- `{t}`" for t in ch[key][:LISTED]]
            if len(ch[key]) > LISTED:
                lines.append(f"- ... and {len(ch[key]) - LISTED} more")
    if ch["previous"] is None and report["failures"]:
        lines.append(f"Failing: {len(report['failures'])} (no previous night to compare with; see the report)")
    elif ch["still_failing"]:
        lines.append(f"Still failing: {len(ch['still_failing'])} (see the report)")
    if report["checks"]["rejections"]:
        c = report["checks"]
        lines.append(f"Sampling checks rejected: {c['rejected']} of {c['n']}, in {len(c['rejections'])} tests "
                     f"({c['expected_false_alarms']:.2g} false alarms expected)")
    return "\n".join(lines) + "\n"


def build(results: list[Path], out: Path, history: Path | None = None, meta: dict | None = None,
          link: str | None = None) -> dict:
    """Write the three report files for the run in `results` (its pieces) into `out`,
    comparing with the nights in `history`; `meta` adds to the run's meta (budget, commit, ...).
    Returns the report."""
    run = data.load_results(results)
    run["meta"].update(meta or {})
    report = data.summarise(run, data.load_history(history))
    out.mkdir(parents=True, exist_ok=True)
    (out / JSON).write_text(json.dumps(report, indent=1))
    (out / HTML).write_text(page.render(report, JSON))
    (out / MARKDOWN).write_text(markdown(report, link))
    return report


def keep_in_history(report_json: Path, history: Path) -> Path:
    """Copy tonight's report JSON into the history folder, named by its start time."""
    report = json.loads(report_json.read_text())
    history.mkdir(parents=True, exist_ok=True)
    target = history / (time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(report["meta"]["started"])) + ".json")
    target.write_text(report_json.read_text())
    return target
