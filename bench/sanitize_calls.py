"""One call of each kernel and of the pipeline, for compute-sanitizer (scripts/sanitize.sh).

    python -m bench.sanitize_calls [--device cuda] [--batch 4] [--vocab 32000] [--dtype bf16] [--calls NAME,...]
    python -m bench.sanitize_calls --list            # the call names, one a line
    python -m bench.sanitize_calls --device cpu --vocab 1000   # smoke test under the interpreter

The calls are the "ours" column of the benchmark (bench.ops: every kernel, the masking +
sampling pairs and the pipeline, with the benchmark's inputs), each made once on bf16 logits
(or `--dtype`'s) in two layouts: `contiguous`, and `strided` (rows STRIDE_PAD entries apart beyond V, so a
kernel that touches the row-stride gap or addresses by V instead of the stride shows up).
Before each call the driver prints `sanitize-call: NAME`, after it (and a device
synchronisation) `sanitize-done: NAME`, so a sanitizer's report can be read per call.
"""

import argparse
import sys

from bench.kernels import LOGIT_DTYPES
from samplecheck.kernels.runtime import use_device

LAYOUTS = {"contiguous": 0, "strided": 64}
STRIDE_PAD = LAYOUTS["strided"]


def calls(batch: int, vocab: int, device: str, dtype: str = "bf16") -> dict:
    """{"op/layout": call} for every op of bench.ops and every layout, on `dtype` logits (a key
    of bench.kernels.LOGIT_DTYPES)."""
    from bench.ops import make_inputs, operations  # imports the kernels: after use_device

    found = {}
    for layout, row_pad in LAYOUTS.items():
        for op in operations(make_inputs(batch, vocab, device, row_pad=row_pad, dtype=LOGIT_DTYPES[dtype])):
            found[f"{op.key}/{layout}"] = op.ours.fn
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sanitize_calls", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--dtype", choices=LOGIT_DTYPES, default="bf16", help="the logits' dtype")
    parser.add_argument("--calls", default=None, help="comma-separated names (default: all; see --list)")
    parser.add_argument("--list", action="store_true", help="print the call names and exit")
    args = parser.parse_args(argv)
    device = use_device(args.device)
    import torch

    every = calls(args.batch, args.vocab, device, args.dtype)
    if args.list:
        print("\n".join(every))
        return 0
    chosen = list(every) if args.calls is None else args.calls.split(",")
    unknown = [name for name in chosen if name not in every]
    if unknown:
        parser.error(f"--calls: unknown {', '.join(unknown)}; the names are those of --list")
    for name in chosen:
        print(f"sanitize-call: {name}", flush=True)
        every[name]()
        if device == "cuda":
            torch.cuda.synchronize()
        print(f"sanitize-done: {name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
