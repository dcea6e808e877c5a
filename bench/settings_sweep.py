"""Our calls timed under each value of one launch setting: the measurement that decides a
route or a launch parameter (a path's batch limit, a tile, a warp count) on a GPU.

    python -m bench.settings_sweep samplecheck.kernels.top_k_chunks:CHUNKS_CONFIG.cuda.MAX_ROWS \\
        0,16,64,256,1024 --ops top_k,top_k_sample
    python -m bench.settings_sweep samplecheck.kernels.logprobs:TOP_IDS_MAX 0,64 --ops logprobs,pipeline
    python -m bench.settings_sweep samplecheck.kernels.top_k_chunks:CHUNKS_CONFIG.cuda.MAX_ROWS 32,0 \\
        --with samplecheck.kernels.top_k_split:K_SPLIT_CONFIG.cuda.MIN_ROWS=1 --ops top_k   # one path against another
    python -m bench.settings_sweep samplecheck.kernels.top_k_chunks:CHUNKS_CONFIG.cpu.MAX_ROWS 0,4 \\
        --device cpu --sizes small --ops top_k                     # smoke test (interpreter)

SETTING is `module:NAME` (a module global) or `module:NAME.key[.key...]` (an entry of a dict
global); VALUES are Python literals, comma-separated. The kernels read these settings at each
call, so each value is set in the running process in turn, and the setting's own value is
restored at the end; each `--with SETTING=VALUE` holds another setting at a value for the whole
sweep (a route's other limit, so that the swept one decides between two paths). Inputs and
timing are the benchmark's (bench.ops, bench.timing): our call of each op, net of the restore
copy, and on CUDA its GPU time alone (a CUDA graph's replay).
Each value's output is compared with the first value's, bitwise: a setting that only changes
how the work is done (every route and tile here) gives "=" wherever the op's contract fixes
the output; "DIFFERS" is a finding, unless the contract leaves that choice open (logprobs' ids
tied with the k-th value: torch.topk and our kernels may pick different ones).
"""

import argparse
import ast
import importlib
import sys
from contextlib import ExitStack, contextmanager
from pathlib import Path

import torch

from bench import report, timing
from bench.kernels import LOGIT_DTYPES, SIZES, device_name, measure, parse_sizes
from samplecheck.kernels.runtime import use_device


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.settings_sweep", description=__doc__.split("\n\n")[0])
    parser.add_argument("setting", help="module:NAME or module:NAME.key[.key...]")
    parser.add_argument("values", type=lambda text: [ast.literal_eval(v) for v in text.split(",")],
                        help="comma-separated Python literals, e.g. 0,16,64")
    add_call_arguments(parser)
    return parser.parse_args(argv)


def add_call_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that choose the calls timed, the settings held for them and where their table goes."""
    parser.add_argument("--with", dest="fixed", action="append", default=[], type=_fixed_setting,
                        metavar="SETTING=VALUE", help="a setting held at a Python literal for the whole run "
                                                      "(repeatable)")
    parser.add_argument("--ops", required=True, help="comma-separated op keys of bench.ops")
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    parser.add_argument("--sizes", type=parse_sizes, default=None,
                        help=f"{', '.join(SIZES)} or BxV[,BxV...] (default: issue on CUDA, small on CPU)")
    parser.add_argument("--dtype", choices=LOGIT_DTYPES, default="bf16", help="the logits' dtype (default bf16)")
    parser.add_argument("--out", type=Path, default=None, help="write the markdown here (else stdout)")


def _fixed_setting(text: str) -> tuple[str, object]:
    """(setting, value) from SETTING=VALUE, the value a Python literal."""
    setting, equals, value = text.partition("=")
    try:
        if not equals:
            raise ValueError("no '='")
        return setting, ast.literal_eval(value)
    except (ValueError, SyntaxError) as error:
        raise argparse.ArgumentTypeError(f"--with must be SETTING=VALUE with a Python literal VALUE; got {text!r} "
                                         f"({error})") from error


def _holder(setting: str) -> tuple[object, str]:
    """(the module or dict holding the setting, its attribute or key); SystemExit naming the
    argument when the setting names nothing that exists."""
    module_name, _, path = setting.partition(":")
    name, *keys = path.split(".")
    try:
        holder, key = importlib.import_module(module_name), name
        for part in keys:
            holder, key = (holder[key] if isinstance(holder, dict) else getattr(holder, key)), part
        exists = key in holder if isinstance(holder, dict) else hasattr(holder, key)
    except (ImportError, AttributeError, KeyError, TypeError, ValueError) as error:
        raise SystemExit(f"setting must be module:NAME[.key...] naming an existing value; got {setting!r} "
                         f"({type(error).__name__}: {error})") from error
    if not path or not exists:
        raise SystemExit(f"setting must be module:NAME[.key...] naming an existing value; got {setting!r}")
    return holder, key


@contextmanager
def setting_value(setting: str, value):
    """The setting set to `value` within the block, restored after it."""
    holder, key = _holder(setting)
    get = (lambda: holder[key]) if isinstance(holder, dict) else (lambda: getattr(holder, key))
    put = holder.__setitem__ if isinstance(holder, dict) else (lambda k, v: setattr(holder, k, v))
    before = get()
    put(key, value)
    try:
        yield
    finally:
        put(key, before)


@contextmanager
def held_settings(fixed: list[tuple[str, object]]):
    """Each (setting, value) of `--with` held within the block, every one restored after it."""
    with ExitStack() as stack:
        for setting, value in fixed:
            stack.enter_context(setting_value(setting, value))
        yield


def _bits(output) -> list[torch.Tensor]:
    """The tensors of a call's output (a tensor, or a tuple of them and None), as raw bytes."""
    items = output if isinstance(output, tuple) else (output,)
    return [t.detach().contiguous().view(torch.uint8).flatten().cpu() for t in items if isinstance(t, torch.Tensor)]


def selected_ops(batch: int, vocab: int, device: str, dtype: str, keys: set[str], timer) -> tuple:
    """For fresh [batch, vocab] inputs of `dtype` (a key of LOGIT_DTYPES): the restore copy's time
    by `timer`, its GPU time alone on CUDA (else None), and the ops of bench.ops named in `keys`;
    SystemExit naming any key that is none."""
    from bench.ops import make_inputs, operations  # imports the kernels: after use_device

    inputs = make_inputs(batch, vocab, device, dtype=LOGIT_DTYPES[dtype])
    copy_us = timer(inputs.restore)
    copy_gpu_us = timing.replay_median_us(timing.capture(inputs.restore)[1]) if device == "cuda" else None
    ops = [op for op in operations(inputs) if op.key in keys]
    missing = sorted(keys - {op.key for op in ops})
    if missing:
        raise SystemExit(f"--ops: unknown {', '.join(missing)}")
    return copy_us, copy_gpu_us, ops


def sweep(setting: str, values: list, keys: set[str], sizes, device: str, dtype: str) -> list[dict]:
    """One row per (op, size): {"op", "size", "cells": [(value, us, gpu_us or None, equal)]}, on
    logits of `dtype` (a key of LOGIT_DTYPES)."""
    timer = timing.cuda_median_us if device == "cuda" else timing.wall_median_us
    rows = []
    for batch, vocab in sizes:
        copy_us, copy_gpu_us, ops = selected_ops(batch, vocab, device, dtype, keys, timer)
        for op in ops:
            cells, first = [], None
            for value in values:
                with setting_value(setting, value):
                    out = _bits(op.ours.fn())
                    cell = measure(op.ours, copy_us, timer, copy_gpu_us, {}, f"{batch}x{vocab}")  # a failure ends the sweep
                if cell["status"] != "ok":
                    raise SystemExit(f"{op.key} at {batch}x{vocab} with {setting} = {value!r}: {cell['error']}")
                first = out if first is None else first
                equal = len(out) == len(first) and all(torch.equal(a, b) for a, b in zip(out, first))
                cells.append((value, cell["us"], cell["gpu_us"], equal))
            rows.append({"op": op.key, "size": f"{batch}x{vocab}", "cells": cells})
            print(f"{batch}x{vocab} {op.key}: " + "  ".join(f"{v!r} {us:.1f}" for v, us, _, _ in cells),
                  file=sys.stderr, flush=True)
    return rows


def markdown(setting: str, values: list, rows: list[dict], device: str, dtype: str, command: str) -> str:
    """The sweep's table: a row per (op, size), a column per value."""
    method = timing.CUDA_METHOD if device == "cuda" else timing.CPU_METHOD
    lines = [f"# `{setting}` swept", "", f"{device_name(device)} · torch {torch.__version__} · {dtype} logits from "
             f"randn · command: `{command}`",
             "", f"Method: {method}; µs net of the restore copy, GPU time alone (graph replay) in brackets on CUDA; "
             "= / DIFFERS: the output bitwise against the first value's (DIFFERS is a finding unless the op's "
             "contract leaves that choice open).", "",
             "| op | size | " + " | ".join(repr(v) for v in values) + " |",
             "|---|---|" + "---|" * len(values)]
    for row in rows:
        cells = [f"{us:.1f}" + ("" if gpu is None else f" ({gpu:.1f})") + (" =" if equal else " DIFFERS")
                 for _, us, gpu, equal in row["cells"]]
        lines.append(f"| {row['op']} | {row['size']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    device = use_device(args.device)
    sizes = args.sizes or SIZES["issue" if device == "cuda" else "small"]
    with held_settings(args.fixed):
        rows = sweep(args.setting, args.values, set(args.ops.split(",")), sizes, device, args.dtype)
    command = report.command_line("bench.settings_sweep", argv)
    text = markdown(args.setting, args.values, rows, device, args.dtype, command)
    report.emit(text, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
