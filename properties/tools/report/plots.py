"""The nightly report's plots, drawn with matplotlib (the optional extra `samplecheck[report]`)
and embedded as PNG data URIs. Without matplotlib every function returns None and the page
says that plots need the extra.
"""

import base64
import io
import time

DPI = 96
MISSING = "plots need matplotlib: pip install 'samplecheck[report]'"


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    plt.rcParams.update({"font.size": 9, "axes.titlesize": 10, "axes.spines.top": False,
                         "axes.spines.right": False})
    return plt


def available() -> bool:
    return _pyplot() is not None


def _data_uri(fig, plt) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def _horizontal_bars(counts: dict[str, float], width: float, color: str, xlabel: str, label: str,
                     margin: float, title: str | None = None) -> str | None:
    """One horizontal bar per entry of `counts`, each labelled with its value (`label` format)."""
    plt = _pyplot()
    if plt is None or not counts:
        return None
    labels, values = list(counts), list(counts.values())
    fig, ax = plt.subplots(figsize=(width, 0.6 + 0.24 * len(labels)))
    ax.barh(range(len(labels)), values, color=color)
    ax.set_yticks(range(len(labels)), labels)
    ax.invert_yaxis()
    if title is not None:
        ax.set_title(title, loc="left")
    ax.set_xlabel(xlabel)
    for i, v in enumerate(values):
        ax.text(v, i, f" {v:{label}}", va="center", fontsize=8)
    ax.set_xlim(0, max(values) * margin)
    return _data_uri(fig, plt)


def coverage_bars(dimension: str, buckets: dict[str, int], examples: int) -> str | None:
    """Examples per bucket of one coverage dimension, as horizontal bars."""
    return _horizontal_bars(buckets, 4.2, "#4c78a8", f"examples (of {examples})", "", 1.18, title=dimension)


def qq_plot(g: list[float], excess: list[float]) -> str | None:
    """Observed p-values against uniform quantiles on -log10 axes, with a 95% band for the
    k-th smallest of n uniforms (Beta(k, n + 1 - k))."""
    plt = _pyplot()
    if plt is None or not (g or excess):
        return None
    import numpy as np
    from scipy import stats

    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.6))
    for ax, (name, values) in zip(axes, (("G-test", g), ("excess test (Bonferroni, conservative)", excess))):
        p = np.sort(np.clip(np.asarray(values, dtype=float), 1e-300, 1.0))
        n = p.size
        if n == 0:
            ax.set_title(f"{name}: no checks", loc="left")
            continue
        k = np.arange(1, n + 1)
        expected = -np.log10(k / (n + 1))
        ax.fill_between(expected, -np.log10(stats.beta.ppf(0.975, k, n + 1 - k)),
                        -np.log10(stats.beta.ppf(0.025, k, n + 1 - k)), color="#dddddd", label="95% band")
        ax.plot(expected, expected, color="#888888", lw=1)
        ax.scatter(expected, -np.log10(p), s=9, color="#e45756" if name == "G-test" else "#4c78a8", label=name)
        ax.set_xlabel("expected -log10 p (uniform)")
        ax.set_ylabel("observed -log10 p")
        ax.set_title(f"{name}: {n} checks", loc="left")
        ax.legend(loc="upper left", fontsize=8, frameon=False)
    fig.tight_layout()
    return _data_uri(fig, plt)


def time_bars(per_property: dict[str, float]) -> str | None:
    """Seconds per property, as horizontal bars."""
    return _horizontal_bars(per_property, 6.5, "#72b7b2", "seconds (summed over workers)", ".1f", 1.15)


def trends(nights: list[dict]) -> str | None:
    """Wall time, examples and failing tests per night (`changes["trend"]` plus tonight)."""
    plt = _pyplot()
    if plt is None or len(nights) < 2:
        return None
    days = [time.strftime("%m-%d %H:%M", time.gmtime(n["started"])) for n in nights]
    fig, axes = plt.subplots(1, 3, figsize=(9.6, 2.8))
    for ax, key, title in zip(axes, ("seconds", "examples", "failed"),
                              ("test seconds", "examples drawn", "failing tests")):
        ax.plot(days, [n[key] for n in nights], marker="o", color="#4c78a8")
        ax.set_title(title, loc="left")
        ax.tick_params(axis="x", rotation=45, labelsize=7)
        ax.set_ylim(bottom=0)
    fig.tight_layout()
    return _data_uri(fig, plt)
