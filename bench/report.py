"""The benchmark's result: its JSON form, and the markdown tables written from it.

JSON (`python -m bench.kernels --json FILE`; read by `bench.compare`):
    {"schema": 1,
     "meta": {"device", "backend" ("cuda" or "cpu"), "torch", "triton", "flashinfer", "date",
              "command", "method", "sizes": ["BxV", ...]},
     "rows": [{"op": key, "label": display name, "size": "BxV", "copy_us": float,
               "copy_gpu_us": float or null,
               "ours": CELL, "torch": CELL or null, "flashinfer": CELL or null}, ...]}
    CELL = {"call": what it calls, "status": "ok" | "n/a" | "error",
            "us": float or null, "graph": "yes" | "no: <exception>" | null,
            "gpu_us": float or null, "error": str or null}
A null implementation has no matching call; status "n/a" means its library is not
available here. `us` is net of the restore copy (`copy_us`), so it can be slightly negative
for a call much faster than the copy. `gpu_us` (CUDA, a call that captures): the replay of
the call's CUDA graph, its GPU time alone, net of the restore's replay (`copy_gpu_us`);
`bench.timing` says why it can be far below `us`.
"""

import json
import shlex
import sys
from pathlib import Path

SCHEMA = 1
IMPLEMENTATIONS = ("ours", "torch", "flashinfer")
TITLES = {"ours": "ours", "torch": "torch fallback", "flashinfer": "FlashInfer"}
NO_CALL = "—"


def cell(call: str, *, us=None, graph=None, gpu_us=None, error=None, available=True) -> dict:
    """One implementation's outcome (module docstring's CELL)."""
    status = "n/a" if not available else "error" if error else "ok"
    return {"call": call, "status": status, "us": us, "graph": graph, "gpu_us": gpu_us, "error": error}


def command_line(module: str, argv: list[str] | None) -> str:
    """The command that ran `python -m module` with `argv` (None: this process's arguments),
    quoted so that it runs verbatim in a shell."""
    return shlex.join(["python", "-m", module, *(sys.argv[1:] if argv is None else argv)])


def emit(text: str, out: Path | None) -> None:
    """A report's markdown to `out`, or to stdout without one."""
    if out:
        out.write_text(text)
    else:
        print(text)


def write_json(path: Path, result: dict) -> None:
    path.write_text(json.dumps(result, indent=1) + "\n")


def markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def time_text(entry: dict | None) -> str:
    if entry is None:
        return NO_CALL
    if entry["status"] == "ok":
        return f"{entry['us']:.1f}"
    return "n/a" if entry["status"] == "n/a" else "error: " + entry["error"].split(":")[0]


def _graph(entry: dict | None) -> str:
    if entry is None:
        return NO_CALL
    return entry["graph"] or "n/a"


def _copy_share(row: dict) -> str:
    """The op's share of copy bandwidth: copy time / our time (a read + write of the logits)."""
    ours = row["ours"]
    if ours["status"] != "ok" or ours["us"] <= 0:
        return NO_CALL
    return f"{100 * row['copy_us'] / ours['us']:.0f}%"


def _size_title(size: str) -> str:
    return size.replace("x", " x ")


def gpu_time_text(entry: dict | None) -> str:
    """A cell's GPU time alone (`gpu_us`), or why there is none."""
    if entry is None:
        return NO_CALL
    if entry.get("gpu_us") is None:
        return time_text(entry) if entry["status"] != "ok" else "not captured"
    return f"{entry['gpu_us']:.1f}"


def _summary(rows: list[dict], sizes: list[str], timed=time_text, copy_key="copy_us") -> list[str]:
    """The issue's layout: one line per op (ours), the copy first, FlashInfer's calls last;
    `timed` picks a cell's time, `copy_key` the copy's."""
    by_op: dict[str, dict[str, dict]] = {}
    for row in rows:
        by_op.setdefault(row["op"], {})[row["size"]] = row

    def line(name, cells, pick):
        return [name] + [pick(cells[s]) if s in cells else NO_CALL for s in sizes]

    ops = list(by_op.values())
    lines = [line("copy of the logits (read + write)", ops[0], lambda r: f"{r[copy_key]:.1f}")] if ops else []
    lines += [line(next(iter(cells.values()))["label"], cells, lambda r: timed(r["ours"])) for cells in ops]
    for cells in ops:
        first = next(iter(cells.values()))
        if first["flashinfer"] is not None:
            lines.append(line("FlashInfer " + first["flashinfer"]["call"], cells, lambda r: timed(r["flashinfer"])))
    return markdown_table(["op (µs)"] + [_size_title(s) for s in sizes], lines)


def _per_size(rows: list[dict], size: str) -> list[str]:
    mine = [row for row in rows if row["size"] == size]
    header = ["op"] + [f"{TITLES[impl]} (µs)" for impl in IMPLEMENTATIONS] + [
        "% of copy BW", "graph-capturable: " + " / ".join(TITLES[impl] for impl in IMPLEMENTATIONS)]
    lines = [[row["label"]] + [time_text(row[impl]) for impl in IMPLEMENTATIONS] + [
        _copy_share(row), " / ".join(_graph(row[impl]) for impl in IMPLEMENTATIONS)] for row in mine]
    if not mine:
        return [f"## {_size_title(size)} (no op measured)"]
    # One read of the logits at the copy's bandwidth takes half the copy's time.
    copy_us = mine[0]["copy_us"]
    title = f"## {_size_title(size)} (copy of the logits {copy_us:.1f} µs, one read {copy_us / 2:.1f} µs)"
    return [title, ""] + markdown_table(header, lines)


def _calls(rows: list[dict]) -> list[str]:
    seen, lines = set(), []
    for row in rows:
        if row["op"] not in seen:
            seen.add(row["op"])
            lines.append([row["label"]] + [row[impl]["call"] if row[impl] else NO_CALL for impl in IMPLEMENTATIONS])
    return ["## What each column calls", ""] + markdown_table(["op"] + [TITLES[impl] for impl in IMPLEMENTATIONS],
                                                               lines)


def markdown(result: dict) -> str:
    """The whole report: header, the summary in the issue's layout, one table per size, the calls."""
    meta, rows = result["meta"], result["rows"]
    header = [
        "# Sampling kernels: time per call",
        "",
        f"{meta['device']} · torch {meta['torch']} · triton {meta['triton']} · flashinfer {meta['flashinfer']}"
        f" · {meta['date']}",
        f"Sizes (B x V, {meta.get('dtype', 'bf16')} logits from randn): "
        f"{', '.join(_size_title(s) for s in meta['sizes'])}.",
        f"Command: `{meta['command']}`",
        f"Method: {meta['method']}. Every call first restores the logits from a pristine copy; the copy "
        "alone is timed too (\"copy\") and subtracted, so figures are net of it. % of copy BW = copy time / "
        "our time (the copy reads and writes the logits once; an op that only reads them can exceed 100%). "
        "Graph-capturable: a warm-up call on a side stream, capture of one call, one replay. "
        f"{NO_CALL}: no matching call; n/a: not available here.",
    ]
    body = ["## Summary (ours, µs)", ""] + _summary(rows, meta["sizes"])
    if any(row.get("copy_gpu_us") is not None for row in rows):
        body += ["", "## GPU time alone (CUDA graph replay, µs)", "",
                 "Each call's captured graph replayed and timed as above, net of the restore's replay: "
                 "where a figure here is far below the summary's, the call's host work bounds it there.",
                 ""] + _summary(rows, meta["sizes"], gpu_time_text, "copy_gpu_us")
    for size in meta["sizes"]:
        body += [""] + _per_size(rows, size)
    return "\n".join(header + [""] + body + [""] + _calls(rows)) + "\n"
