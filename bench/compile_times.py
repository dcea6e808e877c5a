"""How long Triton takes to compile the selection kernels (and the penalties' in-kernel paths) for
a GPU, on any machine (no GPU is needed: `triton.compile` for a target), and what the compiled code holds.

    python -m bench.compile_times                          # sm_90, every variant below
    python -m bench.compile_times --variants one-k+p,chunks-k+p --dtypes bf16 --arch 90
    python -m bench.compile_times --dtypes bf16 --maxnreg 128       # under a register cap

A compile is a JIT stall wherever a batch first reaches a specialization (an engine's first
request of a kind; each test of the suite's that reaches a new one), and on a GPU runner most of
the gate's time (`samplecheck gate` prints its compile seconds by kernel). Variants, each with
the launch config of the path that compiles it on CUDA, guarded (a constexpr GUARDED, or the
runtime bool `guarded` of the one-program, chunk and penalties kernels), and no pointer or size
specialized on divisibility: the one-program kernel (`samplecheck.kernels.top_k_top_p`) with k,
p and both, and top-p alone's wide config (one-k, one-p, one-k+p, one-p-wide); the chunk path
(`samplecheck.kernels.top_k_chunks`) without and with p (chunks-k, chunks-k+p); the k-split
path's four kernels (`samplecheck.kernels.top_k_split`: split-lanes, split-bound, split-collect,
split-finish); the penalties' row-sort kernel at its default longest list (penalties-row-sort,
`samplecheck.kernels.penalties`: 2048 keys sorted in registers) and its pair kernel
(penalties-pairs). Per variant: the
seconds of `triton.compile` (one at a time, from no cache), the Triton IR's op count, and from the
cubin (cuobjdump) registers a thread and stack bytes (spills show as stack). These registers are
not a launch's: without the divisibility specialization a GPU launch gets, 16-bit loads are
neither vectorized nor pipelined (`python -m bench.resources` compiles each launch as the GPU
does). `--maxnreg N` compiles under Triton's launch option of that name, a cap on registers a thread (at 8 warps, 128 lets an
SM hold two programs). Registers depend on the Triton version: measure with the one the GPU
runs. Run it without TRITON_INTERPRET: the interpreter compiles nothing.
"""

import argparse
import os
import tempfile
import time

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from bench.kernels import LOGIT_DTYPES
from samplecheck.harness.lowering import cubin_usage
from samplecheck.kernels import penalties, top_k_chunks, top_k_split, top_k_top_p
from samplecheck.kernels.chunk_codes import LIST_KEY_BITS

POINTER = {"bf16": "*bf16", "fp16": "*fp16", "fp32": "*fp32"}
# Runtime arguments' types; every other argument of these kernels is a constexpr.
ARGUMENTS = dict(row_stride="i32", k_ptr="*i64", p_ptr="*fp32", scratch_ptr="*fp32", B="i32", V="i32",
                 guard_ptr="*i32", check="i1", guarded="i1", buffer_ptr="*i64", S="i32", keys_ptr="*i32",
                 lanes_ptr="*i32", state_ptr="*i64", CHUNK="i32", prompt_ptr="*i64", P="i32", output_ptr="*i64",
                 O="i32", repetition_ptr="*fp32", frequency_ptr="*fp32", presence_ptr="*fp32")


def variants(dtype: str):
    """(name, kernel, constexprs, num_warps) of each variant the module docstring lists."""
    search = {n: v for n, v in top_k_top_p.LAUNCH_CONFIG["cuda"].items() if n != "num_warps"}
    warps = top_k_top_p.LAUNCH_CONFIG["cuda"]["num_warps"]
    for name, has_k, has_p in (("k", True, False), ("p", False, True), ("k+p", True, True)):
        yield (f"one-{name}", top_k_top_p._top_k_top_p_kernel, dict(HAS_K=has_k, HAS_P=has_p, **search),
               warps)
    wide = top_k_top_p.WIDE_TOP_P["cuda"]
    yield ("one-p-wide", top_k_top_p._top_k_top_p_kernel,
           dict(HAS_K=False, HAS_P=True, **{**search, "TILE": wide["TILE"]}), wide["num_warps"])
    c = top_k_chunks.CHUNKS_CONFIG["cuda"]
    for has_p in (False, True):
        # The chunk path takes the one-program kernel's search settings for its rows searched whole.
        yield (f"chunks-k{'+p' if has_p else ''}", top_k_chunks._top_k_chunks_kernel,
               dict(HAS_P=has_p, COL_BITS=c["COL_BITS"], K_MAX=c["K_MAX"], MERGE=c["MAX_MERGE"],
                    KEY_BITS=LIST_KEY_BITS[LOGIT_DTYPES[dtype]], DIGIT_BITS=c["DIGIT_BITS"], **search),
               c["num_warps"])
    s = top_k_split.K_SPLIT_CONFIG["cuda"]
    for name, kernel, constexprs in (
            ("split-lanes", top_k_split._lanes_kernel, dict(GUARDED=True, BLOCK=s["BLOCK"], NUM_STAGES=s["NUM_STAGES"],
                                                            LANES=s["LANES"])),
            ("split-bound", top_k_split._bound_kernel, dict(MAX_SPLITS=s["MAX_SPLITS"], LANES=s["LANES"],
                                                            BOUND_STEPS=s["BOUND_STEPS"], NUM_PIVOTS=s["NUM_PIVOTS"])),
            ("split-collect", top_k_split._collect_kernel, dict(GUARDED=True, CAP=s["CAP"], BLOCK=s["BLOCK"],
                                                                NUM_STAGES=s["NUM_STAGES"])),
            ("split-finish", top_k_split._finish_kernel,
             dict(GUARDED=True, BLOCK=s["ROW_BLOCK"], NUM_STAGES=s["NUM_STAGES"], MAX_SPLITS=s["MAX_SPLITS"],
                  TILE=s["TILE"], NUM_PIVOTS=s["NUM_PIVOTS"], CAP=s["CAP"]))):
        yield name, kernel, constexprs, s["num_warps"]
    keys, warps = penalties.row_sort_launch(penalties.IN_KERNEL_MAX_LENGTH["cuda"], "cuda")
    yield ("penalties-row-sort", penalties._penalties_row_sort_kernel,
           dict(CHECK_BLOCK=penalties.GUARD_BLOCK["cuda"], LENGTH=keys), warps)
    block, warps = penalties.PAIR_LAUNCH["cuda"]
    yield ("penalties-pairs", penalties._penalties_pairs_kernel,
           dict(CHECK_BLOCK=penalties.GUARD_BLOCK["cuda"], BLOCK=block), warps)


def resources(cubin: bytes) -> str:
    """'registers | stack bytes' of the cubin's kernel, from Triton's own cuobjdump."""
    usage = cubin_usage(cubin)
    return f"{usage['REG']} | {usage['STACK']}"


def compile_one(kernel, dtype: str, constexprs: dict, num_warps: int, arch: int, maxnreg: int | None = None):
    """(seconds, compiled kernel) of one variant, compiled from no cache (under `maxnreg`
    registers a thread where given)."""
    names = kernel.arg_names
    signature = {n: (POINTER[dtype] if n == "logits_ptr" else ARGUMENTS.get(n, "constexpr")) for n in names}
    source = ASTSource(kernel, signature, constexprs={(names.index(n),): v for n, v in constexprs.items()})
    start = time.perf_counter()
    options = dict(num_warps=num_warps, **({"maxnreg": maxnreg} if maxnreg else {}))
    compiled = triton.compile(source, target=GPUTarget("cuda", arch, 32), options=options)
    return time.perf_counter() - start, compiled


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.compile_times", description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", default="", help="comma-separated variant names (default: all)")
    parser.add_argument("--dtypes", default="bf16,fp16,fp32", help="comma-separated logits dtypes")
    parser.add_argument("--arch", type=int, default=90, help="the CUDA compute capability compiled for (90: sm_90)")
    parser.add_argument("--maxnreg", type=int, default=None, help="a cap on registers a thread (default: none)")
    args = parser.parse_args(argv)
    if args.maxnreg is not None and not 24 <= args.maxnreg <= 255:
        parser.error(f"--maxnreg must be in [24, 255] registers a thread; got {args.maxnreg}")
    if os.environ.get("TRITON_INTERPRET") == "1":
        parser.error("TRITON_INTERPRET=1 is set: the interpreter compiles nothing; run without it")
    os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="compile-times-")  # from no cache
    cap = f", maxnreg {args.maxnreg}" if args.maxnreg else ""
    print(f"sm_{args.arch}, triton {triton.__version__}{cap}\n")
    print("| variant | dtype | compile (s) | Triton IR ops | registers a thread | stack bytes |")
    print("|---|---|---|---|---|---|")
    for dtype in args.dtypes.split(","):
        for name, kernel, constexprs, warps in variants(dtype):
            if args.variants and name not in args.variants.split(","):
                continue
            seconds, compiled = compile_one(kernel, dtype, constexprs, warps, args.arch, args.maxnreg)
            ops = sum(" = " in line for line in compiled.asm["ttir"].splitlines() if not line.startswith("#"))
            print(f"| {name} | {dtype} | {seconds:.1f} | {ops} | {resources(compiled.asm['cubin'])} |", flush=True)


if __name__ == "__main__":
    main()
