"""Figures of one run (utilization, queue) and of several runs compared (waiting time, slowdown,
queue and utilization, one overlay per metric, one colour per run).

Timelines are reduced to bins before drawing (time-weighted mean per bin), so a 400k-decision run
plots in well under a second and the area under the curve is preserved. Most jobs of a busy run
still do not wait, so waits and slowdowns are drawn as the share of jobs at a value or more on
log-log axes (it starts at the share that waited, stated in the legend): box plots over all jobs
collapse onto zero.
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
from matplotlib.colors import TABLEAU_COLORS  # noqa: E402

from .metrics import job_arrays, queue_timeline, summarize, utilization_timeline  # noqa: E402
from .outputs_safety import replacing  # noqa: E402
from .records import SimulationResult  # noqa: E402

MAX_POINTS = 2000  # bins per timeline: ~2 per pixel column of a 10-inch, 110-dpi figure
OVERLAY_POINTS = 400  # bins per curve when several runs share an axis: five curves of 2,000 steps blur
DAY = 86400.0
#: One colour per dispatcher, by its position in the order the runs are given (the demo's, a
#: campaign's): matplotlib's default cycle (tab10), the same in every figure of a comparison.
DISPATCHER_COLOURS: tuple[str, ...] = tuple(str(c) for c in TABLEAU_COLORS.values())
#: One colour per resource type, for every figure that colours types: the default cycle in the
#: presets' type order (what the per-run plots always drew); other types take their position's.
RESOURCE_COLOURS: dict[str, str] = dict(zip(("core", "mem", "gpu", "mic"), DISPATCHER_COLOURS, strict=False))
#: (first submission, last submission, end of the time axis): one per comparison, so that all its
#: timelines share the x-range and mark the same submit window
Span = tuple[int, int, int]


def dispatcher_colour(position: int) -> str:
    return DISPATCHER_COLOURS[position % len(DISPATCHER_COLOURS)]


def resource_colour(name: str, position: int) -> str:
    return RESOURCE_COLOURS.get(name, DISPATCHER_COLOURS[position % len(DISPATCHER_COLOURS)])


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


def level_mean(times: np.ndarray, levels: np.ndarray, t0: int, t1: int) -> float | None:
    """Time-weighted mean of a step function over [t0, t1] (None for an empty interval): the means
    the legends state (utilisation by the same definition as summary.json's)."""
    if t1 <= t0:
        return None
    if times.size == 0:
        return 0.0
    return float(_bins(times, levels, t0, t1, n=1)[1][0])


def tail_points(values: np.ndarray, total: int, limit: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Sorted values and the share of `total` jobs with a value >= each (the complementary ECDF
    over all jobs, of which `values` are those above the metric's floor), thinned to `limit` evenly
    spaced ranks (first and last kept), so that a curve over a million jobs stays light."""
    v = np.sort(values)
    share = (v.size - np.arange(v.size)) / max(total, 1)
    idx = np.unique(np.linspace(0, v.size - 1, min(v.size, limit)).round().astype(np.int64))
    return v[idx], share[idx]


def _empty(ax: Axes, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="grey")


def _title(result: SimulationResult, what: str) -> str:
    return f"{result.system.name}: {what} ({result.dispatcher}, predictor {result.predictor})"


def span_of(results: Sequence[SimulationResult]) -> Span:
    """The shared time axis: first to last submission over all runs, to the last end or call."""
    submits = [r.job.submit for res in results for r in res.records]
    ends = [r.end for res in results for r in res.records if r.end is not None]
    calls = [d.time for res in results for d in res.decisions]
    t0, last = min(submits, default=0), max(submits, default=0)
    return t0, last, max([last, *ends, *calls]) + 1


def _time_axis(ax: Axes, span: Span) -> None:
    """Same x-range everywhere, the submit window shaded."""
    t0, last, t1 = span
    ax.axvspan(0.0, (last - t0) / DAY, color="grey", alpha=0.12, linewidth=0, label="submit window")
    ax.set_xlim(0.0, (t1 - t0) / DAY)
    ax.grid(alpha=0.3)


def plot_run(result: SimulationResult, out_dir: str | Path, span: Span | None = None) -> list[Path]:
    """Write utilization.png and queue.png for one run (on `span`'s time axis, default its own)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    span = span or span_of([result])
    return [_plot_utilization(result, span, out / "utilization.png"),
            _plot_queue(result, span, out / "queue.png")]


def _last_end(result: SimulationResult, default: int) -> int:
    """The end of the run's last job: summary.json's whole-run utilisation ends there."""
    return max((r.end for r in result.records if r.end is not None), default=default)


def _utilization_label(name: str, times: np.ndarray, used: np.ndarray, cap: float, result: SimulationResult,
                       span: Span) -> str:
    t0, last, _ = span
    sub, whole = level_mean(times, used, t0, last), level_mean(times, used, t0, _last_end(result, t0))
    pct = ["-" if u is None else f"{100 * u / cap:.1f}%" for u in (sub, whole)]
    return f"{name}: {pct[0]} submit window, {pct[1]} run"


def _plot_utilization(result: SimulationResult, span: Span, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(10, 4.5))
    drawn = False
    t0, _, t1 = span
    for k, (t, cap) in enumerate(zip(result.system.types, result.system.totals, strict=True)):
        times, used = utilization_timeline(result, t)
        if cap <= 0 or times.size == 0:
            continue
        edges, mean, _ = _bins(times, used, t0, t1)
        ax.stairs(100.0 * mean / cap, (edges - t0) / DAY, linewidth=0.9, color=resource_colour(t, k),
                  label=_utilization_label(t, times, used, cap, result, span))
        drawn = True
    _time_axis(ax, span)
    if drawn:
        ax.legend(title="resource type: time-averaged use", loc="upper right", fontsize=8)
    else:
        _empty(ax, "no started jobs")
    ax.set_ylim(0, 105)
    ax.set_xlabel("time since first submission [days]")
    ax.set_ylabel("in use [% of capacity]")
    ax.set_title(_title(result, "utilization per resource type"))
    return _save(fig, path)


def _plot_queue(result: SimulationResult, span: Span, path: Path) -> Path:
    fig, ax = plt.subplots(figsize=(10, 4.5))
    times, queued = queue_timeline(result)
    t0, _, t1 = span
    if times.size:
        edges, mean, _ = _bins(times, queued, t0, t1)
        ax.stairs(mean, (edges - t0) / DAY, fill=True, alpha=0.5, label="queued jobs (time-weighted mean per bin)")
        ax.set_ylim(bottom=0)
    else:
        _empty(ax, "no dispatcher calls")
    _time_axis(ax, span)
    ax.legend(loc="upper right", fontsize=8)
    ax.set_xlabel("time since first submission [days]")
    ax.set_ylabel("queued jobs after each dispatch")
    ax.set_title(_title(result, "queue length"))
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
                    out_dir: str | Path, run_dirs: Sequence[str | Path] | None = None) -> list[Path]:
    """Write waiting.png, slowdown.png, queue.png and utilization.png overlaying runs (pairs
    (summary, result), or results) in their order, run i in `dispatcher_colour(i)`; with `run_dirs`
    (one per run), also each run's own plots there, all on one time axis."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    pairs = [r if isinstance(r, tuple) else (summarize(r), r) for r in runs]
    labels = _labels([s for s, _ in pairs])
    results = [res for _, res in pairs]
    span = span_of(results)
    arrays = [job_arrays(res) for res in results]
    paths = [
        _tail([a["wait"].astype(np.float64) for a in arrays], [a["wait"] > 0 for a in arrays], labels,
              "that waited", ("Waiting time", "waiting time [s]", 0), out / "waiting.png"),
        _tail([a["bounded_slowdown"] for a in arrays], [a["bounded_slowdown"] > 1 for a in arrays], labels,
              "above 1", ("Bounded slowdown", "bounded slowdown (bound 10 s)", 2), out / "slowdown.png"),
        _queue_overlay(results, labels, span, out / "queue.png"),
        _utilization_overlay(results, labels, span, out / "utilization.png"),
    ]
    if run_dirs is not None:
        for res, folder in zip(results, run_dirs, strict=True):
            paths += plot_run(res, folder, span)
    return paths


def _tail(values: list[np.ndarray], affected: list[np.ndarray], labels: list[str], what: str,
          axis: tuple[str, str, int], path: Path) -> Path:
    """Per run, the share of its started jobs with a value >= x, on log-log axes: it starts at the
    share of jobs `affected` (above the metric's floor, 0 or 1, which a log axis cannot show), and
    a lower curve is better at every x, however few jobs waited."""
    fig, ax = plt.subplots(figsize=(9, 4.8))
    for i, (v, hit, label) in enumerate(zip(values, affected, labels, strict=True)):
        x, share = tail_points(v[hit], v.size)
        text = (f"{label}: no started jobs" if v.size == 0
                else f"{label}: {100 * hit.mean():.1f}% of {v.size:,}; mean {v.mean():,.{axis[2]}f}")
        if x.size == 0:
            ax.plot([], [], color=dispatcher_colour(i), label=text)
            continue
        ax.step(np.r_[1.0, x], np.r_[share[0], share], where="pre", color=dispatcher_colour(i), label=text,
                linewidth=1.3)
    total = max([v.size for v in values] + [1])
    if any(h.any() for h in affected):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_ylim(0.5 / total, 1.1)
    else:
        _empty(ax, f"no jobs {what}")
    ax.set_xlim(left=1.0)
    ax.set_xlabel(axis[1])
    ax.set_ylabel(f"share of the jobs with {axis[0].lower()} ≥ x")
    ax.set_title(f"{axis[0]}: share of the started jobs at x or more (lower is better)\n"
                 f"left end: the share of the jobs {what} (log-log axes)", fontsize=10)
    ax.legend(loc="lower left", fontsize=8, title=f"dispatcher: jobs {what}; mean over all", title_fontsize=8)
    ax.grid(alpha=0.3, which="both")
    return _save(fig, path)


def _bin_text(span: Span) -> str:
    width = span[2] - span[0]
    return f"time-weighted mean per bin of {width / max(1, min(OVERLAY_POINTS, width)) / 60:,.1f} min"


def _queue_overlay(results: list[SimulationResult], labels: list[str], span: Span, path: Path) -> Path:
    """Queue length of every run over one time axis; the legend's means share their denominators, so
    they order the runs as their total waiting times do."""
    fig, ax = plt.subplots(figsize=(10, 4.5))
    t0, last, t1 = span
    for i, (res, label) in enumerate(zip(results, labels, strict=True)):
        times, queued = queue_timeline(res)
        if times.size == 0:
            ax.plot([], [], color=dispatcher_colour(i), label=f"{label}: no dispatcher calls")
            continue
        edges, mean, _ = _bins(times, queued, t0, t1, OVERLAY_POINTS)
        means = [level_mean(times, queued, t0, t) for t in (last, t1)]
        text = f"{label}: mean " + ", ".join("-" if m is None else f"{m:,.1f}" for m in means)
        ax.stairs(mean, (edges - t0) / DAY, color=dispatcher_colour(i), label=text, linewidth=1.2)
    _time_axis(ax, span)
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper right", fontsize=8, title="dispatcher: mean in the submit window, over the whole axis",
              title_fontsize=8)
    ax.set_xlabel("time since first submission [days]")
    ax.set_ylabel("queued jobs after each dispatch")
    ax.set_title(f"{results[0].system.name if results else ''}: queue length ({_bin_text(span)})", fontsize=10)
    return _save(fig, path)


def _utilization_overlay(results: list[SimulationResult], labels: list[str], span: Span, path: Path) -> Path:
    """One panel per resource type some run used, every run overlaid on the same time axis."""
    system = results[0].system if results else None
    types = [] if system is None else [(t, cap) for t, cap in zip(system.types, system.totals, strict=True)
                                       if cap > 0]
    timelines = {t: [utilization_timeline(res, t) for res in results] for t, _ in types}
    types = [(t, cap) for t, cap in types if any(times.size for times, _ in timelines[t])]
    fig, axes = plt.subplots(max(1, len(types)), 1, figsize=(11, 1.2 + 2.5 * max(1, len(types))),
                             sharex=True, squeeze=False)
    t0, _, t1 = span
    for ax, (t, cap) in zip(axes[:, 0], types, strict=False):
        for i, ((times, used), res, label) in enumerate(zip(timelines[t], results, labels, strict=True)):
            text = _utilization_label(label, times, used, cap, res, span)
            if times.size == 0:
                ax.plot([], [], color=dispatcher_colour(i), label=text)
                continue
            edges, mean, _ = _bins(times, used, t0, t1, OVERLAY_POINTS)
            ax.stairs(100.0 * mean / cap, (edges - t0) / DAY, color=dispatcher_colour(i), label=text,
                      linewidth=1.1)
        _time_axis(ax, span)
        ax.set_ylim(0, 105)
        ax.set_ylabel(f"{t} in use [%]")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title=f"{t}: time-averaged use",
                  title_fontsize=8)
    if not types:
        _time_axis(axes[0, 0], span)
        _empty(axes[0, 0], "no started jobs")
    axes[-1, 0].set_xlabel("time since first submission [days]")
    axes[0, 0].set_title(f"Utilization per resource type, every dispatcher ({_bin_text(span)})", fontsize=10)
    return _save(fig, path)
