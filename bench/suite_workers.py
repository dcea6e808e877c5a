"""How the gate suite's time scales with the pytest-xdist workers sharing one GPU: a slice of the
suite (default: the pipeline's cells, its heaviest) under the gate profile, run once to warm the
Triton cache, then once per worker count, and again per count for each variant asked for:
- `--threads N`: every worker's CPU thread pools at N threads (OMP_NUM_THREADS,
  MKL_NUM_THREADS; by default each worker's PyTorch starts one thread per core);
- `--cuda-wait MODE`: the workers wait for the GPU in that mode (`--sc-cuda-wait`; `block`
  sleeps instead of spinning a core);
- `--mps`: a CUDA MPS control daemon running (started for those runs with its pipe and log
  folders in a temporary folder, stopped after them), so the processes' kernels share the GPU
  instead of time-slicing it;
- `--together`: one more run per count with every variant asked for at once.

    python -m bench.suite_workers [--workers 4,8,16] [--select "sampling_params and triton"]
                                  [--device cuda] [--threads N] [--cuda-wait MODE] [--mps]
                                  [--together]
                                  [--out FILE.md]

Per run: wall seconds (process start to exit), the tests run, and the sum of their durations
(the suite's `--sc-results` JSON). If the sum per test grows with the workers while the wall
does not fall, the workers contend for the GPU (or the cores), and fewer of them are as fast.
"""

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

from bench.report import markdown_table
from samplecheck.harness import mps
from samplecheck.harness.suite_files import config_args, suite_path
from samplecheck.tools.suite import THREAD_VARIABLES

SELECT = "sampling_params and triton"


def run_slice(device: str, select: str, workers: int, env: dict, extra: tuple[str, ...] = ()) -> tuple[float, int, float]:
    """(wall seconds, tests run, sum of their durations) of one run of the slice."""
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp) / "results.json"
        spread = ["-n", str(workers), "--dist", "worksteal"] if workers > 0 else ["-p", "no:xdist"]
        command = [sys.executable, "-m", "pytest", str(suite_path()), *config_args(), "-p", "no:cacheprovider",
                   f"--sc-device={device}", "--sc-profile=gate", "--sc-packs=none", "-k", select, "-q",
                   f"--sc-results={results}", *spread, *extra]
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - start
        if done.returncode not in (0, 1) or not results.is_file():
            raise SystemExit(f"the slice did not run (exit {done.returncode}):\n"
                             f"{done.stdout[-2000:]}{done.stderr[-2000:]}")
        tests = json.loads(results.read_text())["tests"]
    total = sum(t["duration"] for t in tests)
    print(f"{workers} workers {shlex.join(extra)}: {wall:.0f} s wall, {len(tests)} tests, {total:.0f} test-seconds",
          file=sys.stderr, flush=True)
    return wall, len(tests), total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.suite_workers", description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="4,8,16", help="worker counts, comma-separated (0: no xdist)")
    parser.add_argument("--select", default=SELECT, help="pytest -k expression choosing the slice")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--threads", type=int, default=None, help="also run each count with N CPU threads per worker")
    parser.add_argument("--cuda-wait", choices=("spin", "yield", "block"), default=None,
                        help="also run each count with the workers waiting for the GPU this way (--sc-cuda-wait)")
    parser.add_argument("--mps", action="store_true", help="also run each count under CUDA MPS")
    parser.add_argument("--together", action="store_true", help="also run each count with every variant at once")
    parser.add_argument("--out", type=Path, default=None, help="also write the table to this markdown file")
    args = parser.parse_args(argv)
    try:
        counts = [int(c) for c in args.workers.split(",")]
    except ValueError:
        parser.error(f"--workers takes worker counts separated by commas, got {args.workers!r}")
    if not counts or min(counts) < 0:
        parser.error(f"--workers takes counts >= 0, got {args.workers!r}")
    if args.threads is not None and args.threads < 1:
        parser.error(f"--threads takes a thread count >= 1, got {args.threads}")
    warm_wall, _, _ = run_slice(args.device, args.select, max(counts), dict(os.environ))
    rows = [(n, "default", "auto", "no", *run_slice(args.device, args.select, n, dict(os.environ))) for n in counts]
    threads = {} if args.threads is None else dict.fromkeys(THREAD_VARIABLES, str(args.threads))
    wait = () if args.cuda_wait is None else (f"--sc-cuda-wait={args.cuda_wait}",)
    if threads:
        rows += [(n, str(args.threads), "auto", "no", *run_slice(args.device, args.select, n, {**os.environ, **threads}))
                 for n in counts]
    if wait:
        rows += [(n, "default", args.cuda_wait, "no", *run_slice(args.device, args.select, n, dict(os.environ), wait))
                 for n in counts]
    if args.mps:
        with mps.server() as env:
            rows += [(n, "default", "auto", "yes", *run_slice(args.device, args.select, n, env)) for n in counts]
    if args.together:
        with mps.server() if args.mps else nullcontext(dict(os.environ)) as env:
            rows += [(n, str(args.threads or "default"), args.cuda_wait or "auto", "yes" if args.mps else "no",
                      *run_slice(args.device, args.select, n, {**env, **threads}, wait)) for n in counts]
    command = [sys.executable, "-m", "bench.suite_workers", *(argv if argv is not None else sys.argv[1:])]
    lines = [f"machine: {platform.node()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
             f"device {args.device}; slice -k {args.select!r}, profile gate; warm-up run {warm_wall:.0f} s",
             f"command: {shlex.join(command)}", ""]
    lines += markdown_table(["workers", "CPU threads each", "CUDA wait", "MPS", "wall (s)", "tests", "test-seconds",
                             "per test (s)"],
                            [[str(n), threads, wait, under_mps, f"{wall:.0f}", str(count), f"{total:.0f}",
                              f"{total / max(count, 1):.2f}"] for n, threads, wait, under_mps, wall, count, total in rows])
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
