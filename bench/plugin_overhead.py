"""What an installed samplecheck costs a project that does not use it: `pytest --co -q` of a
small unrelated project, run with samplecheck's entry point on and off (`-p no:samplecheck`),
alternating, REPEATS times each; the median wall time of each, and the difference. The issue's budget: at most 0.2 s added.

    python -m bench.plugin_overhead [--repeats 15] [--out FILE.md]

The project: 20 test files of 10 tests each, with a conftest, in a fresh temporary folder.
Machine, Python and versions are printed in the table's header.
"""

import argparse
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.report import markdown_table

BUDGET_S = 0.2
FILES, TESTS = 20, 10


def make_project(folder: Path) -> None:
    (folder / "conftest.py").write_text("import pytest\n\n\n@pytest.fixture\ndef value():\n    return 1\n")
    for f in range(FILES):
        body = "".join(f"def test_{t}(value):\n    assert value == 1\n\n\n" for t in range(TESTS))
        (folder / f"test_file{f}.py").write_text(body)


def measure(folder: Path, *options: str) -> float:
    """Wall seconds of one collection-only run."""
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", *options],
                            cwd=folder, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"pytest failed ({' '.join(options)}):\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
    return wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.plugin_overhead", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--out", type=Path, default=None, help="also write the table to this markdown file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        make_project(folder)
        measure(folder)  # warm the file cache
        on, off = [], []
        for _ in range(args.repeats):
            off.append(measure(folder, "-p", "no:samplecheck"))
            on.append(measure(folder))
    import pytest

    added = statistics.median(on) - statistics.median(off)
    lines = [
        f"machine: {platform.machine()}, {platform.processor() or 'cpu'}, Python {platform.python_version()}, "
        f"pytest {pytest.__version__}; project: {FILES} files x {TESTS} tests; {args.repeats} runs each",
        f"command: {sys.executable} -m pytest --co -q -p no:cacheprovider [-p no:samplecheck]",
        "",
        *markdown_table(["samplecheck entry point", "median wall (s)", "min", "max"],
                        [[name, *(f"{v:.3f}" for v in (statistics.median(runs), min(runs), max(runs)))]
                         for name, runs in (("off (-p no:samplecheck)", off), ("on", on))]),
        "",
        f"added by samplecheck: {added:+.3f} s (budget {BUDGET_S} s): {'within' if added <= BUDGET_S else 'OVER'}",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
