"""The nightly report, built from a small recorded CPU run (tests/data/nightly: two nights of
the cover suite with -k "min_p or temperature" under the nightly profile, the second in two
pieces, one of them against the mutant min_p_threshold_inclusive), checked the way a reader uses it: every section there,
every failure with its reproduce command and a link from its matrix cell, plots embedded, no
external asset; the page rendered by headless Chromium; a failure turned into a regression
example that its test then replays.
"""

import html.parser
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from samplecheck.harness.suite_files import suite_path
from samplecheck.tools import nightly, regress
from samplecheck.tools import report as reports
from samplecheck.tools.report import data, page, plots

RECORDED = Path(__file__).parents[1] / "data" / "nightly"
NIGHT1 = [RECORDED / "night1.results.json.gz"]
NIGHT2 = [RECORDED / "night2.results.json.gz", RECORDED / "night2-mutant.results.json.gz"]
SCRIPT = Path(__file__).parents[2] / "scripts" / "screenshot-report.sh"


class Page(html.parser.HTMLParser):
    """The parts of the page the checks read: section and element ids, links, images, tags."""

    def __init__(self, text: str):
        super().__init__()
        self.sections, self.ids, self.links, self.images, self.tags = [], set(), [], [], set()
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.add(tag)
        if "id" in a:
            self.ids.add(a["id"])
            if tag == "section":
                self.sections.append(a["id"])
        if tag == "a":
            self.links.append(a.get("href", ""))
        if tag == "img":
            self.images.append(a.get("src", ""))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Night 1 built and kept in a history folder, then night 2 from its pieces against it."""
    root = tmp_path_factory.mktemp("nightly")
    history = root / "history"
    reports.build(NIGHT1, root / "night1", history)
    reports.keep_in_history(root / "night1" / reports.JSON, history)
    report = reports.build(NIGHT2, root / "night2", history, {"budget": "recorded"})
    return root / "night2", report


def test_report_files_and_sections(built):
    out, report = built
    assert {p.name for p in out.iterdir()} >= {reports.HTML, reports.JSON, reports.MARKDOWN}
    parsed = Page((out / reports.HTML).read_text())
    assert parsed.sections == [key for key, _ in page.SECTIONS]
    assert report["line"] in (out / reports.MARKDOWN).read_text()
    assert report["meta"]["pieces"] == 2


def test_every_failure_has_its_reproduce_command_and_a_link(built):
    out, report = built
    text = (out / reports.HTML).read_text()
    parsed = Page(text)
    assert report["failures"], "the recorded mutant piece must fail"
    anchors = {f"#{i}" for i in parsed.ids if i.startswith("fail-")}
    assert len(anchors) == len(report["failures"])
    for record in report["failures"]:
        assert record["reproduce"] and "--sc-mutant=min_p_threshold_inclusive" in record["reproduce"]
        assert html.escape(record["reproduce"]) in text
    matrix_links = {link for link in parsed.links if link.startswith("#fail-")}
    assert matrix_links == anchors


def test_changes_since_the_previous_night(built):
    _, report = built
    changes = report["changes"]
    assert changes["previous"] is not None and len(changes["trend"]) == 1
    assert set(changes["new_failures"]) == {r["nodeid"] for r in report["failures"]}


def test_coverage_and_checks_are_recorded(built):
    _, report = built
    dims = report["coverage"]["dimensions"]
    assert {"vocab", "batch", "family", "-inf fraction", "dtype", "layout", "min_p", "T"} <= set(dims)
    checks = report["checks"]
    assert checks["n"] > 0 and len(checks["g"]) + checks["vacuous_g"] == len(checks["excess"]) == checks["n"]
    assert all(0.0 <= p <= 1.0 for p in checks["g"] + checks["excess"])


def test_page_is_self_contained(built):
    out, _ = built
    parsed = Page((out / reports.HTML).read_text())
    assert not parsed.tags & {"script", "link", "iframe"}
    assert all(link.startswith("#") for link in parsed.links)
    if not plots.available():
        pytest.skip("matplotlib is not installed (the [report] extra): the plot checks need it")
    assert len(parsed.images) >= 4
    assert all(src.startswith("data:image/png;base64,") for src in parsed.images)


def test_page_without_matplotlib_says_so(built, monkeypatch):
    _, report = built
    monkeypatch.setattr(plots, "_pyplot", lambda: None)
    parsed_text = page.render(report)
    assert plots.MISSING.replace("'", "&#x27;") in parsed_text
    assert not Page(parsed_text).images


def test_screenshot_renders(built, tmp_path):
    if not SCRIPT.exists():
        pytest.skip("scripts/screenshot-report.sh is not in an installed samplecheck (checkout only)")
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        pytest.skip("no chromium on PATH: the browser check needs Debian's chromium package")
    out, _ = built
    png = tmp_path / "page.png"
    subprocess.run(["bash", str(SCRIPT), str(out / reports.HTML), str(png), "1200", "900"], check=True,
                   timeout=120, capture_output=True)
    header = png.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", header[16:24]) == (1200, 900)


def test_budget_and_plan():
    assert nightly.parse_budget("30m") == 1800 and nightly.parse_budget("1h30m") == 5400
    assert nightly.parse_budget("45") == 2700
    with pytest.raises(Exception, match="--budget"):
        nightly.parse_budget("30 minutes")
    night = {"tests": [{"duration": 10.0, "examples": 100}, {"duration": 30.0, "examples": 100}]}
    assert nightly.plan_examples([night], 1000.0, 2)[0] == 1000  # 0.8 * 2000 s / 0.4 s, capped
    assert nightly.plan_examples([night], 100.0, 1)[0] == 200
    assert nightly.plan_examples([], 100.0, 1)[0] == nightly.DEFAULT_EXAMPLES


@pytest.mark.cpu_subject
def test_regression_is_replayed_by_the_test_it_came_from(built, tmp_path):
    """The recorded mutant failure of test_distribution, kept with `samplecheck regress`, makes
    that test fail on its explicit example (before any drawn one) against the same mutant."""
    out, report = built
    failure = next(r for r in report["failures"] if r["property"] == "test_distribution" and r.get("case"))
    module = tmp_path / "regressions.py"
    shutil.copy(regress.default_module(), module)
    assert regress.main([str(out / reports.JSON), failure["nodeid"], "--module", str(module)]) == 0
    assert regress.main([str(out / reports.JSON), failure["nodeid"], "--module", str(module)]) == 0
    assert module.read_text().count("RegressionExample(\n") == 1
    test_file = suite_path() / Path(failure["nodeid"].split("::")[0]).name
    node = f"{test_file}::{failure['nodeid'].split('::', 1)[1]}"
    run = subprocess.run([sys.executable, "-m", "pytest", node, "-p", "no:cacheprovider", "-p", "no:xdist",
                          "--sc-device=cpu", "--sc-profile=ci", "--sc-mutant=min_p_threshold_inclusive"],
                         capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, SAMPLECHECK_REGRESSIONS=str(module)))
    assert run.returncode == 1, run.stdout[-2000:]
    assert "Failing explicit example" in run.stdout
    assert f"ref='nightly " in run.stdout and failure["params"] in run.stdout


def test_recorded_failure_case_parses():
    from samplecheck.harness.results import falsifying_case

    text = "boom\nDraw 1 (case): Case(a=(1,\n  2),\n  b='x')\nmore"
    assert falsifying_case(text) == "Case(a=(1, 2), b='x')"
    assert falsifying_case("no draws here") is None
    assert data.outcome({"outcome": "skipped", "message": data.BUDGET_SPENT}) == "budget"


def test_a_measured_behaviour_marks_its_cell_and_says_what_in_the_tooltip():
    nodeid = "tests/cover/test_batch_invariance.py::test_batch_invariance[softmax-torch-fp32-contig]"
    record = {"nodeid": nodeid, "outcome": "passed", "measured": "not declared batch invariant, and it is not: x"}
    cell = page._cell(nodeid, {nodeid: record}, {})
    assert f">{page.SYMBOL['passed']}{page.MEASURED_MARK}</td>" in cell and "not declared batch invariant" in cell
    assert page.MEASURED_MARK not in page._cell(nodeid, {nodeid: {**record, "measured": None}}, {})
