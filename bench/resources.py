"""What our calls' kernels take on a GPU, found without one: for each launch a call makes at the
GPU's launch tables, its registers a thread, local memory (spills), shared memory, the programs
an SM holds at once, and how it loads (the loads Triton's software pipelining made asynchronous,
the bytes a thread loads at once).

    python -m bench.resources --ops top_k,top_p --sizes 256x32000,64x151936
    python -m bench.resources --ops top_k --dtype fp32 --sizes 1024x151936

Each call runs on the CPU under Triton's interpreter with every kernel module's `device_kind`
reporting "cuda", so that it takes the GPU's launch tables and routes (a path's row limits,
tiles, warps), and with its launches recorded, not run (`LaunchLog(execute=False)`; value checks
deferred, so no launch's output is read on the host). Each distinct launch is then compiled for
sm_90 by this machine's Triton, without a GPU (`samplecheck.harness.lowering.compiled_resources`).

Each launch is specialized as on a GPU: Triton's own binder sees stand-ins of its arguments
(tensors of their dtype and 16-byte alignment, the integers themselves), so sizes divisible by 16
and aligned pointers are specialized, and 16-bit loads vectorized and pipelined, as there.
The figures are this machine's Triton's, printed with its version; another version allocates
differently (the one-program top-k kernel at bf16: 117 registers a thread under Triton 3.6, 128
under 3.9): put the GPU runner's Triton first on PYTHONPATH to read its figures. Programs an SM
follow from registers, shared memory and warps alone (`Resources.programs_per_sm`). "async
loads" 0 means every load of the kernel waits where its value is first used; "loads" counts the
kernel's global load instructions by the bytes a thread loads with one (16: eight 16-bit entries
at once; 2: one), from its SASS.
"""

import argparse
import sys
import unittest.mock
from contextlib import ExitStack, contextmanager

import torch

from bench import report
from bench.settings_sweep import add_call_arguments, held_settings, selected_ops
from samplecheck.kernels.runtime import KERNEL_MODULE_PREFIX, use_device


@contextmanager
def gpu_launch_tables():
    """Within the block every loaded kernel module's `device_kind` says "cuda": CPU tensors take
    the GPU's launch tables and routes."""
    with ExitStack() as stack:
        for name, module in list(sys.modules.items()):
            if name.startswith(KERNEL_MODULE_PREFIX) and hasattr(module, "device_kind"):
                stack.enter_context(unittest.mock.patch.object(module, "device_kind", lambda tensor: "cuda"))
        yield


def recorded_launches(keys: set[str], sizes, dtype: str) -> list[tuple[str, str, list]]:
    """(op, size, [(Launch, grid), ...] in launch order) for each op of `keys` at each size."""
    from samplecheck.harness.lowering import LaunchLog
    from samplecheck.kernels.value_modes import value_checks

    rows = []
    for batch, vocab in sizes:
        _, _, ops = selected_ops(batch, vocab, "cpu", dtype, keys, lambda fn: 0.0)
        for op in ops:
            with gpu_launch_tables(), value_checks("deferred"), LaunchLog(execute=False) as log:
                op.ours.fn()
            rows.append((op.key, f"{batch}x{vocab}", log.grids))
    return rows


def markdown(rows: list[tuple[str, str, list]], resources: dict, dtype: str, command: str) -> str:
    """A table per (op, size): each launch in order with its grid and what a program takes."""
    import triton

    from samplecheck.harness.lowering import TARGET

    lines = ["# What each launch takes on a GPU (compiled on the CPU)", "",
             f"Triton {triton.__version__} on this machine · target {TARGET[0]} sm_{TARGET[1]} · torch "
             f"{torch.__version__} · {dtype} logits · command: `{command}`", "",
             "Registers and local memory: a thread's; shared memory: a program's; programs an SM: at once, by "
             "registers, shared memory and warps (bench/resources.py, its docstring).", ""]
    for op, size, grids in rows:
        lines += [f"## {op} at {size}", "", "| # | kernel | grid | warps | registers | local (B) | shared (B) | "
                  "programs an SM | async loads | loads (bytes: count) |", "|---|---|---|---|---|---|---|---|---|---|"]
        for i, (launch, grid) in enumerate(grids, start=1):
            found = resources[launch]
            grid_text = "x".join(str(g) for g in grid) if isinstance(grid, tuple) else "callable"
            if isinstance(found, str):
                lines.append(f"| {i} | {launch.kernel[1]} | {grid_text} | compile error: {found[:200]} ||||||")
                continue
            widths = " ".join(f"{width}: {count}" for width, count in found.load_widths)
            lines.append(f"| {i} | {launch.kernel[1]} | {grid_text} | {found.num_warps} | {found.registers} | "
                         f"{found.local_bytes} | {found.shared_bytes} | {found.programs_per_sm()} | "
                         f"{found.async_copies} | {widths} |")
        lines.append("")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.resources", description=__doc__.split("\n\n")[0])
    add_call_arguments(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.device == "cuda":
        raise SystemExit("--device: bench.resources runs on the CPU (it compiles for the GPU without one); "
                         "use auto or cpu")
    use_device("cpu")
    from bench.kernels import SIZES
    from samplecheck.harness.lowering import compiled_resources

    with held_settings(args.fixed):
        rows = recorded_launches(set(args.ops.split(",")), args.sizes or SIZES["issue"], args.dtype)
    resources = compiled_resources(launch for _, _, grids in rows for launch, _ in grids)
    command = report.command_line("bench.resources", argv)
    report.emit(markdown(rows, resources, args.dtype, command), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
