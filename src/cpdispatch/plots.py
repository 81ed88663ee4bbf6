"""Figures of one run (utilization, queue) and of several runs (waiting time, slowdown).

Timelines are reduced to at most `MAX_POINTS` bins before drawing (time-weighted mean per bin,
plus the per-bin maximum for the queue), so a 400k-decision run plots in well under a second
and the area under the curve is preserved.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402

from .metrics import job_arrays, queue_timeline, summarize, utilization_timeline  # noqa: E402
from .outputs_safety import replacing  # noqa: E402
from .records import SimulationResult  # noqa: E402

MAX_POINTS = 2000  # bins per timeline: ~2 per pixel column of a 10-inch, 110-dpi figure
DAY = 86400.0


def _bins(times: np.ndarray, levels: np.ndarray, t0: int, t1: int, n: int = MAX_POINTS
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reduce a step function (level 0 before `times[0]`) over [t0, t1] to <= n bins.

    Returns the n + 1 bin edges, the time-weighted mean and the maximum level in each bin.
    """
    t1 = max(t1, t0 + 1)
    n = max(1, min(n, int(t1 - t0)))
    edges = np.linspace(t0, t1, n + 1)
    t = np.concatenate([[min(t0, times[0]) - 1], times]).astype(np.float64)
    lv = np.concatenate([[0], levels]).astype(np.float64)
    area = np.concatenate([[0.0], np.cumsum(lv[:-1] * np.diff(t))])  # integral up to t[i]
    idx = np.searchsorted(t, edges, side="right") - 1
    integral = area[idx] + lv[idx] * (edges - t[idx])
    mean = np.diff(integral) / np.diff(edges)
    peak = np.maximum.reduceat(lv, idx[:-1])
    inside_next = t[idx[1:]] < edges[1:]  # the level holding at a right edge began inside the bin
    peak = np.where(inside_next, np.maximum(peak, lv[idx[1:]]), peak)
    return edges, mean, peak


def _empty(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="grey")


def _title(result: SimulationResult, what: str) -> str:
    return f"{result.system.name}: {what} ({result.dispatcher}, predictor {result.predictor})"


def plot_run(result: SimulationResult, out_dir: str | Path) -> list[Path]:
    """Write utilization.png and queue.png for one run; return their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    submits = [r.job.submit for r in result.records]
    t0 = min(submits, default=0)
    return [_plot_utilization(result, t0, out / "utilization.png"),
            _plot_queue(result, t0, out / "queue.png")]


def _plot_utilization(result: SimulationResult, t0: int, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(10, 4.5))
    drawn = False
    for t, cap in zip(result.system.types, result.system.totals, strict=True):
        times, used = utilization_timeline(result, t)
        if cap <= 0 or times.size == 0:
            continue
        edges, mean, _ = _bins(times, used, t0, int(times[-1]))
        ax.stairs(100.0 * mean / cap, (edges - t0) / DAY, label=t, linewidth=0.9)
        drawn = True
    if drawn:
        ax.legend(title="resource type", loc="upper right")
    else:
        _empty(ax, "no started jobs")
    ax.set_ylim(0, 105)
    ax.set_xlabel("time since first submission [days]")
    ax.set_ylabel("in use [% of capacity]")
    ax.set_title(_title(result, "utilization per resource type"))
    ax.grid(alpha=0.3)
    return _save(fig, path)


def _plot_queue(result: SimulationResult, t0: int, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(10, 4.5))
    times, queued = queue_timeline(result)
    if times.size:
        t1 = int(times[-1]) + 1
        edges, mean, peak = _bins(times, queued, t0, t1)
        x = (edges - t0) / DAY
        ax.stairs(peak, x, fill=True, alpha=0.3, label="maximum in bin")
        ax.stairs(mean, x, label="time-weighted mean", linewidth=0.9)
        ax.legend(loc="upper right")
        ax.set_ylim(bottom=0)
    else:
        _empty(ax, "no dispatcher calls")
    ax.set_xlabel("time since first submission [days]")
    ax.set_ylabel("queued jobs after each dispatch")
    ax.set_title(_title(result, "queue length"))
    ax.grid(alpha=0.3)
    return _save(fig, path)


def _save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    with replacing(path) as tmp:
        fig.savefig(tmp, dpi=110)
    plt.close(fig)
    return path


def _labels(summaries: list[dict[str, Any]]) -> list[str]:
    """Dispatcher names, qualified by predictor when that is what tells runs apart."""
    base = [str(s.get("dispatcher", "?")) for s in summaries]
    if len(set(base)) == len(base):
        return base
    return [f"{b}/{s.get('predictor', '?')}" for b, s in zip(base, summaries, strict=True)]


def plot_comparison(runs: Sequence[tuple[dict[str, Any], SimulationResult] | SimulationResult],
                    out_dir: str | Path) -> list[Path]:
    """Write waiting.png and slowdown.png comparing runs (pairs (summary, result), or results).

    Bar = mean over started jobs; box = quartiles and median; whiskers = 5th and 95th percentiles.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pairs = [r if isinstance(r, tuple) else (summarize(r), r) for r in runs]
    labels = _labels([s for s, _ in pairs])
    arrays = [job_arrays(res) for _, res in pairs]
    return [
        _compare([a["wait"].astype(np.float64) for a in arrays], labels, "waiting time [s]",
                 "Waiting time per dispatcher", out / "waiting.png", floor=0.0),
        _compare([a["bounded_slowdown"] for a in arrays], labels, "bounded slowdown (bound 10 s)",
                 "Bounded slowdown per dispatcher", out / "slowdown.png", floor=1.0),
    ]


def _compare(values: list[np.ndarray], labels: list[str], ylabel: str, title: str, path: Path,
             floor: float) -> Path:
    """Bars from `floor` to the mean, with percentile boxes; log scale when values span decades."""
    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(labels) + 2), 4.8))
    pos = np.arange(len(labels), dtype=np.float64)
    means = np.array([v.mean() if v.size else floor for v in values])
    ax.bar(pos, means - floor, bottom=floor, width=0.6, alpha=0.45, label="mean")
    stats = []
    for v, label in zip(values, labels, strict=True):
        if v.size == 0:
            continue
        p5, q1, med, q3, p95 = np.percentile(v, [5, 25, 50, 75, 95])
        stats.append({"label": label, "med": med, "q1": q1, "q3": q3, "whislo": p5, "whishi": p95,
                      "fliers": []})
    with_data = [i for i, v in enumerate(values) if v.size]
    if stats:
        ax.bxp(stats, positions=pos[with_data], widths=0.3, showfliers=False)
    top = max([float(v.max()) for v in values if v.size] + [floor + 1.0])
    if top > 100 * max(floor, 1.0):
        # symlog keeps zero waits drawable; slowdowns are >= 1 so a plain log axis works.
        if floor > 0:
            ax.set_yscale("log")
        else:
            ax.set_yscale("symlog", linthresh=1.0)
    for p, m, v in zip(pos, means, values, strict=True):
        text = f"{m:,.1f}" if v.size else "no started jobs"
        ax.annotate(text, (p, m), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=8,
                    zorder=5, bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85})
    tilt = len(labels) > 4
    ax.set_xticks(pos, labels, rotation=30 if tilt else 0, ha="right" if tilt else "center")
    ax.set_xlim(-0.6, len(labels) - 0.4)
    ax.set_ylabel(ylabel)
    ax.set_xlabel("dispatcher")
    ax.set_title(f"{title}\n(bar: mean; box: quartiles; whiskers: 5th-95th percentile)", fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)
