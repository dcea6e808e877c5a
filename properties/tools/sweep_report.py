"""The sweep's report: pytest's reports of one run, as a table of cells (kernel x backend x
dtype x layout) by property, with the lines that say what the table leaves out.

`SweepReport` is a pytest plugin object of the process that runs pytest (the controller under
pytest-xdist): it reads each test's reports as they arrive and calls `progress(done, total,
failed)` after each test. `text()` is the report: title, the backends tested and what each
declared (lines wrapped to `WIDTH`), the table, its legend, and the other properties' counts.
"""

import re
import textwrap
from collections import defaultdict

import pytest

from samplecheck.harness.results import MEASURED
from samplecheck.registry import catalog
from samplecheck.registry.records import DTYPE_NAMES

COLUMNS = tuple(name.removeprefix("test_") for name in (
    catalog.ORACLE_EQUIVALENCE, catalog.STRIDED_BITWISE, catalog.ROW_ISOLATION, catalog.DETERMINISTIC,
    catalog.BATCH_INVARIANCE, catalog.OFF_ENCODINGS, catalog.EXACT_DISTRIBUTION, catalog.DISTRIBUTION,
    catalog.MEMORY_BOUND))
# Column headings: short, so that a row fits a terminal; the legend spells each one out.
HEADING = {"oracle_equivalence": "oracle", "strided_bitwise": "strided", "row_isolation": "isolated",
           "deterministic": "determ", "batch_invariance": "batch", "off_encodings": "off", "exact_distribution": "law",
           "distribution": "sampled", "memory_bound": "memory"}
SYMBOL = {"passed": "pass", "failed": "FAIL", "skipped": "skip", "xfailed": "xfail", "xpassed": "XPASS",
          "measured": "pass*"}
WIDTH = 100
LEGEND = (
    "Legend:",
    "  pass   the property held; FAIL: it did not",
    "  xfail  a finding the backend declares failed as declared; XPASS: it no longer fails (strict: the run fails)",
    "  pass*  passed, and measured a behaviour the backend does not declare (batch: a row's bits change with its "
    "batch); the log's warning says where",
    "  skip   the property applies to this cell and was skipped here (declared by the backend or record, e.g. "
    "too slow for the interpreter, or an example set sized for the nightly); the log names the reason",
    "  -      the property does not apply to this cell and was not collected: it compares the other layouts "
    "with contig, runs on some layouts or dtypes only, or needs what the record lacks (a law, a sampler, off "
    "encodings)",
)
CELL = re.compile(r"::test_(\w+)\[(.+)\]$")


def outcome_of(report) -> str:
    """passed, failed, skipped, xfailed or xpassed."""
    if hasattr(report, "wasxfail"):
        return "xfailed" if report.skipped else "xpassed"
    return report.outcome


class SweepReport:
    """Collects one run's reports: per cell and property its outcome, examples and time;
    counts of the other tests; the tests marked `gpu` skipped on CPU; the failures."""

    def __init__(self, device: str, progress=None):
        self.device = device
        self.progress = progress
        self.total = 0
        self.done = 0
        self.cells = defaultdict(dict)  # cell id -> property -> outcome
        self.examples = defaultdict(int)
        self.seconds = defaultdict(float)
        self.other = defaultdict(int)
        self.gpu_only = set()
        self.failures = []

    def pytest_collection_finish(self, session):
        self.total = self.total or len(session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        self.total = len(ids)

    def pytest_runtest_logreport(self, report):
        if report.when == "teardown":
            self.done += 1
            if self.progress:
                self.progress(self.done, self.total, len(self.failures))
        if report.when != "call" and not (report.when == "setup" and report.outcome != "passed"):
            return
        outcome = outcome_of(report)
        if outcome in ("failed", "xpassed"):
            self.failures.append(report.nodeid)
        match = CELL.search(report.nodeid)
        name = match.group(1) if match else report.nodeid.rpartition("::")[2].split("[")[0].removeprefix("test_")
        if self.device == "cpu" and outcome == "skipped" and "gpu" in report.keywords:
            self.gpu_only.add(name)
        elif match and name in COLUMNS:
            cell = match.group(2)
            properties = dict(report.user_properties)
            self.cells[cell][name] = "measured" if outcome == "passed" and properties.get(MEASURED) else outcome
            self.examples[cell] += properties.get("examples", 0)
            self.seconds[cell] += report.duration
        else:
            self.other[outcome] += 1

    def columns(self) -> tuple[str, ...]:
        """The properties with an outcome in some cell."""
        return tuple(c for c in COLUMNS if any(c in outcomes for outcomes in self.cells.values()))

    def table(self) -> list[str]:
        columns = self.columns()
        header = ("kernel", "backend", "dtype", "layout") + tuple(HEADING[c] for c in columns) + ("examples", "time")
        rows = [split_cell(cell) + tuple(SYMBOL.get(self.cells[cell].get(c), "-") for c in columns)
                + (str(self.examples[cell]), f"{self.seconds[cell]:.1f}s") for cell in sorted(self.cells)]
        widths = [max(len(row[i]) for row in rows + [header]) for i in range(len(header))]
        return (["| " + " | ".join(h.ljust(w) for h, w in zip(header, widths)) + " |",
                 "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
                + ["| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |" for row in rows])

    def text(self, title: list[str], declarations: list[str], elsewhere: list[str]) -> str:
        """The report: the `title` and `declarations` lines (wrapped), the table and its legend,
        the backends and cells that cannot run here (`elsewhere`, entries of the function
        below) and the GPU-only properties on CPU, the other tests' counts and the failures."""
        headings = ", ".join(f"{HEADING[c]} = test_{c}" for c in self.columns())
        lines = (wrap(title) + ["", "```"] + wrap(declarations) + ["```", ""] + self.table() + [""]
                 + wrap(LEGEND + (f"  Columns: {headings}.",), hang=7))
        if elsewhere:
            lines += wrap([f"Not run on {self.device}, so no rows (the backend runs elsewhere, or does not declare "
                           f"those cells): {'; '.join(elsewhere)}."])
        if self.gpu_only:
            gpu_only = ", ".join(sorted(self.gpu_only))
            lines += wrap([f"Not run on cpu (GPU-only properties, marker gpu): {gpu_only}."])
        counts = ", ".join(f"{n} {SYMBOL.get(k, k)}" for k, n in sorted(self.other.items())) or "none"
        lines += wrap([f"Other properties judging these backends (error inputs, bad inputs, edge values, empty "
                       f"batch, kernel-specific): {counts}."])
        if self.failures:
            lines.append("Failures (each one's 'reproduce' section in the log reruns it):")
            lines += [f"  {nodeid}" for nodeid in self.failures]
        return "\n".join(lines) + "\n"


def elsewhere(records, device: str) -> list[str]:
    """What the sweep leaves out of `records` (KernelInfo) on `device`, one entry per backend:
    `kernel/backend (runs on DEVICES)` for one that never runs here, `kernel/backend (not
    declared: ...)` for the record's dtypes and layouts it does not declare."""
    entries = []
    for info in records:
        for backend in info.backends:
            if device not in backend.devices:
                entries.append(f"{info.name}/{backend.name} (runs on {','.join(backend.devices)})")
                continue
            dtypes = info.dtypes if backend.dtypes is None else backend.dtypes
            layouts = info.layouts if backend.layouts is None else backend.layouts
            missing = [DTYPE_NAMES[d] for d in info.dtypes if d not in dtypes]
            missing += [layout for layout in info.layouts if layout not in layouts]
            if missing:
                entries.append(f"{info.name}/{backend.name} (not declared: {', '.join(missing)})")
    return entries


def split_cell(cell: str) -> tuple[str, str, str, str]:
    """(kernel, backend, dtype, layout) of a cell id; only a backend's name may hold '-'
    (a mutant's: mutant-NAME)."""
    rest, dtype, layout = cell.rsplit("-", 2)
    kernel, backend = rest.split("-", 1)
    return kernel, backend, dtype, layout


def wrap(lines, width: int = WIDTH, hang: int = 4) -> list[str]:
    """Each line wrapped to `width`, its continuations indented `hang` past its own indentation."""
    wrapped = []
    for line in lines:
        indent = " " * (len(line) - len(line.lstrip()) + hang)
        wrapped += textwrap.wrap(line, width, subsequent_indent=indent, break_long_words=False,
                                 break_on_hyphens=False) or [""]
    return wrapped
