"""How a call is timed and whether it can be captured in a CUDA graph.

- CUDA: the median of `triton.testing.do_bench(fn, warmup=25, rep=100)` in microseconds
  (do_bench flushes the L2 cache before each call and times with CUDA events).
- CPU: do_bench needs CUDA, so the median wall-clock time of CPU_CALLS calls after one
  warm-up call. Under Triton's interpreter this only shows that every call runs: a smoke
  test, not a measurement.
- Graph capture: one warm-up call on a side stream, capture of one call on that stream,
  one replay, then a device synchronisation; "yes", or "no: " and the exception's name.
- GPU time alone: the captured graph's replay timed as a call (`replay_median_us`). do_bench
  times a call from the host's launch, so a call whose host work outlasts its GPU work (and
  the L2 flush before it) is timed by its host work; its replay is not.
"""

import statistics
import time

import torch

CUDA_WARMUP_MS = 25
CUDA_REP_MS = 100
CPU_CALLS = 3

CUDA_METHOD = (f"median of triton.testing.do_bench(warmup={CUDA_WARMUP_MS}, rep={CUDA_REP_MS}) on CUDA "
               "(CUDA events, L2 flushed before each call)")
CPU_METHOD = (f"median wall-clock time of {CPU_CALLS} calls after one warm-up call, on the CPU under Triton's "
              "interpreter: do_bench needs CUDA; these numbers are a smoke test of the calls, not a measurement")


def cuda_median_us(fn) -> float:
    """Median time of one call of `fn` on the current CUDA device, in microseconds."""
    import triton.testing

    return 1000 * triton.testing.do_bench(fn, warmup=CUDA_WARMUP_MS, rep=CUDA_REP_MS, return_mode="median")


def wall_median_us(fn) -> float:
    """Median wall-clock time of one call of `fn` (after a warm-up call), in microseconds."""
    fn()
    times = []
    for _ in range(CPU_CALLS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e6 * statistics.median(times)


def capture(fn) -> tuple[str, "torch.cuda.CUDAGraph | None"]:
    """("yes", the graph of one call of `fn`) when it captures in a CUDA graph and the graph
    replays; else ("no: <exception>", None)."""
    side = torch.cuda.Stream()
    try:
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=side):
            fn()
        graph.replay()
        torch.cuda.synchronize()
        return "yes", graph
    except Exception as error:  # noqa: BLE001 - any failure means "not capturable"; its name is the finding
        try:
            torch.cuda.synchronize()
        except Exception:  # noqa: BLE001 - a sticky error is already reported by the first one
            pass
        return f"no: {type(error).__name__}", None


def replay_median_us(graph: "torch.cuda.CUDAGraph") -> float:
    """Median time of one replay of `graph` (do_bench, as `cuda_median_us`): the call's GPU time
    alone, since a replay costs the host one launch whatever the call does on it."""
    return cuda_median_us(graph.replay)
