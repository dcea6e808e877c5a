"""The speed targets of issue 31 checked on a benchmark result.

    python -m bench.targets bench/baselines/h200.json

Reads one `python -m bench.kernels --json` result (bench.report) and prints a markdown table:
one row per target and size, our figure against its bound, met or missed, in both of the
result's timings: end to end (`us`, the table's summary: host work included; the issue's own
measure, so it decides) and GPU time alone (`gpu_us`, a graph replay: where only the end-to-end
figure misses, host work is what misses). The targets:
- selection: each op of SELECTION takes at most the time of FlashInfer's matching call (the
  same row's `flashinfer` cell; top-k + top-p masking has no matching FlashInfer call, so no
  target here);
- elementwise: each op of ELEMENTWISE runs at >= ELEMENTWISE_SHARE of the copy's bandwidth
  (copy time / our time) at B >= ELEMENTWISE_MIN_BATCH, and takes <= ONE_ROW_US at B = 1;
- pipeline: the whole pipeline takes at most PIPELINE_FACTOR x FlashInfer's
  top_k_top_p_sampling_from_logits (the `top_k_top_p_sample` row of the same size).
A target whose figures are missing (no FlashInfer in the run, a failed call) is listed as not
measured and counts as missed. Exit status: 0 when every target is met end to end, else 1.
"""

import argparse
import json
import sys
from pathlib import Path
from typing import NamedTuple

from bench.report import markdown_table

# Ops that must not be slower than FlashInfer's matching call (issue 31, first target).
SELECTION = ("top_k", "top_p", "top_k_sample", "top_p_sample", "top_k_top_p_sample", "min_p_sample")
# Ops held to the copy's bandwidth and to a fixed cost at one row (issue 31, second target).
ELEMENTWISE = ("temperature", "min_p", "penalties", "logit_bias", "bad_words")
ELEMENTWISE_SHARE = 0.70  # the least share of the copy's bandwidth, at B >= ELEMENTWISE_MIN_BATCH
ELEMENTWISE_MIN_BATCH = 64
ONE_ROW_US = 15.0  # the most µs an elementwise op may take at B = 1
PIPELINE_FACTOR = 2.0  # the pipeline's bound, in FlashInfer top_k_top_p_sampling_from_logits calls
TIMINGS = (("us", "copy_us", "end to end"), ("gpu_us", "copy_gpu_us", "GPU time"))


class Verdict(NamedTuple):
    """One target at one size: our figure against its bound in each timing of TIMINGS (None:
    not measured), as text, and whether each is met."""

    target: str
    size: str
    texts: tuple[str, ...]
    met: tuple[bool, ...]


def _ok(entry: dict | None, key: str) -> float | None:
    if entry is None or entry.get("status") != "ok":
        return None
    return entry.get(key)


def _batch(size: str) -> int:
    return int(size.split("x")[0])


def _against(ours: float | None, bound: float | None, text: str) -> tuple[str, bool]:
    """(ours <= bound as text, whether it holds); missing figures are not measured, not met."""
    if ours is None or bound is None:
        return "not measured", False
    met = ours <= bound
    return f"{ours:.1f} {'<=' if met else '>'} {bound:.1f}{text} {'met' if met else '**missed**'}", met


def _selection(row: dict, rows: dict, key: str, _copy_key: str) -> tuple[str, bool]:
    return _against(_ok(row["ours"], key), _ok(row["flashinfer"], key), " (FlashInfer)")


def _elementwise(row: dict, rows: dict, key: str, copy_key: str) -> tuple[str, bool]:
    ours = _ok(row["ours"], key)
    if _batch(row["size"]) == 1:
        return _against(ours, ONE_ROW_US, "")
    copy = row.get(copy_key)
    if ours is None or copy is None:
        return "not measured", False
    share = copy / ours if ours > 0 else float("inf")
    met = share >= ELEMENTWISE_SHARE
    return f"{share:.0%} of copy BW ({ours:.1f} µs) {'met' if met else '**missed**'}", met


def _pipeline(row: dict, rows: dict, key: str, _copy_key: str) -> tuple[str, bool]:
    sampler = _ok(rows.get(("top_k_top_p_sample", row["size"]), {}).get("flashinfer"), key)
    return _against(_ok(row["ours"], key), None if sampler is None else PIPELINE_FACTOR * sampler,
                    f" ({PIPELINE_FACTOR:g} x FlashInfer)")


def _target(op: str, batch: int):
    """(the target's name, its judge) for an op at a batch size, or None where none applies."""
    if op in SELECTION:
        return f"{op} <= FlashInfer", _selection
    if op in ELEMENTWISE and batch == 1:
        return f"{op} <= {ONE_ROW_US:g} µs", _elementwise
    if op in ELEMENTWISE and batch >= ELEMENTWISE_MIN_BATCH:
        return f"{op} >= {ELEMENTWISE_SHARE:.0%} of copy BW", _elementwise
    if op == "pipeline":
        return f"pipeline <= {PIPELINE_FACTOR:g} x FlashInfer top_k_top_p_sampling_from_logits", _pipeline
    return None


def verdicts(result: dict) -> list[Verdict]:
    """Every target that applies to the result's rows, in the rows' order."""
    rows = {(row["op"], row["size"]): row for row in result["rows"]}
    found = []
    for (op, size), row in rows.items():
        target = _target(op, _batch(size))
        if target is None:
            continue
        name, judge = target
        judged = [judge(row, rows, key, copy_key) for key, copy_key, _ in TIMINGS]
        found.append(Verdict(name, size, tuple(t for t, _ in judged), tuple(m for _, m in judged)))
    return found


def report(result: dict) -> tuple[str, bool]:
    """(the markdown report, whether every target is met end to end)."""
    found = verdicts(result)
    missed = [v for v in found if not v.met[0]]
    host_only = [v for v in missed if v.met[1]]
    meta = result["meta"]
    lines = [f"# Issue 31's targets on {meta['device']} ({meta.get('date', 'undated')})", "",
             f"From `{meta.get('command', 'bench.kernels')}`. End to end decides; GPU time alone says "
             "whether a miss is host work.", ""]
    lines += markdown_table(["target", "size"] + [title for _, _, title in TIMINGS],
                            [[v.target, v.size, *v.texts] for v in found])
    lines += ["", f"{len(found) - len(missed)} of {len(found)} met end to end; {len(missed)} missed"
              f" ({len(host_only)} of them met in GPU time alone: host work)."]
    return "\n".join(lines), not missed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.targets", description=__doc__.split("\n\n")[0])
    parser.add_argument("result", type=Path, help="a bench.kernels JSON, e.g. bench/baselines/h200.json")
    args = parser.parse_args(argv)
    text, all_met = report(json.loads(args.result.read_text()))
    print(text)
    return 0 if all_met else 1


if __name__ == "__main__":
    sys.exit(main())
