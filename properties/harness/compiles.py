"""Triton compiles per test: which kernels a test made Triton compile (a miss of the Triton
cache: a specialization no earlier test of the run's processes compiled) and the seconds each
took, for the results file (`compiles`: {kernel: [count, seconds]}) and the gate's summary.

On a GPU, compiling is much of a suite's time from an empty cache (docs/gpu-runs.md, session
21: 1538 specializations of our kernels in 809 s, a third of the gate's suite): how many
specializations a kernel has (each dtype, pointer alignment, divisibility of its integer
arguments, constexpr flag) is a cost the suite pays once per run and an engine pays as a JIT
stall the first time a batch reaches a new one. The counts come from Triton's compilation
listener (`triton.knobs.compilation.listener`), set while samplecheck records results in this
process; a listener set before it is still called. Under the interpreter Triton never compiles
and every test records none.
"""

MICROSECONDS = 1e-6


class CompileRecorder:
    """Triton's compilation listener while installed: counts the compiles since the last
    `take`, by kernel."""

    def __init__(self):
        self.compiles: dict[str, list] = {}
        self.previous = None
        self.knobs = None

    def install(self) -> None:
        """Listen to Triton's compiles (a Triton without the listener knob: no record)."""
        try:
            from triton import knobs
        except ImportError:
            return
        if not hasattr(getattr(knobs, "compilation", None), "listener"):
            return
        self.knobs, self.previous = knobs, knobs.compilation.listener
        knobs.compilation.listener = self

    def uninstall(self) -> None:
        if self.knobs is not None and self.knobs.compilation.listener is self:
            self.knobs.compilation.listener = self.previous
        self.knobs = None

    def __call__(self, *, src, metadata, metadata_group, times, cache_hit, **rest):
        if self.previous is not None:
            self.previous(src=src, metadata=metadata, metadata_group=metadata_group, times=times,
                          cache_hit=cache_hit, **rest)
        if cache_hit:
            return
        name = getattr(src, "name", None) or dict(metadata or {}).get("name", "?")
        entry = self.compiles.setdefault(name, [0, 0.0])
        entry[0] += 1
        entry[1] += seconds(times)

    def take(self) -> dict[str, list]:
        """{kernel: [compiles, seconds]} since the last take, and start counting again."""
        taken = {name: [count, round(spent, 3)] for name, (count, spent) in sorted(self.compiles.items())}
        self.compiles = {}
        return taken


def seconds(times) -> float:
    """A compile's seconds from Triton's CompileTimes (microseconds per stage)."""
    stages = sum(duration for _, duration in getattr(times, "lowering_stages", ()))
    return (getattr(times, "ir_initialization", 0) + stages + getattr(times, "store_results", 0)) * MICROSECONDS


def summary(records: list[dict], most: int = 8) -> str | None:
    """One line on a run's compiles from its test records (None when there were none): their
    count and seconds, that share of the tests' seconds, and the kernels that cost most."""
    by_kernel: dict[str, list] = {}
    for record in records:
        for name, (count, spent) in record.get("compiles", {}).items():
            entry = by_kernel.setdefault(name, [0, 0.0])
            entry[0] += count
            entry[1] += spent
    if not by_kernel:
        return None
    count = sum(c for c, _ in by_kernel.values())
    spent = sum(s for _, s in by_kernel.values())
    tests = sum(r.get("duration", 0.0) for r in records)
    share = f" ({spent / tests:.0%} of the tests' {tests:.0f} s)" if tests else ""
    ranked = sorted(by_kernel.items(), key=lambda item: -item[1][1])[:most]
    kernels = ", ".join(f"{name} {c} ({s:.0f} s)" for name, (c, s) in ranked)
    return f"Triton compiled {count} specializations in {spent:.0f} s{share}; most: {kernels}"
