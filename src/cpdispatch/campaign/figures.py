"""The campaign report's figures: each takes the frame its table is built from (`analysis`) and returns the
figure with what it drew (`drawing.Drawn`), in the campaign's order and the dispatchers' colours."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..plots import _bins
from .analysis import DECISION, HEADLINE, ecdf_points
from .drawing import (
    FULL,
    HALF,
    LINESTYLES,
    MARKERS,
    Drawn,
    Points,
    draw_points,
        legend,
    log_x_if_wide,
    offsets,
    plt,
    rows_axis,
)

DAY = 86400.0
CLASS_METRICS = [("wait", "mean wait [s]"), ("bsld", "mean bounded slowdown")]


def series_label(d: str, p: str, several: bool) -> str:
    """A dispatcher's label, with its predictor when the section has several."""
    return f"{d} / {p}" if several else d


def _levels(table: pd.DataFrame) -> tuple[list[str], list[str]]:
    return (list(dict.fromkeys(map(str, table.index.get_level_values(0)))),
            list(dict.fromkeys(map(str, table.index.get_level_values(1)))))


def _series_panel(ax: Any, table: pd.DataFrame, metric: str, label: str, rows: list[str], preds: list[str],
                  colours: dict[str, Any], table_id: str, drawn: Drawn) -> list[float]:
    """One point per (dispatcher, predictor) row of `table`: dispatcher rows, predictors side by side."""
    off, values = offsets(len(preds)), []
    for (d, p), r in table.iterrows():
        d, p = str(d), str(p)
        i = preds.index(p)
        est = [np.array([float(r[f"{metric}_{k}"])]) for k in ("mean", "lo", "hi")]
        cells = [d, p] if len(preds) > 1 else [d]
        draw_points(ax, Points(series_label(d, p, len(preds) > 1), colours[d], MARKERS[i % len(MARKERS)],
                               np.array([rows.index(d) + off[i]]), est[0], est[1], est[2], [cells], label, table_id),
                    drawn)
        values += [float(e[0]) for e in est]
    return values


def headline_figure(means: pd.DataFrame, diffs: pd.DataFrame, reference: str | None, colours: dict[str, Any],
                    ids: tuple[str, str]) -> tuple[Figure, Drawn]:
    """Top row: each headline metric's mean over replicas with its 95% interval; bottom row (when there is
    a reference and another dispatcher): the paired difference to the reference with its interval."""
    rows, preds = _levels(means)
    two = not diffs.empty and reference is not None
    height = 0.55 + 0.3 * len(rows) * (1 + 0.4 * (len(preds) - 1))
    fig, axes = plt.subplots(2 if two else 1, 3, figsize=(FULL, (2 if two else 1) * height + 0.5), sharey=True,
                             squeeze=False, layout="constrained")
    drawn = Drawn()
    for col, (metric, label, _) in enumerate(HEADLINE):
        values = _series_panel(axes[0][col], means, metric, label, rows, preds, colours, ids[0], drawn)
        rows_axis(axes[0][col], rows, label, np.array(values))
        if not two:
            continue
        ax = axes[1][col]
        values = _series_panel(ax, diffs, metric, label, rows, preds, colours, ids[1], drawn)
        rows_axis(ax, rows, f"{label.removeprefix('mean ')}: minus {reference}", np.array(values), zero=True)
        ax.text(0.02, rows.index(str(reference)), "reference", transform=ax.get_yaxis_transform(), va="center",
                fontsize=8, color="grey")
    legend(fig, markers=preds if len(preds) > 1 else ())
    return fig, drawn


def class_figure(ct: pd.DataFrame, colours: dict[str, Any], ids: dict[str, str]) -> tuple[Figure, Drawn]:
    """Mean wait and mean bounded slowdown per job class (rows), the dispatchers side by side in each."""
    classes = [str(c) for c in ct["class"].cat.categories if (ct["class"] == c).any()]
    series = list(dict.fromkeys(zip(ct["dispatcher"].astype(str), ct["predictor"].astype(str))))
    preds = list(dict.fromkeys(p for _, p in series))
    several = len(preds) > 1
    off = offsets(len(series))
    fig, axes = plt.subplots(1, 2, figsize=(FULL, 1.3 + len(classes) * max(0.34, 0.085 * len(series))),
                             sharey=True, layout="constrained")
    drawn = Drawn()
    for ax, (metric, label) in zip(axes, CLASS_METRICS):
        values: list[float] = []
        for j, (d, p) in enumerate(series):
            sub = ct[(ct["dispatcher"].astype(str) == d) & (ct["predictor"].astype(str) == p)]
            y = np.array([classes.index(str(c)) for c in sub["class"]]) + off[j]
            est = [sub[f"{metric}_{k}"].to_numpy(np.float64) for k in ("mean", "lo", "hi")]
            name = series_label(d, p, several)
            draw_points(ax, Points(name, colours[d], MARKERS[preds.index(p) % len(MARKERS)], y, est[0], est[1],
                                   est[2], [[str(c)] for c in sub["class"]], name, ids[metric]), drawn)
            values += [v for e in est for v in e]
        rows_axis(ax, classes, label, np.array(values))
        families = ct.drop_duplicates("class").sort_values("class")["family"].tolist()
        for i in range(1, len(families)):
            if families[i] != families[i - 1]:
                ax.axhline(i - 0.5, color="grey", linewidth=0.6)
    legend(fig, {d: colours[d] for d in dict.fromkeys(d for d, _ in series)}, preds if several else ())
    return fig, drawn


def ecdf_figure(jm: pd.DataFrame, colours: dict[str, Any]) -> Figure:
    """ECDFs of wait and bounded slowdown per dispatcher: what the means hide (tails, zero waits)."""
    fig, axes = plt.subplots(1, 2, figsize=(HALF, 3.4), layout="constrained")
    preds = list(dict.fromkeys(jm["predictor"].astype(str)))
    for ax, (col, label) in zip(axes, (("wait", "waiting time [s]"), ("bsld", "bounded slowdown"))):
        drawn = []
        for (d, p), g in jm[["dispatcher", "predictor", col]].groupby(["dispatcher", "predictor"], sort=True,
                                                                      observed=True):
            x, y = ecdf_points(g[col].to_numpy())
            if x.size:
                ax.plot(x, y, drawstyle="steps-post", color=colours[str(d)], linewidth=1.1,
                        linestyle=LINESTYLES[preds.index(str(p)) % len(LINESTYLES)])
                drawn.append(x)
        log_x_if_wide(ax, drawn)
        ax.set_xlabel(label)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("share of jobs")
    shown = set(jm["dispatcher"].astype(str).unique())
    legend(fig, {d: colours[d] for d in jm["dispatcher"].cat.categories if d in shown},
           styles=preds if len(preds) > 1 else ())
    return fig


def prediction_figure(ok: pd.DataFrame) -> Figure:
    """CP'19 Figure 1: ECDF of real / predicted duration per predictor (line styles: predictors)."""
    fig, ax = plt.subplots(figsize=(HALF, 3.2), layout="constrained")
    curves = []
    for i, (p, g) in enumerate(ok.groupby("predictor", sort=True, observed=True)):
        x, y = ecdf_points((g["runtime"] / g["predicted"]).to_numpy())
        ax.plot(x, y, drawstyle="steps-post", color="black", linestyle=LINESTYLES[i % len(LINESTYLES)],
                linewidth=1.1, label=str(p))
        curves.append(x)
    log_x_if_wide(ax, curves)
    ax.axvline(1.0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xlabel("real / predicted duration")
    ax.set_ylabel("share of jobs")
    ax.grid(alpha=0.3)
    ax.legend(title="predictor", fontsize=8)
    return fig


def decision_figure(dt: pd.DataFrame, colours: dict[str, Any]) -> Figure:
    """Per dispatcher (and predictor): p50, mean, p99 and max decision time, on a log axis when they span
    decades; markers are the statistics, colours the dispatchers."""
    labels = [series_label(d, p, dt.index.get_level_values(1).nunique() > 1) for d, p in dt.index]
    fig, ax = plt.subplots(figsize=(HALF, 0.9 + 0.32 * len(labels)), layout="constrained")
    off = offsets(len(DECISION))
    for i, (d, _) in enumerate(dt.index):
        for j, (col, _) in enumerate(DECISION):
            ax.plot([dt.iloc[i][col]], [i + off[j] / 2], MARKERS[j], color=colours[str(d)], ms=6)
    rows_axis(ax, labels, "decision time [ms]", dt[[c for c, _ in DECISION]].to_numpy(np.float64).ravel())
    legend(fig, markers=[name for _, name in DECISION])
    return fig


def timeline_figure(lines: Sequence[tuple[str, pd.DataFrame]], colours: dict[str, Any],
                    window: tuple[float, float, float], types: Sequence[str]) -> Figure:
    """One panel per resource type (share in use) and one of waiting jobs, a line per dispatcher over one
    time axis (hours for short runs), binned so that long traces stay light. `window`: first submission,
    last submission (a dashed line: the drain follows) and last end. Earlier dispatchers are drawn wider,
    so that a line hidden under an identical later one still shows."""
    t0, last_submit, t1 = window
    panels = [*(f"util_{t}" for t in types), "waiting"]
    ncols = min(3, len(panels))
    fig, axes = plt.subplots(math.ceil(len(panels) / ncols), ncols, figsize=(FULL, 0.7 + 2.3 * math.ceil(
        len(panels) / ncols)), sharex=True, squeeze=False, layout="constrained")
    unit, scale = ("hours", 3600.0) if t1 - t0 < 3 * DAY else ("days", DAY)
    widths = np.linspace(2.6, 1.0, len(lines)) if len(lines) > 1 else [1.2]
    for ax, col in zip(axes.ravel(), panels):
        for (d, tl), width in zip(lines, widths):
            if col in tl.columns and len(tl):
                edges, mean, _ = _bins(tl["time"].to_numpy(), tl[col].to_numpy(), int(t0), int(t1) + 1, 600)
                ax.stairs((100 if col != "waiting" else 1) * mean, (edges - t0) / scale, color=colours[d],
                          linewidth=width, label=d)
        ax.axvline((last_submit - t0) / scale, color="grey", linewidth=0.8, linestyle="--")
        ax.set_title(f"{col.removeprefix('util_')} in use [% of capacity]" if col != "waiting" else "waiting jobs",
                     fontsize=10)
        ax.grid(alpha=0.3)
        ax.set_ylim(0, 105 if col != "waiting" else None)
    for ax in axes.ravel()[len(panels):]:
        ax.set_visible(False)
    fig.supxlabel(f"time since first submission [{unit}] (dashed: last submission)", fontsize=10)
    legend(fig, {d: colours[d] for d, _ in lines})
    return fig
