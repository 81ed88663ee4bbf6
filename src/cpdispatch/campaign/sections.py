"""One (workload, load factor) section of the campaign report: the headline metrics over replicas and
their paired differences to the reference, the job classes, the distributions, the decision times and
the prediction error, each figure beside or above the table it draws."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..metrics import BOUND_S
from .analysis import (
    DECISION,
    HEADLINE,
    MAX_ECDF,
    class_table,
    decision_table,
    paired_table,
    prediction_table,
    replica_table,
    workload_table,
)
from .drawing import emit
from .figures import (
    CLASS_METRICS,
    class_figure,
    decision_figure,
    ecdf_figure,
    headline_figure,
    prediction_figure,
    series_label,
)
from .html import Html, estimate_of, figure, grid, h, num, p, table

#: The headings of each (workload, load factor) section (a part without data is left out).
SECTION_HEADINGS = ("Mean over replicas and paired differences (PCP'20 Figures 4–5)",
                    "Job classes (CP'19 Figure 4)",
                    "Distributions of waiting time and bounded slowdown",
                    "Decision and simulation time (PCP'20 Tables 1–2)",
                    "Prediction accuracy (CP'19 Figure 1)")


@dataclass(frozen=True)
class Context:
    """What every section shares: where figures go, the dispatchers' colours, the reference."""

    out: Path
    colours: dict[str, Any]
    reference: str | None


def section_title(run: pd.Series) -> str:
    """The h2 (and table of contents entry) of a run's section."""
    return f"Workload {run['workload']} at load factor {float(run['load_factor']):g}"


def section(sec: int, sruns: pd.DataFrame, jm: pd.DataFrame, ctx: Context) -> str:
    """Everything about one (workload, load factor)."""
    prefix = f"s{sec + 1:02d}"
    done = sruns[sruns["status"] == "done"]
    names = [str(d) for d in sruns["dispatcher"].cat.categories if (sruns["dispatcher"] == d).any()]
    preds = [str(x) for x in sruns["predictor"].cat.categories if (sruns["predictor"] == x).any()]
    summary = (f"{len(sruns)} runs ({len(done)} done, {len(sruns) - len(done)} failed), "
               f"{done['replica'].nunique()} replicas; system "
               f"{', '.join(sorted(sruns['system'].astype(str).unique()))}; dispatchers {', '.join(names)}; "
               f"predictor{'s' if len(preds) > 1 else ''} {', '.join(preds)}.")
    parts = [f'<section id="{prefix}">', h(2, section_title(sruns.iloc[0])), p(summary)]
    if done.empty:
        parts.append(p("No completed run in this section."))
    else:
        parts += [_headline(done, ctx, prefix), _classes(jm, done, ctx, prefix),
                  grid(_distributions(jm, ctx, prefix), _decisions(done, ctx, prefix)), _prediction(jm, ctx, prefix)]
    return "".join(parts) + "</section>\n"


def _series_cells(d: str, pr: str, several: bool) -> list[str]:
    return [d, pr] if several else [d]


def _headline(done: pd.DataFrame, ctx: Context, prefix: str) -> str:
    """The headline metrics' means over replicas and, against the reference, their paired differences."""
    metrics = [m for m, _, _ in HEADLINE]
    labels = [label for _, label, _ in HEADLINE]
    means = replica_table(done, metrics)
    ref = ctx.reference if ctx.reference in set(done["dispatcher"].astype(str)) else None
    diffs = paired_table(done, metrics, ref) if ref is not None else pd.DataFrame()
    ids = (f"{prefix}-means", f"{prefix}-diffs")
    fig, drawn = headline_figure(means, diffs, ref, ctx.colours, ids)
    png = emit(fig, ctx.out, f"{prefix}-headline")
    several = means.index.get_level_values(1).nunique() > 1
    lead = ["dispatcher", "predictor"] if several else ["dispatcher"]
    rows = [[*_series_cells(d, pr, several), int(r["runs"]), *(estimate_of(r, m) for m in metrics)]
            for (d, pr), r in means.iterrows()]
    left = table([*lead, "replicas", *labels], rows, left=len(lead), ident=ids[0])
    note = ("Top: mean over replicas of each run's mean over its jobs, with the 95% Student-t interval over "
            "replicas (cut at the lowest possible value; n=1: one replica, no interval). ")
    right = ""
    if ref is None:
        note += "No paired differences: the reference dispatcher has no completed run here."
    elif diffs.empty:
        note += "No paired differences: the reference is the only dispatcher here."
    else:
        note += (f"Bottom: the paired difference to the reference {ref} (a dispatcher's value minus {ref}'s on "
                 f"the same replica; < 0: lower than {ref}), 95% paired t interval and p-value.")
        rows = [[*_series_cells(d, pr, several), int(r["pairs"]), *(estimate_of(r, m) for m in metrics)]
                for (d, pr), r in diffs.iterrows()]
        right = (p(f"Paired difference to {ref} (mean [95% interval] p):")
                 + table([*lead, "pairs", *labels], rows, left=len(lead), ident=ids[1]))
    caption = note + " Log or symmetric-log axis when the values span decades."
    return (h(3, SECTION_HEADINGS[0]) + figure(png, f"{prefix}-headline", caption, drawn.data())
            + grid(p("Mean over replicas [95% interval]:") + left, right))


def _classes(jm: pd.DataFrame, done: pd.DataFrame, ctx: Context, prefix: str) -> str:
    """Mean wait and bounded slowdown per job class, with intervals over replicas."""
    ct = class_table(jm, done) if not jm.empty else pd.DataFrame()
    if ct.empty:
        return ""
    ids = {m: f"{prefix}-class-{m}" for m, _ in CLASS_METRICS}
    fig, drawn = class_figure(ct, ctx.colours, ids)
    png = emit(fig, ctx.out, f"{prefix}-classes")
    several = ct["predictor"].nunique() > 1
    series = list(dict.fromkeys(zip(ct["dispatcher"].astype(str), ct["predictor"].astype(str))))
    heads = ["job class", "jobs per replica", *(series_label(d, pr, several) for d, pr in series)]
    blocks = []
    for metric, label in CLASS_METRICS:
        rows = []
        for cls, g in ct.groupby("class", sort=True, observed=True):
            cells = {(str(r.dispatcher), str(r.predictor)): estimate_of(r._asdict(), metric)
                     for r in g.itertuples(index=False)}
            rows.append([str(cls), num(g["jobs_mean"].mean(), 0), *(cells.get(s, Html("-")) for s in series)])
        blocks.append(p(f"{label} [95% interval over replicas]:") + table(heads, rows, ident=ids[metric]))
    caption = (f"Per job class, mean over replicas of each run's mean over the class's jobs, with the 95% interval "
               f"over replicas. Classes: the resource type a job asks (where the system has GPUs or MICs), run "
               f"time (short < 1 h, medium 1–5 h, long > 5 h; for medium and long jobs the bounded slowdown is "
               f"the slowdown of CP'19 Figure 4) and width (narrow: 1 unit). Bounded slowdown with {BOUND_S} s.")
    return h(3, SECTION_HEADINGS[1]) + figure(png, f"{prefix}-classes", caption, drawn.data()) + grid(*blocks)


def _distributions(jm: pd.DataFrame, ctx: Context, prefix: str) -> str:
    """ECDFs of wait and bounded slowdown: what the means hide (tails, zero waits)."""
    if jm.empty:
        return ""
    png = emit(ecdf_figure(jm, ctx.colours), ctx.out, f"{prefix}-ecdf")
    caption = (f"Cumulative distributions over the started jobs of all replicas (at most {MAX_ECDF} points a "
               "curve; log x axis when the values span more than two decades; line styles: predictors).")
    return h(3, SECTION_HEADINGS[2]) + figure(png, f"{prefix}-ecdf", caption)


def _decisions(done: pd.DataFrame, ctx: Context, prefix: str) -> str:
    """PCP'20 Tables 1-2 and the decision-time statistics (means over replicas of each run's)."""
    dt = decision_table(done)
    several = dt.index.get_level_values(1).nunique() > 1
    lead = ["dispatcher", "predictor"] if several else ["dispatcher"]
    rows = [[*_series_cells(d, pr, several), num(r["dispatch_calls"], 0),
             *(num(r[c], 3) for c, _ in DECISION), num(r["sim_wall_s"], 2)] for (d, pr), r in dt.iterrows()]
    heads = [*lead, "calls", *(f"{n} [ms]" for _, n in DECISION), "simulation [s]"]
    png = emit(decision_figure(dt, ctx.colours), ctx.out, f"{prefix}-decision-time")
    caption = ("Per-run p50, mean (PCP'20 Table 1), p99 and maximum time of one dispatcher call (wall clock) and "
               "the whole simulation (Table 2), averaged over replicas.")
    return (h(3, SECTION_HEADINGS[3]) + figure(png, f"{prefix}-decision-time", caption)
            + table(heads, rows, left=len(lead)))


def _prediction(jm: pd.DataFrame, ctx: Context, prefix: str) -> str:
    """CP'19 Figure 1: real / predicted duration per predictor, with error and bias rates; left out when
    no job has a positive prediction or every prediction is exact."""
    ok = jm.loc[jm["predicted"] > 0, ["predictor", "runtime", "predicted"]] if not jm.empty else jm
    if ok.empty or bool((ok["predicted"] == ok["runtime"]).all()):
        return ""
    png = emit(prediction_figure(ok), ctx.out, f"{prefix}-prediction")
    rows = [[r.predictor, r.jobs, num(r.mae, 1), f"{100 * r.under:.1f} %", f"{100 * r.over:.1f} %"]
            for r in prediction_table(jm).itertuples()]
    heads = ["predictor", "jobs", "mean absolute error [s]", "under-estimated", "over-estimated"]
    caption = ("ECDF of runtime / predicted over started jobs with a positive prediction (all runs of the "
               "predictor pooled); left of 1: over-estimated.")
    return h(3, SECTION_HEADINGS[4]) + grid(figure(png, f"{prefix}-prediction", caption), table(heads, rows))


def across_workloads(runs: pd.DataFrame, metric: str, label: str, ident: str) -> str:
    """The table across workloads for one metric: a row per workload and load (and predictor), a column
    per dispatcher in the campaign's order, the lowest mean of each row in bold."""
    wt = workload_table(runs, metric)
    if wt.empty:
        return ""
    wt = wt.reset_index()
    several = wt["predictor"].nunique() > 1
    names = list(dict.fromkeys(wt["dispatcher"].astype(str)))
    lead = ["workload", "load factor", *(["predictor"] if several else [])]
    rows, best = [], []
    for (w, lf, pr), g in wt.groupby(["workload", "load_factor", "predictor"], sort=False):
        cells = {str(r.dispatcher): r._asdict() for r in g.itertuples(index=False)}
        means = {d: c[f"{metric}_mean"] for d, c in cells.items() if pd.notna(c[f"{metric}_mean"])}
        low = min(means.values()) if means else None
        rows.append([str(w), f"{float(lf):g}", *([str(pr)] if several else []),
                     *(estimate_of(cells[d], metric) if d in cells else Html("-") for d in names)])
        best.append({len(lead) + i for i, d in enumerate(names) if low is not None and means.get(d) == low})
    return p(f"{label}, mean over replicas [95% interval]; lowest in bold:") + table(
        [*lead, *names], rows, left=len(lead), ident=ident, best=best)
