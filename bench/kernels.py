"""The benchmark table: every kernel of samplecheck.kernels and the whole pipeline, against the
PyTorch fallbacks and FlashInfer, at the sizes of the production-kernels issue (#16).

    python -m bench.kernels --out FILE.md --json FILE.json             # CUDA, the issue's sizes
    python -m bench.kernels --device cpu --sizes small                 # smoke test (interpreter)
    python -m bench.kernels --sizes 256x151936,1x32000 --ops top_k,pipeline

Run from the checkout's root. Columns per op and size: ours, the torch fallback and the
matching FlashInfer call (µs, net of the restore copy), our share of copy bandwidth, and
whether each call captures in a CUDA graph. Inputs: bench.ops; timing: bench.timing; the
tables and the JSON (read by `python -m bench.compare`): bench.report. docs/benchmarks.md
says where results go.
"""

import argparse
import datetime
import gc
import importlib
import platform
import sys
from pathlib import Path

import torch

from bench import report, timing
from samplecheck.kernels.runtime import use_device

SIZES = {
    "issue": [(1, 151936), (64, 151936), (256, 151936), (1024, 151936), (256, 32000)],
    "top_k_top_p": [(1, 32000), (64, 32000), (256, 32000), (1024, 32000),
                    (1, 151936), (64, 151936), (256, 151936), (1024, 151936)],
    "small": [(1, 512), (3, 1000)],
}
# The logits dtypes a run may take (`--dtype`), by name; the targets hold for all three.
LOGIT_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def parse_sizes(text: str) -> list[tuple[int, int]]:
    """A name of SIZES, or comma-separated BxV (e.g. 4x32000,1x151936)."""
    if text in SIZES:
        return SIZES[text]
    try:
        sizes = [tuple(int(n) for n in item.lower().split("x")) for item in text.split(",")]
    except ValueError:
        sizes = []
    if not sizes or any(len(s) != 2 or min(s) < 1 for s in sizes):
        raise argparse.ArgumentTypeError(f"--sizes must be one of {', '.join(SIZES)} or BxV[,BxV...] with B, V >= 1;"
                                         f" got {text!r}")
    return sizes


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.kernels", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                        help="cuda: do_bench timings; cpu: Triton's interpreter, a smoke test (default: auto)")
    parser.add_argument("--sizes", type=parse_sizes, default=None,
                        help=f"{', '.join(SIZES)} or BxV[,BxV...] (default: issue on CUDA, small on CPU)")
    parser.add_argument("--ops", default=None, help="comma-separated op keys (default: all; see the JSON's op)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the inputs (default 0)")
    parser.add_argument("--dtype", choices=LOGIT_DTYPES, default="bf16", help="the logits' dtype (default bf16)")
    parser.add_argument("--out", type=Path, default=None, help="write the markdown here (else stdout)")
    parser.add_argument("--json", type=Path, default=None, help="write the JSON result here")
    return parser.parse_args(argv)


def flashinfer_sampling(device: str):
    """(flashinfer.sampling or None, its version or why it is not used)."""
    if device != "cuda":
        return None, "not used on CPU"
    try:
        sampling = importlib.import_module("flashinfer.sampling")
    except Exception as error:  # noqa: BLE001 - FlashInfer is optional: any import failure means "absent"
        return None, f"not available ({type(error).__name__})"
    return sampling, importlib.import_module("flashinfer").__version__


def device_name(device: str) -> str:
    if device == "cuda":
        return f"GPU {torch.cuda.get_device_name()}"
    return f"CPU {platform.machine()} (Triton interpreter)"


def measure(call, copy_us: float, timer, copy_gpu_us: float | None, refused: dict, size: str) -> dict | None:
    """The JSON cell of one implementation (None: no matching call). On CUDA (`copy_gpu_us`, the
    restore's replay time, given) also whether the call captures and its replay's time.
    `refused` maps a call whose capture raised to its verdict and size: that call is not
    captured again at a later size, since torch (2.11, the device's) keeps a failed capture's
    memory pool until the process ends (pytorch/pytorch#190348), and the sizes' leaks add up to
    an out-of-memory error (session 35's bench at 256 x 32000)."""
    if call is None:
        return None
    if call.fn is None:
        return report.cell(call.name, available=False)
    try:
        us = timer(call.fn) - copy_us
    except Exception as error:  # noqa: BLE001 - a failing call is a table entry, not the end of the run
        return report.cell(call.name, error=f"{type(error).__name__}: {error}"[:300])
    if copy_gpu_us is None:
        return report.cell(call.name, us=us)
    if call.name in refused:
        return report.cell(call.name, us=us, graph=refused[call.name])
    captured, graph = timing.capture(call.fn)
    if graph is None:
        refused[call.name] = f"{captured} (at {size}; not tried again)"
        gc.collect()
        return report.cell(call.name, us=us, graph=captured)
    gpu_us = timing.replay_median_us(graph) - copy_gpu_us
    return report.cell(call.name, us=us, graph=captured, gpu_us=gpu_us)


def measure_size(batch: int, vocab: int, device: str, *, keys, seed: int, fi, timer, dtype: str,
                 refused: dict) -> list[dict]:
    """The rows of one size, one per selected op (`refused`: `measure`'s)."""
    from bench.ops import make_inputs, operations  # imports the kernels: after use_device

    inputs = make_inputs(batch, vocab, device, seed=seed, dtype=LOGIT_DTYPES[dtype])
    copy_us = timer(inputs.restore)
    copy_gpu_us = timing.replay_median_us(timing.capture(inputs.restore)[1]) if device == "cuda" else None
    ops = operations(inputs, fi)
    unknown = sorted((keys or set()) - {op.key for op in ops})
    if unknown:
        raise SystemExit(f"--ops: unknown {', '.join(unknown)}; the keys are: {', '.join(op.key for op in ops)}")
    rows = []
    for op in ops:
        if keys is not None and op.key not in keys:
            continue
        row = {"op": op.key, "label": op.label, "size": f"{batch}x{vocab}", "copy_us": copy_us,
               "copy_gpu_us": copy_gpu_us}
        for impl in report.IMPLEMENTATIONS:
            row[impl] = measure(getattr(op, impl), copy_us, timer, copy_gpu_us, refused, row["size"])
        print(f"{row['size']:>12} {op.key:<20} " + "  ".join(
            f"{impl} {report.time_text(row[impl])}" for impl in report.IMPLEMENTATIONS), file=sys.stderr, flush=True)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    device = use_device(args.device)
    import triton  # after use_device: Triton reads TRITON_INTERPRET when it is first imported
    sizes = args.sizes or SIZES["issue" if device == "cuda" else "small"]
    keys = None if args.ops is None else set(args.ops.split(","))
    fi, fi_version = flashinfer_sampling(device)
    timer = timing.cuda_median_us if device == "cuda" else timing.wall_median_us
    rows, refused = [], {}
    for batch, vocab in sizes:
        rows += measure_size(batch, vocab, device, keys=keys, seed=args.seed, fi=fi, timer=timer, dtype=args.dtype,
                             refused=refused)
        if device == "cuda":
            gc.collect()  # a failed call's tensors held by reference cycles (tracebacks), then the cache
            torch.cuda.empty_cache()
    result = {"schema": report.SCHEMA, "meta": {
        "device": device_name(device), "backend": device, "torch": torch.__version__, "triton": triton.__version__,
        "flashinfer": fi_version, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": report.command_line("bench.kernels", argv),
        "method": timing.CUDA_METHOD if device == "cuda" else timing.CPU_METHOD,
        "sizes": [f"{b}x{v}" for b, v in sizes], "dtype": args.dtype}, "rows": rows}
    text = report.markdown(result)
    if args.out:
        args.out.write_text(text)
    else:
        print(text)
    if args.json:
        report.write_json(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
