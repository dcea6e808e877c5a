"""The gate's benchmark regression report: on a GPU, the benchmark table of this checkout
(`python -m bench.kernels`) compared with a stored baseline (`python -m bench.compare`), ops
more than 15% slower listed as report lines. Timings are noisy, so it never changes the
gate's exit status; it runs only from a checkout (bench/ is not installed) and only when a
baseline exists."""

import subprocess
import sys
from pathlib import Path

from samplecheck.harness.suite_files import suite_path

DEFAULT_BASELINE = Path("bench") / "baselines" / "h200.json"


def checkout_root() -> Path | None:
    """The checkout holding bench/ beside the installed tests, else None (a wheel install)."""
    root = suite_path().parents[1]
    return root if (root / "bench" / "kernels.py").is_file() else None


def report(device: str, out: Path, baseline: Path | None) -> str:
    """Run the table and the comparison when possible; return the report text (also written
    to out/gate-bench-compare.txt when it ran), or the one line saying why it did not run."""
    root = checkout_root()
    if root is None:
        return "gate benchmark: skipped (bench/ is only in a checkout)"
    baseline = baseline if baseline is not None else root / DEFAULT_BASELINE
    if not baseline.is_file():
        return f"gate benchmark: skipped (no baseline at {baseline}; see bench/baselines/README.md)"
    if device != "cuda":
        return "gate benchmark: skipped (timings need CUDA)"
    table, result = out / "gate-bench.md", out / "gate-bench.json"
    bench = subprocess.run([sys.executable, "-m", "bench.kernels", "--out", str(table), "--json", str(result)],
                           cwd=root, capture_output=True, text=True)
    if bench.returncode != 0:
        return f"gate benchmark: the table failed (exit {bench.returncode}): {bench.stderr[-500:]}"
    compare = subprocess.run([sys.executable, "-m", "bench.compare", str(baseline), str(result)],
                             cwd=root, capture_output=True, text=True)
    (out / "gate-bench-compare.txt").write_text(compare.stdout)
    return compare.stdout.rstrip()
