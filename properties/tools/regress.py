"""Turn a nightly failure into a regression example that every later run replays.

    samplecheck regress REPORT.json TEST [--module PATH]
    samplecheck regress REPORT.json --list

REPORT.json is a nightly report (or a results file); TEST is a failing test's node id, or a
part of it naming one failure. Its falsifying case (as Hypothesis printed it) becomes a
`RegressionExample` for that kernel, dtype, layout and test template, appended to
`samplecheck.inputs.regressions` (or to --module), which `with_regression_examples` replays
beside the records' own examples. The case is checked to evaluate to a case object before
anything is written; a test already kept (same reference) is not added twice.
"""

import argparse
import importlib
import math
import pkgutil
import re
import sys
import time
from pathlib import Path

from samplecheck.tools import flags
from samplecheck.tools.report.data import read_json

HEADER_END = '"""\n'
ENTRIES_START = "REGRESSIONS = (\n"
CLASS_CALL = re.compile(r"\b([A-Z]\w*)\(")
SPECIAL_FLOATS = {"inf": math.inf, "nan": math.nan}
# Hypothesis prints infinite and NaN floats bare; the module defines the two names when a case uses them.
SPECIAL_FLOAT = re.compile(r"(?<![\w.'\"])(inf|nan)\b")
SPECIAL_FLOATS_LINE = 'inf, nan = float("inf"), float("nan")'


def failing_records(report: dict) -> list[dict]:
    return [r for r in report["tests"] if r["outcome"] in ("failed", "error", "xpassed")]


def find_failure(report: dict, test: str) -> dict:
    records = failing_records(report)
    exact = [r for r in records if r["nodeid"] == test]
    matches = exact or [r for r in records if test in r["nodeid"]]
    if len(matches) != 1:
        names = "\n  ".join(r["nodeid"] for r in matches or records)
        raise SystemExit(f"regress: TEST must name exactly one failure of the report; {len(matches)} match "
                         f"{test!r}. Failures:\n  {names}")
    return matches[0]


def case_classes() -> dict[str, str]:
    """{class name: module} for the case and recipe classes a falsifying case may name: the
    recipes, the record families (where shared case classes live) and the records."""
    import samplecheck.families
    import samplecheck.infos

    modules = ["samplecheck.inputs.recipes"] + [f"{package.__name__}.{m.name}"
                                                for package in (samplecheck.families, samplecheck.infos)
                                                for m in pkgutil.iter_modules(package.__path__)]
    found = {}
    for name in modules:
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if isinstance(value, type) and value.__module__ == name and attr[0].isupper():
                found.setdefault(attr, name)
    return found


def imports_for(case_source: str) -> list[str]:
    known = case_classes()
    lines = ["import torch", "from samplecheck.registry.records import RegressionExample"]
    for name in sorted(set(CLASS_CALL.findall(case_source))):
        if name not in known:
            raise SystemExit(f"regress: the case names {name}, which no samplecheck.infos or "
                             "samplecheck.families module or samplecheck.inputs.recipes defines; "
                             "add the example to its record by hand")
        lines.append(f"from {known[name]} import {name}")
    return lines


def evaluate(case_source: str, imports: list[str]):
    """The case object the source makes (raises SystemExit when it does not evaluate)."""
    namespace = dict(SPECIAL_FLOATS)
    exec("\n".join(imports), namespace)
    try:
        return eval(case_source, namespace)
    except Exception as err:  # the printed case is not valid Python: say so instead of writing it
        raise SystemExit(f"regress: the recorded case does not evaluate ({type(err).__name__}: {err}):\n"
                         f"  {case_source}") from err


def entry_source(record: dict, case_source: str, started: float) -> tuple[str, str]:
    """(reference, source of the (kernel, RegressionExample) pair) for a failure record."""
    from samplecheck.registry.records import DTYPE_NAMES

    dtype = {name: str(d) for d, name in DTYPE_NAMES.items()}[record["dtype"]]
    message = (record.get("message") or "").splitlines()[0][:100] if record.get("message") else ""
    ref = f"nightly {time.strftime('%Y-%m-%d', time.gmtime(started))} {record['property']}[{record['params']}]"
    lines = [f"    ({record['kernel']!r}, RegressionExample(", f"        ref={ref!r},"]
    if message:
        lines.append(f"        # {message}")
    lines += [f"        case={case_source},",
              f"        dtypes=({dtype},), layouts=({record['layout']!r},), tests=({record['property']!r},))),"]
    source = "\n".join(lines) + "\n"
    return ref, source


def write_entry(module: Path, imports: list[str], ref: str, source: str) -> bool:
    """Append the entry to the regressions module (its imports merged); False if `ref` is there."""
    text = module.read_text()
    if repr(ref) in text:
        return False
    header_end = text.index(HEADER_END) + len(HEADER_END)
    start = text.index(ENTRIES_START)
    close = text.rindex(")")
    old_imports = [line for line in text[header_end:start].splitlines() if line.startswith(("import ", "from "))]
    merged = set(old_imports) | set(imports)
    plain = sorted(line for line in merged if line.startswith("import "))
    named = sorted(line for line in merged if line.startswith("from "))
    body = text[start + len(ENTRIES_START):close] + source
    floats = [SPECIAL_FLOATS_LINE] if SPECIAL_FLOAT.search(body) else []
    module.write_text(text[:header_end] + "\n" + "\n".join(plain) + "\n\n" + "\n".join(named + floats) + "\n\n"
                      + ENTRIES_START + body + ")\n")
    return True


def default_module() -> Path:
    import samplecheck.inputs.regressions

    return Path(samplecheck.inputs.regressions.__file__)


def main(argv: list[str] | None = None) -> int:
    p = flags.parser("regress", __doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("report", type=Path, help="a nightly report.json (or a results file)")
    p.add_argument("test", nargs="?", help="the failing test's node id, or a part naming one failure")
    p.add_argument("--list", action="store_true", help="list the report's failures and whether each has a case")
    p.add_argument("--module", type=Path, default=None, help="the regressions module to append to "
                   "(default: samplecheck/inputs/regressions.py of this installation)")
    args = p.parse_args(argv)
    report = read_json(args.report)
    if args.list or not args.test:
        for r in failing_records(report):
            print(f"{'case ' if r.get('case') else 'no case'}  {r['nodeid']}")
        return 0 if args.list else 2
    record = find_failure(report, args.test)
    if not record.get("case"):
        raise SystemExit(f"regress: {record['nodeid']} has no falsifying case in the report (a failing explicit "
                         "example is a regression already, and errors outside the test body draw none)")
    if record.get("dtype") is None:
        raise SystemExit(f"regress: {record['nodeid']} is not a registry-matrix test (no kernel, dtype and layout)")
    imports = imports_for(record["case"])
    evaluate(record["case"], imports)
    ref, source = entry_source(record, record["case"], report["meta"]["started"])
    module = args.module or default_module()
    if not write_entry(module, imports, ref, source):
        print(f"regress: {ref!r} is already in {module}")
        return 0
    print(f"regress: added {ref!r} to {module}; {record['property']} replays it for {record['kernel']} "
          f"({record['dtype']}, {record['layout']}) on every backend")
    return 0


if __name__ == "__main__":
    sys.exit(main())
