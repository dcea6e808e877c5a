"""Where a call's GPU time goes, launch by launch: each of our calls timed with only its first i
Triton launches made and the later ones skipped, for i = 1 .. n (n: the launches a whole call
makes), so that each launch's time is the step from the row before it.

    python -m bench.launches --ops top_k,top_p_sample --sizes 64x151936,1024x151936
    python -m bench.launches --ops top_k --with samplecheck.kernels.top_k_split:K_SPLIT_CONFIG.cuda.MAX_ROWS=1024
    python -m bench.launches --ops top_k --device cpu --sizes 6x1500     # smoke test (interpreter)

A skipped launch leaves its outputs unwritten, so a later launch reads what an earlier call left
or garbage: a step's time is that launch's with the earlier launches' outputs, not its time in a
whole call, wherever its work depends on its inputs' values (a data-dependent loop, a
fallback). Inputs and timing are the benchmark's (bench.ops, bench.timing): net of the restore
copy, on CUDA the GPU time alone (a CUDA graph's replay); launches are counted on
`triton.runtime.jit.KernelInterface.__getitem__` (every `kernel[grid](...)`), by kernel name.
`--with SETTING=VALUE` holds a setting for the run, as in bench.settings_sweep (a route's limit,
so that a size takes the path to be split).
"""

import argparse
import sys
from contextlib import contextmanager

import torch

from bench import report, timing
from bench.kernels import SIZES, device_name, measure
from bench.settings_sweep import add_call_arguments, held_settings, selected_ops
from samplecheck.kernels.runtime import use_device


class LaunchLimit:
    """Counts the launches of one call (`begin()` starts a call) and skips those past `limit`
    (None: none skipped); `names` are the kernels of the last call, in launch order."""

    def __init__(self):
        self.limit, self.names = None, []

    def begin(self, limit: int | None) -> None:
        self.limit, self.names = limit, []

    def launcher(self, kernel, grid, launch):
        self.names.append(getattr(kernel, "__name__", type(kernel).__name__))
        if self.limit is not None and len(self.names) > self.limit:
            return lambda *args, **kwargs: None
        return launch(kernel, grid)


@contextmanager
def limited_launches(limit: LaunchLimit):
    """Every `kernel[grid]` goes through `limit` within the block."""
    from triton.runtime.jit import KernelInterface  # after use_device, as every Triton import here

    launch = KernelInterface.__getitem__
    KernelInterface.__getitem__ = lambda kernel, grid: limit.launcher(kernel, grid, launch)
    try:
        yield
    finally:
        KernelInterface.__getitem__ = launch


def _first_launches(call, limit: LaunchLimit, count: int | None):
    """`call` (a `bench.ops.Call`) making only its first `count` launches (None: all)."""
    def fn():
        limit.begin(count)
        return call.fn()
    return type(call)(f"{call.name} [first {count}]", fn)


def steps(keys: set[str], sizes, device: str, dtype: str) -> list[dict]:
    """One row per (op, size): {"op", "size", "kernels": names in launch order, "us": the time
    with the first i launches, i = 1 .. n, "gpu_us": the same on CUDA (else None)}."""
    timer = timing.cuda_median_us if device == "cuda" else timing.wall_median_us
    limit = LaunchLimit()
    rows = []
    with limited_launches(limit):
        for batch, vocab in sizes:
            copy_us, copy_gpu_us, ops = selected_ops(batch, vocab, device, dtype, keys, timer)
            for op in ops:
                _first_launches(op.ours, limit, None).fn()
                kernels = list(limit.names)
                cells = [measure(_first_launches(op.ours, limit, i), copy_us, timer, copy_gpu_us, {},
                                 f"{batch}x{vocab}") for i in range(1, len(kernels) + 1)]
                failed = [c for c in cells if c["status"] != "ok"]
                if failed:
                    raise SystemExit(f"{op.key} at {batch}x{vocab}: {failed[0]['error']}")
                rows.append({"op": op.key, "size": f"{batch}x{vocab}", "kernels": kernels,
                             "us": [c["us"] for c in cells], "gpu_us": [c.get("gpu_us") for c in cells]})
                steps_text = "  ".join(f"{k} {us:.1f}" for k, us in zip(kernels, rows[-1]["us"]))
                print(f"{batch}x{vocab} {op.key}: {steps_text}", file=sys.stderr, flush=True)
    return rows


def markdown(rows: list[dict], device: str, dtype: str, command: str) -> str:
    """A table per (op, size): each launch, the time with the launches up to it, and its step."""
    method = timing.CUDA_METHOD if device == "cuda" else timing.CPU_METHOD
    measured = "GPU time alone, a graph replay" if device == "cuda" else "wall"
    lines = ["# Launch by launch", "", f"{device_name(device)} · torch {torch.__version__} · {dtype} logits from "
             f"randn · command: `{command}`", "",
             f"Method: {method}; µs net of the restore copy ({measured}); the first i launches made, the later "
             "ones skipped (bench/launches.py, its docstring).", ""]
    for row in rows:
        times = row["gpu_us"] if device == "cuda" else row["us"]
        lines += [f"## {row['op']} at {row['size']}", "", "| # | kernel | first i launches (µs) | step (µs) |",
                  "|---|---|---|---|"]
        before = 0.0
        for i, (kernel, us) in enumerate(zip(row["kernels"], times), start=1):
            lines.append(f"| {i} | {kernel} | {us:.1f} | {us - before:.1f} |")
            before = us
        lines.append("")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.launches", description=__doc__.split("\n\n")[0])
    add_call_arguments(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    device = use_device(args.device)
    sizes = args.sizes or SIZES["issue" if device == "cuda" else "small"]
    with held_settings(args.fixed):
        rows = steps(set(args.ops.split(",")), sizes, device, args.dtype)
    command = report.command_line("bench.launches", argv)
    text = markdown(rows, device, args.dtype, command)
    report.emit(text, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
