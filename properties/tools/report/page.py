"""The nightly report as one self-contained HTML page: inline CSS, plots as data URIs, no
script and no external asset, so it opens from a CI artifact or an e-mail attachment."""

import html
import time

from samplecheck.harness.results import MEASURED
from samplecheck.tools.report import plots
from samplecheck.tools.report.data import BAD, OUTCOMES, outcome

SECTIONS = (("summary", "Summary"), ("changes", "Since the previous night"), ("matrix", "Matrix"),
            ("failures", "Failures"), ("coverage", "Coverage of the input space"),
            ("checks", "Statistical checks"), ("time", "Time"), ("other", "Other tests"))
SYMBOL = {"passed": "✓", "failed": "✗", "error": "E", "xpassed": "X!", "xfailed": "x", "skipped": "–",
          "budget": "○"}
MEANING = {"passed": "passed", "failed": "failed", "error": "error outside the test body",
           "xpassed": "passed but marked xfail (strict)", "xfailed": "known defect (xfail)",
           "skipped": "skipped (declared)", "budget": "not reached in the time budget"}
# Added to a passed cell's symbol where the test measured a behaviour the backend does not
# declare (its tooltip says what: e.g. a batch-invariance difference).
MEASURED_MARK = "*"
EVENTS_SHOWN = 10  # Hypothesis' own events listed open; the rest fold away
CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:0;color:#1f2328;background:#fff;
 font-size:14px;line-height:1.45}
header{background:#24292f;color:#fff;padding:14px 24px}
header h1{margin:0;font-size:20px} header p{margin:4px 0 0;color:#d0d7de}
nav{padding:8px 24px;border-bottom:1px solid #d0d7de;background:#f6f8fa;position:sticky;top:0}
nav a{margin-right:14px;color:#0969da;text-decoration:none}
main{padding:0 24px 40px;max-width:1400px}
h2{border-bottom:1px solid #d0d7de;padding-bottom:4px;margin-top:28px}
table{border-collapse:collapse;margin:8px 0} th,td{border:1px solid #d0d7de;padding:3px 7px;text-align:left}
th{background:#f6f8fa;font-weight:600} td.num{text-align:right;font-variant-numeric:tabular-nums}
table.matrix td.cell{text-align:center;width:44px;font-weight:700}
details{margin:6px 0} summary{cursor:pointer;padding:4px 0}
table.overview td{text-align:center;font-size:12px;white-space:nowrap;min-width:36px}
table.overview td:first-child{text-align:left}
th.prop{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap;font-size:12px}
tr.kernel th{background:#eaeef2;font-size:13px}
.passed{background:#dafbe1;color:#116329} .failed{background:#ffd7d5;color:#a40e26}
.error{background:#a40e26;color:#fff} .xpassed{background:#e9d5ff;color:#6b21a8}
.xfailed{background:#fff1c2;color:#7d4e00} .skipped{background:#f6f8fa;color:#57606a}
.budget{background:#ddf4ff;color:#0550ae} .none{background:#fff}
td.cell a{color:inherit;text-decoration:none;display:block}
.badges span{display:inline-block;padding:4px 10px;margin:2px 6px 2px 0;border-radius:12px;font-weight:600}
pre{background:#f6f8fa;border:1px solid #d0d7de;padding:8px;white-space:pre-wrap;word-break:break-all;
 font-size:12px;margin:4px 0}
pre.cmd{background:#0d1117;color:#e6edf3}
.failure{border-left:4px solid #cf222e;padding:2px 0 2px 12px;margin:14px 0}
.failure h3{font-size:14px;margin:0 0 4px;word-break:break-all}
.grid{display:flex;flex-wrap:wrap;gap:10px;align-items:flex-start} .grid img{border:1px solid #d0d7de}
.note{color:#57606a} .missing{background:#fff8c5;border:1px solid #d4a72c;padding:8px}
"""


def _e(text) -> str:
    return html.escape(str(text))


def _when(epoch: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(epoch))


def _img(uri: str | None, alt: str) -> str:
    return f'<img src="{uri}" alt="{_e(alt)}">' if uri else ""


def _badges(counts: dict) -> str:
    return '<p class="badges">' + "".join(f'<span class="{o}">{counts[o]} {MEANING[o]}</span>'
                                          for o in OUTCOMES if counts[o]) + "</p>"


def summary_section(report: dict, report_name: str) -> str:
    meta = report["meta"]
    rows = [("started", _when(meta["started"])), ("wall time", f"{meta['finished'] - meta['started']:.0f} s"),
            ("device", meta["device"]), ("Hypothesis profile", meta["profile"]),
            ("examples drawn", report["coverage"]["examples"]), ("pytest exit status", meta["exit_status"])]
    rows += [(key, meta[key]) for key in ("budget", "examples_per_test", "database", "commit", "mutant", "pieces")
             if meta.get(key) not in (None, "")]
    table = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in rows)
    return (f"<p><b>{_e(report['line'])}</b></p>{_badges(report['counts'])}<table>{table}</table>"
            f'<p class="note">Machine-readable: <code>{_e(report_name)}</code> (the same numbers, every test record).</p>')


def changes_section(report: dict, trend_uri: str | None) -> str:
    ch = report["changes"]
    if ch["previous"] is None:
        return '<p class="note">No previous night in the history folder: nothing to compare with.</p>'
    parts = [f"<p>Compared with the night of {_when(ch['previous'])}.</p>"]
    for key, title in (("new_failures", "New failures"), ("fixed", "Fixed (failing before, passing now)"),
                       ("still_failing", "Still failing")):
        items = "".join(f"<li><code>{_e(t)}</code></li>" for t in ch[key]) or "<li>none</li>"
        parts.append(f"<h3>{title}: {len(ch[key])}</h3><ul>{items}</ul>")
    parts.append(_img(trend_uri, "trends over nights"))
    return "".join(parts)


def _worst(outcomes) -> str:
    return next((o for o in OUTCOMES if o in outcomes), "none")


def matrix_overview(m: dict, by_id: dict) -> str:
    """Property x kernel: the worst outcome over the kernel's cells, one count per outcome and
    line (kernels as columns keep the table as narrow as the page)."""
    kernels = list(dict.fromkeys(row["kernel"] for row in m["rows"]))
    head = "<tr><th>property</th>" + "".join(
        f'<th class="prop"><a href="#kernel-{_e(k)}">{_e(k)}</a></th>' for k in kernels) + "</tr>"
    rows = []
    for prop in m["properties"]:
        cells = []
        for kernel in kernels:
            found = [outcome(by_id[row["cells"][prop]]) for row in m["rows"]
                     if row["kernel"] == kernel and prop in row["cells"]]
            text = "<br>".join(f"{found.count(o)}{SYMBOL[o]}" for o in OUTCOMES if o in found)
            cells.append(f'<td class="{_worst(found)}">{text}</td>')
        rows.append(f'<tr><td>{_e(prop.removeprefix("test_"))}</td>{"".join(cells)}</tr>')
    return f'<table class="overview">{head}{"".join(rows)}</table>'


def _cell(nodeid: str | None, by_id: dict, failure_ids: dict[str, str]) -> str:
    if nodeid is None:
        return '<td class="cell none"></td>'
    record = by_id[nodeid]
    o = outcome(record)
    note = record.get("message") or record.get(MEASURED)
    tip = _e(f"{nodeid}: {o}" + (f" - {note}" if note else ""))
    symbol = SYMBOL[o] + (MEASURED_MARK if record.get(MEASURED) else "")
    text = f'<a href="#{failure_ids[nodeid]}">{symbol}</a>' if nodeid in failure_ids else symbol
    return f'<td class="cell {o}" title="{tip}">{text}</td>'


def matrix_section(report: dict, failure_ids: dict[str, str]) -> str:
    m = report["matrix"]
    if not m["rows"]:
        return '<p class="note">No test ran on a registry combo.</p>'
    by_id = {r["nodeid"]: r for r in report["tests"]}
    legend = " ".join(f'<span class="{o}" style="padding:2px 6px">{SYMBOL[o]} {MEANING[o]}</span>' for o in OUTCOMES)
    by_kernel: dict[str, list[dict]] = {}
    for row in m["rows"]:
        by_kernel.setdefault(row["kernel"], []).append(row)
    blocks = []
    for kernel, kernel_rows in by_kernel.items():
        # Only the properties that run on this kernel: its table stays as wide as it needs.
        props = [p for p in m["properties"] if any(p in row["cells"] for row in kernel_rows)]
        head = "<tr><th>backend</th><th>dtype</th><th>layout</th>" + "".join(
            f'<th class="prop">{_e(p.removeprefix("test_"))}</th>' for p in props) + "</tr>"
        rows = [f"<tr><td>{_e(row['backend'])}</td><td>{_e(row['dtype'])}</td><td>{_e(row['layout'])}</td>"
                + "".join(_cell(row["cells"].get(p), by_id, failure_ids) for p in props) + "</tr>"
                for row in kernel_rows]
        worst = [outcome(by_id[nodeid]) for row in kernel_rows for nodeid in row["cells"].values()]
        bad = any(o in BAD for o in worst)
        tally = ", ".join(f"{worst.count(o)} {MEANING[o]}" for o in OUTCOMES if o in worst)
        blocks.append(f'<details id="kernel-{_e(kernel)}"{" open" if bad else ""}><summary><b>{_e(kernel)}</b>: '
                      f'{len(rows)} cells; tests: {_e(tally)}</summary>'
                      f'<table class="matrix">{head}{"".join(rows)}</table></details>')
    return (f"<p>{legend} <span class=\"none\" style=\"padding:2px 6px;border:1px solid #d0d7de\">blank: "
            f"the property does not run on that cell</span> {MEASURED_MARK}: passed, and measured a behaviour the "
            f"backend does not declare (e.g. batch_invariance: its rows' bits change with their batch)</p>"
            f"<p class=\"note\">Per property and kernel, the worst outcome over the kernel's cells (counts per outcome); "
            f"the tables below give every kernel x backend x dtype x layout cell (open for kernels with a failure; "
            f"click a kernel to open it). A failing cell links to its failure and reproduce command; hover a cell "
            f"for its test id and message.</p>{matrix_overview(m, by_id)}{''.join(blocks)}")


def failures_section(report: dict, failure_ids: dict[str, str], report_name: str) -> str:
    if not report["failures"]:
        return "<p>No failures.</p>"
    new = set(report["changes"]["new_failures"])
    parts = []
    for r in report["failures"]:
        tag = " (new)" if r["nodeid"] in new else ""
        parts.append(f'<div class="failure" id="{failure_ids[r["nodeid"]]}"><h3>{_e(r["nodeid"])}{tag}: '
                     f'{_e(outcome(r))}</h3>')
        if r.get("message"):
            parts.append(f"<pre>{_e(r['message'])}</pre>")
        if r.get("case"):
            parts.append(f"<div>Falsifying case:</div><pre>{_e(r['case'])}</pre>")
        parts.append(f"<div>Reproduce:</div><pre class=\"cmd\">{_e(r.get('reproduce') or 'no command recorded')}</pre>")
        if r.get("hypothesis_blob"):
            parts.append(f"<div>Hypothesis blob (pins the example):</div><pre>{_e(r['hypothesis_blob'])}</pre>")
        if r.get("case"):
            parts.append("<div>Keep it as a regression example:</div><pre class=\"cmd\">samplecheck regress "
                         f"{_e(report_name)} '{_e(r['nodeid'])}'</pre>")
        parts.append("</div>")
    return "".join(parts)


def coverage_section(report: dict, have_plots: bool) -> str:
    cov = report["coverage"]
    if not cov["dimensions"]:
        return '<p class="note">No coverage labels were recorded (no test drew cases with draw_case).</p>'
    parts = ['<p class="note">Examples per bucket of each dimension, summed over every test: a case counts once '
             'per bucket its batch reaches (per-row pools reach several). From the <code>hypothesis.event()</code> '
             'labels of <code>samplecheck.inputs.coverage</code>.</p>']
    if have_plots:
        images = [_img(plots.coverage_bars(d, b, cov["examples"]), f"coverage of {d}") for d, b in cov["dimensions"].items()]
        parts.append('<div class="grid">' + "".join(images) + "</div>")
    else:
        for d, buckets in cov["dimensions"].items():
            parts.append(f"<h3>{_e(d)}</h3><p>" + ", ".join(f"{_e(b)}: {n}" for b, n in buckets.items()) + "</p>")
    if cov["hypothesis_events"]:
        rows = [f"<tr><td class=\"num\">{n}</td><td>{_e(k)}</td></tr>" for k, n in cov["hypothesis_events"].items()]
        head = "<tr><th>cases</th><th>event</th></tr>"
        rest = rows[EVENTS_SHOWN:]
        more = (f"<details><summary>{len(rest)} more events</summary><table>{head}{''.join(rest)}</table></details>"
                if rest else "")
        parts.append("<h3>Hypothesis' own events</h3><p class=\"note\">Test cases in which Hypothesis reported "
                     f"each event (filter retries and the like), most frequent first.</p>"
                     f"<table>{head}{''.join(rows[:EVENTS_SHOWN])}</table>{more}")
    if cov["targets"]:
        rows = "".join(f"<tr><td>{_e(k)}</td><td class=\"num\">{v:.4g}</td></tr>" for k, v in cov["targets"].items())
        parts.append(f"<h3>hypothesis.target() maxima</h3><table><tr><th>label</th><th>highest</th></tr>{rows}</table>")
    return "".join(parts)


def checks_section(report: dict, have_plots: bool) -> str:
    c = report["checks"]
    if not c["n"]:
        return '<p class="note">No sampling check ran.</p>'
    rows = [("sampling checks (each: a G-test and an excess test)", c["n"]),
            ("vacuous G-tests (one bin), left out of the G-test's numbers", c["vacuous_g"]),
            ("rejections observed (tests)", f"{c['rejected']} ({len(c['rejections'])})"),
            ("false alarms expected if every kernel were correct (sum of the levels)", f"{c['expected_false_alarms']:.3g}"),
            ("G-test p < 0.01 (uniform expects 1%)",
             f"{c['below_1pct']['g']} of {len(c['g'])} ({c['below_1pct']['g'] / max(len(c['g']), 1):.1%})"),
            ("excess p < 0.01 (conservative: expects at most 1%)",
             f"{c['below_1pct']['excess']} ({c['below_1pct']['excess'] / c['n']:.1%})")]
    table = "".join(f"<tr><th>{_e(k)}</th><td class=\"num\">{_e(v)}</td></tr>" for k, v in rows)
    parts = [f"<table>{table}</table>",
             '<p class="note">Under a correct kernel the G-test p-values are close to uniform (points on the diagonal, '
             'inside the band; its chi-square approximation and discrete counts bend the far tail). The excess test '
             'is Bonferroni-adjusted over the tokens, so its p-values pile up at 1 and sit below the diagonal: '
             'points above the band, for either, are rejections to read.</p>']
    if have_plots:
        parts.append(_img(plots.qq_plot(c["g"], c["excess"]), "QQ plot of sampling-check p-values"))
    if c["rejections"]:
        items = "".join(f"<li><code>{_e(r['nodeid'])}</code> ({_e(r['outcome'])}): {r['count']} rejected, smallest "
                        f"{_e(r['check'])} p = {r['p']:.3g} (level {r['level']:.3g})</li>" for r in c["rejections"])
        parts.append("<h3>Rejections</h3><p class=\"note\">Per test: a failing test repeats its check while "
                     "Hypothesis shrinks the case. A rejection in a failed test is read with its failure; one in a "
                     f"passed test did not fail it, and is a false alarm to look into.</p><ul>{items}</ul>")
    return "".join(parts)


def time_section(report: dict, have_plots: bool) -> str:
    t = report["timing"]
    parts = [f"<p>{t['total']:.0f} s of test time in all (summed over workers).</p>"]
    if have_plots:
        parts.append(_img(plots.time_bars(t["per_property"]), "seconds per property"))
    else:
        parts.append("<p>" + ", ".join(f"{_e(p)}: {s:.1f} s" for p, s in t["per_property"].items()) + "</p>")
    rows = "".join(f"<tr><td class=\"num\">{r['seconds']:.2f}</td><td class=\"num\">{r['examples']}</td>"
                   f"<td><code>{_e(r['nodeid'])}</code></td></tr>" for r in t["slowest_tests"])
    parts.append(f"<h3>Slowest tests</h3><table><tr><th>s</th><th>examples</th><th>test</th></tr>{rows}</table>")
    rows = "".join(f"<tr><td class=\"num\">{r['seconds']:.2f}</td><td><code>{_e(r['nodeid'])}</code>"
                   f"<pre>{_e(r['case'][:1200])}</pre></td></tr>" for r in t["slowest_cases"])
    if rows:
        parts.append(f"<h3>Slowest cases (one per test)</h3><table><tr><th>s</th><th>case</th></tr>{rows}</table>")
    return "".join(parts)


def other_section(report: dict) -> str:
    if not report["other"]:
        return "<p>None.</p>"
    head = "<tr><th>property</th>" + "".join(f"<th>{_e(MEANING[o])}</th>" for o in OUTCOMES) + "</tr>"
    rows = "".join(f"<tr><td>{_e(r['property'])}</td>" + "".join(
        f'<td class="num {o if r[o] else ""}">{r[o] or ""}</td>' for o in OUTCOMES) + "</tr>" for r in report["other"])
    return f'<p class="note">Tests outside the kernel matrix (error inputs, statistics, plug-ins, ...).</p><table>{head}{rows}</table>'


def render(report: dict, report_name: str = "report.json") -> str:
    """The page for a report made by `samplecheck.tools.report.data.summarise`."""
    have_plots = plots.available()
    failure_ids = {r["nodeid"]: f"fail-{i}" for i, r in enumerate(report["failures"])}
    trend_points = report["changes"]["trend"] + [{"started": report["meta"]["started"],
                                                  "seconds": report["timing"]["total"],
                                                  "examples": report["coverage"]["examples"],
                                                  "failed": sum(report["counts"][o] for o in BAD)}]
    bodies = {
        "summary": summary_section(report, report_name),
        "changes": changes_section(report, plots.trends(trend_points) if have_plots else None),
        "matrix": matrix_section(report, failure_ids),
        "failures": failures_section(report, failure_ids, report_name),
        "coverage": coverage_section(report, have_plots),
        "checks": checks_section(report, have_plots),
        "time": time_section(report, have_plots),
        "other": other_section(report),
    }
    missing = "" if have_plots else f'<p class="missing">{_e(plots.MISSING)}</p>'
    nav = "".join(f'<a href="#{key}">{title}</a>' for key, title in SECTIONS)
    main = "".join(f'<section id="{key}"><h2>{title}</h2>{bodies[key]}</section>' for key, title in SECTIONS)
    meta = report["meta"]
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>samplecheck nightly '
            f'{_when(meta["started"])}</title><style>{CSS}</style></head><body><header><h1>samplecheck nightly '
            f'report</h1><p>{_e(_when(meta["started"]))} · {_e(meta["device"])} · profile {_e(meta["profile"])}</p>'
            f"</header><nav>{nav}</nav><main>{missing}{main}</main></body></html>")
