"""The campaign report: one self-contained `index.html` (plus each figure as PNG and SVG) rebuilt from
`runs.parquet` and `jobs.parquet` alone, so a report never needs the run folders.

What it shows, per (workload, load factor): the PCP'20 papers' Tables 1-2 (dispatching and simulation
time) and Figures 4-5 (slowdown and waiting time with one-SD error bars, mean and 95 % CI over
replicas), CP'19 Figure 4 (medium and long jobs) with a short/long x narrow/wide table, ECDFs of wait
and bounded slowdown, CP'19 Figure 1 (prediction accuracy) and the decision times. Then the 2014
paper's utilisation and queue over time for one run, the instance comparisons (PCP'20 Figures 6-7)
when present, and the failed runs.

Job metrics follow `cpdispatch.metrics`: wait = start - submit, run = end - start (the trace runtime
unless the job was killed), slowdown = (wait + run) / run (run 0: max(1, wait)), bounded slowdown =
max(1, (wait + run) / max(run, 10)); duration classes use that run time. Job-level figures pool the
jobs of all replicas; run-level ones average the replicas.
"""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogFormatter  # noqa: E402

from ..errors import CpdispatchError  # noqa: E402
from ..metrics import BOUND_S, MEDIUM_S, SHORT_S, slowdowns  # noqa: E402
from ..outputs_safety import replacing  # noqa: E402
from ..plots import _bins  # noqa: E402

MAX_ECDF = 2000  # points per ECDF curve: the shape at any size, a bounded SVG
DAY = 86400.0
SETTINGS = ["key", "workload", "system", "dispatcher", "dispatcher_name", "predictor", "load_factor", "replica"]
RUN_NUMBERS = ["jobs", "completed", "killed", "rejected", "avg_wait", "sd_wait", "p50_wait", "p95_wait", "max_wait",
               "avg_slowdown", "sd_slowdown", "avg_bounded_slowdown", "sd_bounded_slowdown", "makespan",
               "dispatch_calls", "dispatch_ms_mean", "dispatch_ms_p50", "dispatch_ms_p99", "dispatch_ms_max",
               "sim_wall_s", "run_wall_s", "peak_rss_mb"]
JOB_COLUMNS = ["key", "submit", "start", "end", "units", "runtime", "predicted"]
#: (mean column, SD-over-jobs column, axis label, lowest possible value) of PCP'20 Figures 4-5
QUALITY = [("avg_slowdown", "sd_slowdown", "mean slowdown", 1.0),
           ("avg_wait", "sd_wait", "mean waiting time [s]", 0.0),
           ("avg_bounded_slowdown", "sd_bounded_slowdown", f"mean bounded slowdown ({BOUND_S} s)", 1.0)]
DECISION = [("dispatch_ms_p50", "p50"), ("dispatch_ms_mean", "mean"), ("dispatch_ms_p99", "p99"),
            ("dispatch_ms_max", "max")]
#: The headings of each (workload, load factor) section, then those of the whole campaign.
SECTION_HEADINGS = ("Dispatching and simulation time (PCP'20 Tables 1–2)",
                    "Slowdown and waiting time (PCP'20 Figures 4–5)",
                    "Medium and long jobs (CP'19 Figure 4)",
                    "Distributions of waiting time and bounded slowdown",
                    "Prediction accuracy (CP'19 Figure 1)",
                    "Decision time per dispatcher")
CAMPAIGN_HEADINGS = ("Campaign report", "Utilisation and queue over time (2014 paper, Figures 1–6)",
                     "Instance comparisons (PCP'20 Figures 6–7)", "Failed runs")
CSS = """body{font-family:sans-serif;max-width:1250px;margin:1.5em auto;padding:0 1em;color:#222}
h2{border-bottom:2px solid #ccc;margin-top:2em}table{border-collapse:collapse;margin:.5em 0 1em;font-size:.88em}
th,td{border:1px solid #ccc;padding:2px 7px;text-align:right;vertical-align:top}th{background:#f1f1f1}
td.t,table.failed th{text-align:left}table.failed td:last-child{white-space:pre-wrap;font-family:monospace}
figure{margin:1em 0}img{max-width:100%;height:auto}figcaption{font-size:.86em;color:#555}
pre{background:#f6f6f6;padding:.6em;overflow-x:auto}"""


# ---------------------------------------------------------------- reading


def load_runs(campaign_dir: str | Path) -> pd.DataFrame:
    """runs.parquet in key order, numbers as floats (a column of JSON nulls arrives as objects), plus the
    number of its (workload, load factor) section."""
    path = Path(campaign_dir) / "runs.parquet"
    if not path.is_file():
        raise CpdispatchError(f"{campaign_dir}: no runs.parquet (collect the campaign first)")
    runs = pd.read_parquet(path)
    missing = [c for c in [*SETTINGS, "status", "error"] if c not in runs.columns]
    if missing:
        raise CpdispatchError(f"{path}: missing columns {', '.join(missing)}")
    dup = runs["key"][runs["key"].duplicated()]
    if len(dup):
        raise CpdispatchError(f"{path}: run key {dup.iloc[0]} appears more than once")
    for c in runs.columns:
        if c in RUN_NUMBERS or c.startswith(("util_", "capacity_")) or c in ("load_factor", "replica"):
            runs[c] = pd.to_numeric(runs[c], errors="coerce")
    for c in RUN_NUMBERS:
        if c not in runs.columns:
            runs[c] = np.nan
    runs["error"] = runs["error"].fillna("").astype(str)
    runs = runs.sort_values("key", kind="stable").reset_index(drop=True)
    runs["section"] = runs.groupby(["workload", "load_factor"], sort=True).ngroup()
    return runs


def load_jobs(path: Path) -> pd.DataFrame:
    """The job columns the figures need, keys dictionary-encoded: millions of rows stay small."""
    if not path.is_file():
        raise CpdispatchError(f"{path.parent}: no jobs.parquet (collect the campaign first)")
    names = pq.read_schema(path).names
    missing = [c for c in JOB_COLUMNS if c not in names]
    if missing and pq.ParquetFile(path).metadata.num_rows:
        raise CpdispatchError(f"{path}: missing columns {', '.join(missing)}")
    if missing:  # a campaign without any done run: no job column at all
        return pd.DataFrame({c: pd.Series(dtype=str if c == "key" else float) for c in JOB_COLUMNS})
    table = pq.read_table(path, columns=JOB_COLUMNS, read_dictionary=["key"])
    return table.to_pandas(split_blocks=True, self_destruct=True)  # not two copies at once


def _run_rows(keys: pd.Series, runs: pd.DataFrame) -> np.ndarray:
    """Per job, the row of its run in `runs` (-1: a key runs.parquet lacks), through the key dictionary:
    per-row string work on millions of jobs would dominate the report's time."""
    cat = keys if isinstance(keys.dtype, pd.CategoricalDtype) else keys.astype("category")
    pos = pd.Index(runs["key"].astype(str)).get_indexer(cat.cat.categories.astype(str))
    return np.append(pos, -1)[cat.cat.codes.to_numpy()]  # code -1 (no key) picks the appended -1


def _labels(runs: pd.DataFrame, column: str, rows: np.ndarray) -> pd.Categorical:
    """A run column spread over jobs as a categorical: one small code per job, labels in sorted order."""
    codes, names = pd.factorize(runs[column].astype(str), sort=True)
    return pd.Categorical.from_codes(codes[rows], categories=names)


def job_metrics(jobs: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Started jobs with wait, run, slowdown and bounded slowdown, labelled from runs.parquet by key
    (section number; dispatcher and predictor as categoricals)."""
    rows = _run_rows(jobs["key"], runs)
    keep = (rows >= 0) & jobs["start"].notna().to_numpy() & jobs["end"].notna().to_numpy()
    rows = rows[keep]

    def col(name: str) -> np.ndarray:
        return jobs[name].to_numpy(np.float64)[keep]

    submit, start, end = col("submit"), col("start"), col("end")
    wait, run = start - submit, end - start
    sld, bsld = slowdowns(wait, run)
    return pd.DataFrame({
        "section": runs["section"].to_numpy()[rows], "dispatcher": _labels(runs, "dispatcher", rows),
        "predictor": _labels(runs, "predictor", rows), "units": col("units"), "runtime": col("runtime"),
        "predicted": col("predicted"), "wait": wait, "run": run, "slowdown": sld, "bsld": bsld}, copy=False)


def _plain(df: pd.DataFrame) -> pd.DataFrame:
    """Grouped results with plain string labels: categoricals would carry other sections' labels along."""
    for c in df.columns:
        if isinstance(df[c].dtype, pd.CategoricalDtype):
            df[c] = df[c].astype(str)
    return df


# ---------------------------------------------------------------- statistics


def _t_two_sided(t: float, df: int) -> float:
    """P(|T| <= t) for Student's T with integer df (Abramowitz & Stegun 26.7.3-4: no SciPy here)."""
    theta = math.atan(t / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    term = total = 1.0
    if df % 2 == 0:
        for k in range(2, df - 1, 2):
            term *= c2 * (k - 1) / k
            total += term
        return math.sin(theta) * total
    if df == 1:
        return 2.0 / math.pi * theta
    for k in range(3, df - 1, 2):
        term *= c2 * (k - 1) / k
        total += term
    return 2.0 / math.pi * (theta + math.sin(theta) * math.cos(theta) * total)


@lru_cache(maxsize=256)
def t_quantile(df: int, level: float = 0.95) -> float:
    """The two-sided Student t quantile (12.706 for df 1 at 95 %), by bisection on the closed-form CDF."""
    lo, hi = 0.0, 1e4
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _t_two_sided(mid, df) < level else (lo, mid)
    return 0.5 * (lo + hi)


def replica_table(runs: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """Per dispatcher and predictor, for each metric: replicas n, mean, and the 95 % CI (lo, hi; NaN when
    n < 2) of the mean over replicas (Student t): replicas are the independent samples, jobs are not."""
    g = runs.groupby(["dispatcher", "predictor"], sort=True)
    out = pd.DataFrame({"runs": g.size()})
    for m in metrics:
        n, mean, sd = g[m].count(), g[m].mean(), g[m].std(ddof=1)
        t = n.map(lambda k: t_quantile(int(k) - 1) if k > 1 else math.nan)
        half = t * sd / np.sqrt(n)
        out[f"{m}_n"], out[f"{m}_mean"], out[f"{m}_lo"], out[f"{m}_hi"] = n, mean, mean - half, mean + half
    return out


def class_table(jm: pd.DataFrame) -> pd.DataFrame:
    """Short (< 1 h) / long and narrow (1 unit) / wide jobs: count, mean wait and mean bounded slowdown per
    dispatcher and predictor (jobs of all replicas pooled)."""
    duration = pd.Categorical.from_codes((jm["run"].to_numpy() >= SHORT_S).astype(np.int8), ["short", "long"])
    width = pd.Categorical.from_codes((jm["units"].to_numpy() > 1).astype(np.int8), ["narrow", "wide"])
    df = jm[["dispatcher", "predictor", "wait", "bsld"]].assign(duration=duration, width=width)
    out = df.groupby(["dispatcher", "predictor", "duration", "width"], sort=True, observed=True).agg(
        jobs=("wait", "size"), wait=("wait", "mean"), bsld=("bsld", "mean"))
    return _plain(out.reset_index())


def duration_slowdown(jm: pd.DataFrame) -> pd.DataFrame:
    """CP'19 Figure 4: mean slowdown and job count of medium (1-5 h) and long (> 5 h) jobs per dispatcher and
    predictor (jobs of all replicas pooled)."""
    run = jm["run"].to_numpy()
    code = (run >= SHORT_S).astype(np.int8) + (run > MEDIUM_S)
    df = jm[["dispatcher", "predictor", "slowdown"]].assign(
        duration=pd.Categorical.from_codes(code, ["short", "medium", "long"]))[code > 0]
    out = df.groupby(["dispatcher", "predictor", "duration"], sort=True, observed=True).agg(
        jobs=("slowdown", "size"), slowdown=("slowdown", "mean"))
    return _plain(out.reset_index())


def prediction_table(jm: pd.DataFrame) -> pd.DataFrame:
    """Per predictor (all runs pooled): jobs with a prediction, mean absolute error [s] and the shares
    predicted below (under-estimation) and above (over-estimation) the real runtime."""
    df = jm.loc[jm["predicted"].notna(), ["predictor", "predicted", "runtime"]]
    err = df["predicted"] - df["runtime"]
    d = pd.DataFrame({"predictor": df["predictor"], "abs": err.abs(), "under": err < 0, "over": err > 0})
    out = d.groupby("predictor", sort=True, observed=True).agg(jobs=("abs", "size"), mae=("abs", "mean"),
                                                               under=("under", "mean"), over=("over", "mean"))
    return _plain(out.reset_index())


def run_timeline(jobs: pd.DataFrame, capacity: dict[str, float]) -> pd.DataFrame:
    """Event sweep over one run's jobs: after each distinct event time, the running jobs, the waiting jobs
    (submitted, not yet started; rejected jobs never wait) and the used share of each type's capacity."""
    started = jobs[jobs["start"].notna() & jobs["end"].notna()]
    sub, st, en = (started[c].to_numpy(np.float64) for c in ("submit", "start", "end"))
    times = np.unique(np.concatenate([sub, st, en]))
    ones = np.ones(st.size)

    def level(at: Sequence[np.ndarray], delta: Sequence[np.ndarray]) -> np.ndarray:
        idx = np.searchsorted(times, np.concatenate(at))
        return np.cumsum(np.bincount(idx, weights=np.concatenate(delta), minlength=times.size))

    out = {"time": times, "running": level([st, en], [ones, -ones]), "waiting": level([sub, st], [ones, -ones])}
    units = started["units"].to_numpy(np.float64)
    for t, cap in capacity.items():
        col = f"req_{t}"
        if col not in started.columns or not cap > 0:
            continue
        used = units * np.nan_to_num(started[col].to_numpy(np.float64))
        out[f"util_{t}"] = level([st, en], [used, -used]) / cap
    return pd.DataFrame(out)


def ecdf_points(values: np.ndarray, limit: int = MAX_ECDF) -> tuple[np.ndarray, np.ndarray]:
    """Sorted finite values and their cumulative shares, thinned to `limit` evenly spaced ranks (first and
    last kept), so a curve over millions of jobs stays a few thousand points."""
    v = np.sort(values[np.isfinite(values)])
    if v.size == 0:
        return v, v
    idx = np.unique(np.linspace(0, v.size - 1, min(v.size, limit)).round().astype(np.int64))
    return v[idx], (idx + 1) / v.size


# ---------------------------------------------------------------- HTML pieces


def _e(x: Any) -> str:
    """Every string bound for the page goes through here: labels and errors may hold <, & or quotes."""
    return html.escape(str(x))


def _num(x: Any, digits: int = 2) -> str:
    """A table number: '-' when missing, thousands separators, tiny values with 3 significant digits."""
    if x is None or pd.isna(x):
        return "-"
    v = float(x)
    if v != 0 and abs(v) < 0.01:
        return f"{v:.3g}"
    return f"{v:,.{digits}f}"


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]], left: int = 1, cls: str = "") -> str:
    """An HTML table, every cell escaped; the first `left` columns are labels (left-aligned)."""
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f'<td class="t">{_e(c)}</td>' if i < left else f"<td>{_e(c)}</td>"
                                    for i, c in enumerate(r)) + "</tr>\n" for r in rows)
    klass = f' class="{_e(cls)}"' if cls else ""
    return f"<table{klass}><thead><tr>{head}</tr></thead><tbody>\n{body}</tbody></table>\n"


def _p(text: str, cls: str = "") -> str:
    """An escaped paragraph."""
    return f'<p class="{cls}">{_e(text)}</p>\n' if cls else f"<p>{_e(text)}</p>\n"


def _img(png: bytes, alt: str, caption: str) -> str:
    """A figure inlined as base64 PNG: the page must stand alone (no file or network reference)."""
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure><img alt="{_e(alt)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{_e(caption)}</figcaption></figure>\n")


def _emit(fig: Figure, out: Path, name: str, caption: str) -> str:
    """Write the figure as name.png and name.svg into `out`; return it inlined for the page."""
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    with replacing(out / f"{name}.png") as tmp:
        tmp.write_bytes(buf.getvalue())
    with replacing(out / f"{name}.svg") as tmp:
        fig.savefig(tmp, format="svg")
    plt.close(fig)
    return _img(buf.getvalue(), name, caption)


# ---------------------------------------------------------------- figures


def _bars(ax: Axes, means: pd.DataFrame, errs: pd.DataFrame | None, floor: float, ylabel: str,
          legend: str = "predictor") -> None:
    """Grouped bars: a group per row (dispatcher), a bar per column; error bars cut at `floor` below."""
    x = np.arange(len(means.index), dtype=np.float64)
    width = 0.8 / max(1, len(means.columns))
    for j, col in enumerate(means.columns):
        m = means[col].to_numpy(np.float64)
        yerr = None
        if errs is not None:
            e = np.nan_to_num(errs[col].to_numpy(np.float64))
            yerr = np.vstack([np.clip(np.minimum(e, np.nan_to_num(m - floor)), 0.0, None), e])
        ax.bar(x - 0.4 + width * (j + 0.5), m - floor, width, bottom=floor, yerr=yerr, capsize=3,
               label=str(col), alpha=0.85)
    tilt = len(means.index) > 4
    ax.set_xticks(x, [str(i) for i in means.index], rotation=30 if tilt else 0, ha="right" if tilt else "center")
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    if ax.get_yscale() == "linear":
        ax.ticklabel_format(axis="y", useOffset=False)  # slowdowns of 1.0003 read as such, not "+1"
        ax.set_ylim(bottom=floor)
    if len(means.columns) > 1:
        ax.legend(title=legend, fontsize=8)


def _log_x(ax: Axes, values: Sequence[np.ndarray]) -> None:
    """Log x axis when the values span more than two decades (symlog when zeros are among them)."""
    v = np.concatenate([np.asarray(a, dtype=np.float64) for a in values]) if values else np.zeros(0)
    v = v[np.isfinite(v)]
    if v.size == 0 or v.max() <= 0:
        return
    pos = v[v > 0]
    if v.min() > 0 and v.max() / pos.min() > 100:
        ax.set_xscale("log")
    elif v.min() <= 0 and v.max() > 100:
        ax.set_xscale("symlog", linthresh=1.0)


def _ecdf(ax: Axes, groups: Iterable[tuple[str, np.ndarray]], xlabel: str) -> None:
    """One step curve per group, thinned by `ecdf_points`."""
    drawn = []
    for label, values in groups:
        x, y = ecdf_points(values)
        if x.size:
            ax.plot(x, y, drawstyle="steps-post", label=label, linewidth=1.1)
            drawn.append(x)
    _log_x(ax, drawn)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share of jobs")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    if drawn:
        ax.legend(fontsize=7)


def _labelled(jm: pd.DataFrame, column: str) -> list[tuple[str, np.ndarray]]:
    """Values per dispatcher (and predictor when several), for ECDF curves."""
    several = jm["predictor"].nunique() > 1
    return [(f"{d} / {p}" if several else str(d), g[column].to_numpy())
            for (d, p), g in jm[["dispatcher", "predictor", column]].groupby(["dispatcher", "predictor"], sort=True,
                                                                             observed=True)]


def _pivot(df: pd.DataFrame, column: str) -> pd.DataFrame:
    """Mean of `column` over replicas, dispatcher rows x predictor columns (missing cells NaN)."""
    return df.groupby(["dispatcher", "predictor"], sort=True)[column].mean().unstack("predictor")


def _figsize(groups: int, bars: int = 1, height: float = 4.2) -> tuple[float, float]:
    """Wide enough for the bar groups to stay readable, narrow enough for a page."""
    return min(16.0, max(6.5, 2.0 + groups * (0.5 + 0.25 * bars))), height


def _empty(ax: Axes, text: str) -> None:
    """Say why a panel is blank rather than leave an empty frame."""
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="grey")


# ---------------------------------------------------------------- one (workload, load factor) section


def _h3(i: int) -> str:
    """A section's i-th heading (always written, even when its data is missing, so readers can navigate)."""
    return f"<h3>{_e(SECTION_HEADINGS[i])}</h3>\n"


def _tables_1_2(done: pd.DataFrame) -> str:
    """PCP'20 Tables 1-2: dispatching time and simulation time, dispatcher x predictor."""
    parts = [_h3(0)]
    for col, what, digits in (("dispatch_ms_mean", "Table 1: mean dispatching time [ms]", 3),
                              ("sim_wall_s", "Table 2: total simulation time [s]", 2)):
        pv = _pivot(done, col)
        parts.append(_p(f"{what} (mean over replicas); rows dispatcher, columns predictor."))
        rows = [[d, *(_num(v, digits) for v in vals)] for d, vals in zip(pv.index, pv.to_numpy())]
        parts.append(_table(["dispatcher", *map(str, pv.columns)], rows))
    return "".join(parts)


def _quality(done: pd.DataFrame, out: Path, prefix: str) -> str:
    """PCP'20 Figures 4-5 (and bounded slowdown): bars with one-SD error bars, then mean and 95 % CI."""
    parts = [_h3(1)]
    for mean_col, sd_col, label, floor in QUALITY:
        means = _pivot(done, mean_col)
        fig, ax = plt.subplots(figsize=_figsize(len(means.index), len(means.columns)))
        _bars(ax, means, _pivot(done, sd_col), floor, label)
        ax.set_xlabel("dispatcher")
        ax.set_title(f"{label} per dispatcher and predictor")
        caption = (f"{label}: bar = mean over jobs, averaged over replicas; error bar = one standard deviation "
                   f"over jobs ({sd_col}, averaged over replicas), cut at {floor:g} below.")
        parts.append(_emit(fig, out, f"{prefix}-{mean_col}", caption))
    parts.append(_p("Mean over replicas and 95 % confidence interval of that mean (Student t over replicas; "
                    "n=1: a single replica, no interval)."))
    return "".join(parts) + _ci_table(done)


def _ci_table(done: pd.DataFrame) -> str:
    """The numbers behind Figures 4-5, with their uncertainty over replicas."""
    metrics = [m for m, _, _, _ in QUALITY]
    t = replica_table(done, metrics)
    heads = ["dispatcher", "predictor", "replicas"]
    heads += [f"{name} {x}" for name in ("slowdown", "wait [s]", "bounded slowdown") for x in ("mean", "95% CI")]
    rows = []
    for (d, p), r in t.iterrows():
        row: list[Any] = [d, p, int(r["runs"])]
        for m in metrics:
            n = r[f"{m}_n"]
            ci = "n=1" if n == 1 else "-" if n < 1 else f"[{_num(r[f'{m}_lo'])}, {_num(r[f'{m}_hi'])}]"
            row += [_num(r[f"{m}_mean"]), ci]
        rows.append(row)
    return _table(heads, rows, left=2)


def _classes(jm: pd.DataFrame, out: Path, prefix: str) -> str:
    """CP'19 Figure 4 (medium and long jobs' slowdown) and the short/long x narrow/wide table."""
    parts = [_h3(2)]
    if jm.empty:
        return parts[0] + _p("no started job in this section")
    ds = duration_slowdown(jm)
    groups, bars = jm["dispatcher"].nunique(), jm["predictor"].nunique()
    fig, axes = plt.subplots(1, 2, figsize=(max(10.0, _figsize(2 * groups, bars)[0]), 4.4))
    for ax, cls, what in zip(axes, ("medium", "long"), ("1 h ≤ run ≤ 5 h", "run > 5 h")):
        sub = ds[ds["duration"] == cls]
        if sub.empty:
            _empty(ax, f"no {cls} job")
        else:
            _bars(ax, sub.pivot(index="dispatcher", columns="predictor", values="slowdown"), None, 1.0,
                  "mean slowdown")
        ax.set_title(f"{cls} jobs ({what})")
    parts.append(_emit(fig, out, f"{prefix}-duration-classes",
                       "Mean slowdown of medium and long jobs per dispatcher (jobs of all replicas pooled)."))
    rows = [[r.dispatcher, r.predictor, r.duration, r.jobs, _num(r.slowdown)] for r in ds.itertuples()]
    parts.append(_table(["dispatcher", "predictor", "class", "jobs", "mean slowdown"], rows, left=3))
    parts.append(_p("Short (run < 1 h) / long (run ≥ 1 h) x narrow (1 unit) / wide (> 1 unit) jobs "
                    "(jobs of all replicas pooled):"))
    ct = class_table(jm)
    rows = [[r.dispatcher, r.predictor, r.duration, r.width, r.jobs, _num(r.wait), _num(r.bsld)]
            for r in ct.itertuples()]
    heads = ["dispatcher", "predictor", "duration", "width", "jobs", "mean wait [s]", "mean bounded slowdown"]
    return "".join(parts) + _table(heads, rows, left=4)


def _distributions(jm: pd.DataFrame, out: Path, prefix: str) -> str:
    """ECDFs of wait and bounded slowdown per dispatcher: what the means hide (tails, zero waits)."""
    if jm.empty:
        return _h3(3) + _p("no started job in this section")
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(13, 4.6))
    _ecdf(a1, _labelled(jm, "wait"), "waiting time [s]")
    _ecdf(a2, _labelled(jm, "bsld"), f"bounded slowdown ({BOUND_S} s)")
    a1.set_title("waiting time")
    a2.set_title("bounded slowdown")
    caption = (f"Cumulative distributions over started jobs of all replicas (at most {MAX_ECDF} points a "
               "curve; log x axis when the values span more than two decades).")
    return _h3(3) + _emit(fig, out, f"{prefix}-ecdf", caption)


def _prediction(jm: pd.DataFrame, out: Path, prefix: str) -> str:
    """CP'19 Figure 1: real / predicted duration per predictor, with error and bias rates."""
    parts = [_h3(4)]
    ok = jm.loc[jm["predicted"] > 0, ["predictor", "runtime", "predicted"]]
    if ok.empty:
        return parts[0] + _p("no started job with a positive prediction in this section")
    groups = [(str(p), (g["runtime"] / g["predicted"]).to_numpy())
              for p, g in ok.groupby("predictor", sort=True, observed=True)]
    fig, ax = plt.subplots(figsize=(8, 4.4))
    _ecdf(ax, groups, "real / predicted duration")
    ax.axvline(1.0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_title("real / predicted duration per predictor")
    parts.append(_emit(fig, out, f"{prefix}-prediction", "ECDF of runtime / predicted over started jobs with a "
                       "positive prediction (all runs of the predictor pooled); left of 1: over-estimated."))
    rows = [[r.predictor, r.jobs, _num(r.mae, 1), f"{100 * r.under:.1f} %", f"{100 * r.over:.1f} %"]
            for r in prediction_table(jm).itertuples()]
    heads = ["predictor", "jobs", "mean absolute error [s]", "under-estimated", "over-estimated"]
    return "".join(parts) + _table(heads, rows)


def _decisions(done: pd.DataFrame, out: Path, prefix: str) -> str:
    """Decision-time statistics per dispatcher (mean over replicas of each run's statistic)."""
    cols = [c for c, _ in DECISION]
    g = done.groupby(["dispatcher", "predictor"], sort=True)[[*cols, "dispatch_calls"]].mean()
    rows = [[d, p, _num(r["dispatch_calls"], 0), *(_num(r[c], 3) for c in cols)] for (d, p), r in g.iterrows()]
    table = _table(["dispatcher", "predictor", "calls", *(f"{n} [ms]" for _, n in DECISION)], rows, left=2)
    several = g.index.get_level_values("predictor").nunique() > 1
    means = g[cols].rename(columns=dict(DECISION))
    means.index = [f"{d} / {p}" if several else str(d) for d, p in g.index]
    fig, ax = plt.subplots(figsize=_figsize(len(means.index), len(cols)))
    values = means.to_numpy(np.float64)
    positive = values[np.isfinite(values) & (values > 0)]
    if positive.size and positive.max() > 20 * positive.min():
        ax.set_yscale("log")  # p50 and max are often decades apart
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5)))
    _bars(ax, means, None, 0.0, "decision time [ms]", legend="statistic")
    ax.set_title("decision time per dispatcher")
    fig_html = _emit(fig, out, f"{prefix}-decision-time", "Per-run p50, mean, p99 and maximum time of one "
                     "dispatcher call (wall clock), averaged over replicas (log scale when they span decades).")
    return _h3(5) + table + fig_html


def _section(sec: int, sruns: pd.DataFrame, jm: pd.DataFrame, out: Path) -> str:
    """Everything about one (workload, load factor): the papers' tables and figures."""
    first = sruns.iloc[0]
    prefix = f"s{sec + 1:02d}"
    done = sruns[sruns["status"] == "done"]
    parts = [f'<section id="{prefix}"><h2>{_e(_section_title(first))}</h2>\n',
             _p(f"{len(sruns)} runs ({len(done)} done, {len(sruns) - len(done)} failed); system "
                f"{', '.join(map(str, sorted(sruns['system'].astype(str).unique())))}; "
                f"dispatchers {', '.join(sorted(sruns['dispatcher'].astype(str).unique()))}; "
                f"predictors {', '.join(sorted(sruns['predictor'].astype(str).unique()))}.")]
    if done.empty:
        parts.append(_p("no completed run in this section"))
    else:
        parts += [_tables_1_2(done), _quality(done, out, prefix), _classes(jm, out, prefix),
                  _distributions(jm, out, prefix), _prediction(jm, out, prefix), _decisions(done, out, prefix)]
    return "".join(parts) + "</section>\n"


def _section_title(run: pd.Series) -> str:
    """The h2 (and table of contents entry) of a run's section."""
    return f"Workload {run['workload']} at load factor {float(run['load_factor']):g}"


# ---------------------------------------------------------------- campaign-wide parts


def choose_run(runs: pd.DataFrame, run_key: str | None) -> pd.Series | None:
    """The run drawn over time: `run_key`, else the first done run in key order, a pcp20 one if any."""
    done = runs[runs["status"] == "done"]
    if run_key is not None:
        hit = runs[runs["key"].astype(str) == run_key]
        if hit.empty:
            raise CpdispatchError(f"--run {run_key}: no such run in runs.parquet")
        if hit.iloc[0]["status"] != "done":
            raise CpdispatchError(f"--run {run_key}: that run failed, it has no schedule")
        return hit.iloc[0]
    if done.empty:
        return None
    pcp = done[done["dispatcher_name"].astype(str) == "pcp20"]
    return (pcp if len(pcp) else done).iloc[0]


def _timeline(src: Path, runs: pd.DataFrame, run: pd.Series | None, out: Path) -> str:
    """The 2014 paper's Figures 1-6 for one run: utilisation per type, running and waiting jobs."""
    head = f"<h2>{_e(CAMPAIGN_HEADINGS[1])}</h2>\n"
    if run is None:
        return head + _p("no completed run")
    capacity = {c.removeprefix("capacity_"): float(run[c]) for c in runs.columns
                if c.startswith("capacity_") and pd.notna(run[c]) and run[c] > 0}
    path = src / "jobs.parquet"
    names = set(pq.read_schema(path).names)
    cols = [c for c in ["key", "submit", "start", "end", "units", *(f"req_{t}" for t in capacity)] if c in names]
    jobs = pq.read_table(path, columns=cols, filters=[("key", "==", str(run["key"]))]).to_pandas()
    what = (f"Run {run['key']}: {run['dispatcher']}, predictor {run['predictor']}, workload {run['workload']}, "
            f"load factor {float(run['load_factor']):g}, replica {run['replica']} ({len(jobs)} jobs).")
    tl = run_timeline(jobs, capacity)
    if tl.empty:
        return head + _p(what) + _p("no started job in this run")
    fig = _timeline_figure(tl, float(jobs["submit"].min()))
    caption = ("Top: share of each resource type's capacity in use; bottom: running and waiting jobs; "
               "time-weighted means over at most 2,000 bins.")
    avg = [[t, _num(100 * float(run[f"util_{t}"]), 1) if f"util_{t}" in run.index else "-"] for t in capacity]
    return (head + _p(what) + _emit(fig, out, "run-timeline", caption)
            + _p("Time-averaged utilisation of this run (runs.parquet):") + _table(["type", "utilisation [%]"], avg))


def _timeline_figure(tl: pd.DataFrame, t0: float) -> Figure:
    """Two panels over one time axis (hours for short runs), binned so that long traces stay light."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 7), sharex=True)
    times = tl["time"].to_numpy()
    t1 = int(times[-1]) + 1
    unit, scale = ("hours", 3600.0) if t1 - t0 < 3 * DAY else ("days", DAY)
    for col in [c for c in tl.columns if c.startswith("util_")]:
        edges, mean, _ = _bins(times, tl[col].to_numpy(), int(t0), t1)
        top.stairs(100 * mean, (edges - t0) / scale, label=col.removeprefix("util_"), linewidth=0.9)
    for col in ("running", "waiting"):
        edges, mean, _ = _bins(times, tl[col].to_numpy(), int(t0), t1)
        bottom.stairs(mean, (edges - t0) / scale, label=f"{col} jobs", linewidth=0.9)
    top.set_ylabel("in use [% of capacity]")
    top.set_ylim(0, 105)
    bottom.set_ylabel("jobs")
    bottom.set_xlabel(f"time since first submission [{unit}]")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="upper right", fontsize=8)
    return fig


def _comparisons(src: Path) -> str:
    """Instance comparisons (`cpdispatch compare`): their summary text and ratio plots, inlined."""
    head = f"<h2>{_e(CAMPAIGN_HEADINGS[2])}</h2>\n"
    found = sorted(src.rglob("comparison_summary.txt"))
    if not found:
        return head + _p("no instance comparison in this campaign folder")
    parts = [head]
    for path in found:
        where = path.parent.relative_to(src)
        parts.append(f"<h3>{_e(where)}</h3>\n<pre>{_e(path.read_text(errors='replace'))}</pre>\n")
        for name, what in (("variables_ratio.png", "decision variables"), ("time_ratio.png", "dispatching time")):
            png = path.parent / name
            if png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n":
                parts.append(_img(png.read_bytes(), f"{where}/{name}", f"Ratio of {what} per instance ({name})."))
    return "".join(parts)


def _failed(runs: pd.DataFrame) -> str:
    """Failed runs with settings and error, so that missing bars are explained."""
    head = f"<h2>{_e(CAMPAIGN_HEADINGS[3])}</h2>\n"
    bad = runs[runs["status"] != "done"]
    if bad.empty:
        return head + _p("no failed run")
    cols = ["key", "workload", "system", "dispatcher", "predictor", "load_factor", "replica", "status", "error"]
    rows = [[str(v) for v in r] for r in bad[cols].itertuples(index=False)]
    return head + _table(cols, rows, left=len(cols), cls="failed")


def _overview(src: Path, runs: pd.DataFrame) -> str:
    """Title, run counts and in-page links to the sections."""
    done = int((runs["status"] == "done").sum())
    links = "".join(f'<li><a href="#s{int(sec) + 1:02d}">{_e(_section_title(g.iloc[0]))}</a></li>'
                    for sec, g in runs.groupby("section", sort=True))
    return (f"<h1>{_e(CAMPAIGN_HEADINGS[0])}</h1>\n"
            + _p(f"Campaign folder {src}: {len(runs)} runs, {done} done, {len(runs) - done} failed.")
            + (f"<ul>{links}</ul>\n" if links else _p("no run in runs.parquet")))


def _page(body: Sequence[str]) -> str:
    """The whole document: inline CSS, an empty data: icon (no favicon request), no script."""
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<title>{_e(CAMPAIGN_HEADINGS[0])}</title><link rel="icon" href="data:,">'
            f"<style>{CSS}</style></head>\n<body>\n{''.join(body)}</body></html>\n")


def write_report(campaign_dir: str | Path, out_dir: str | Path, run_key: str | None = None) -> Path:
    """Write out_dir/index.html (self-contained) and every figure as PNG and SVG; return the index path.

    `run_key`: the run whose utilisation over time is drawn (default: the first done run in key order,
    a pcp20 one if any)."""
    src, out = Path(campaign_dir), Path(out_dir)
    runs = load_runs(src)
    chosen = choose_run(runs, run_key)  # a wrong key fails before any figure is drawn
    jm = job_metrics(load_jobs(src / "jobs.parquet"), runs)
    out.mkdir(parents=True, exist_ok=True)
    body = [_overview(src, runs)]
    one = runs["section"].nunique() == 1  # then no copy of a table of millions of jobs
    for sec, sruns in runs.groupby("section", sort=True):
        body.append(_section(int(sec), sruns, jm if one else jm[jm["section"] == sec], out))
    body += [_timeline(src, runs, chosen, out), _comparisons(src), _failed(runs)]
    index = out / "index.html"
    with replacing(index) as tmp:
        tmp.write_text(_page(body), encoding="utf-8")
    return index
