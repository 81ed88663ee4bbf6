"""The campaign report's numbers, as public pandas functions: means over replicas with 95% intervals,
paired differences against a reference dispatcher, the breakdown per job class, decision times, the
prediction error, and the utilisation and queue of runs over time.

Replicas (seeds, jittered traces) are the independent samples: every interval is a Student-t interval
over the replicas' run-level values (`cpdispatch.stats`), never a spread over jobs. An interval is cut
at the metric's lowest possible value (0 s of wait, a slowdown of 1): the true mean lies above it, so
the cut interval holds it whenever the uncut one does.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..metrics import BOUND_S, MEDIUM_S, SHORT_S
from ..stats import Estimate, mean_ci, paired_difference

MAX_ECDF = 2000  # points per ECDF curve: the shape at any size, a bounded SVG
SERIES = ["dispatcher", "predictor"]
#: The headline metrics: (runs.parquet column, label, lowest possible value).
HEADLINE = [("avg_slowdown", "mean slowdown", 1.0), ("avg_wait", "mean wait [s]", 0.0),
            ("avg_bounded_slowdown", f"mean bounded slowdown ({BOUND_S} s)", 1.0)]
FLOORS = {m: floor for m, _, floor in HEADLINE} | {"wait": 0.0, "bsld": 1.0}
DECISION = [("dispatch_ms_p50", "p50"), ("dispatch_ms_mean", "mean"), ("dispatch_ms_p99", "p99"),
            ("dispatch_ms_max", "max")]
DURATIONS = ["short jobs (< 1 h)", "medium jobs (1–5 h)", "long jobs (> 5 h)"]
WIDTHS = ["narrow jobs (1 unit)", "wide jobs (> 1 unit)"]


def _columns(row: dict[str, object], metric: str, e: Estimate, floor: float | None = None) -> None:
    """An estimate as the columns {metric}_n, _mean, _lo, _hi (and _p for a paired test)."""
    low = e.low if floor is None or not e.low < floor else floor
    row.update({f"{metric}_n": e.n, f"{metric}_mean": e.mean, f"{metric}_lo": low, f"{metric}_hi": e.high})
    if not np.isnan(e.p):
        row[f"{metric}_p"] = e.p


def replica_table(runs: pd.DataFrame, metrics: Sequence[str], by: Sequence[str] = SERIES) -> pd.DataFrame:
    """Per group of `by` (default: dispatcher and predictor, in the campaign's order): runs, and for each
    metric the replicas n, the mean over replicas and its 95% interval (lo, hi; NaN when n < 2)."""
    rows = []
    for keys, g in runs.groupby(list(by), sort=True, observed=True):
        row: dict[str, object] = dict(zip(by, map(_plain, keys)))
        row["runs"] = len(g)
        for m in metrics:
            _columns(row, m, mean_ci(g[m].to_numpy(np.float64)), FLOORS.get(m))
        rows.append(row)
    return pd.DataFrame(rows).set_index(list(by)) if rows else pd.DataFrame()


def paired_table(runs: pd.DataFrame, metrics: Sequence[str], reference: str,
                 pair_on: Sequence[str] = ("predictor", "replica")) -> pd.DataFrame:
    """Per dispatcher and predictor other than the reference: each metric minus the reference's on the
    same replica (and predictor), mean over the pairs, 95% paired t interval and p-value (> 0: higher
    than the reference). The reference itself has no row."""
    on = list(pair_on)
    ref = runs[runs["dispatcher"].astype(str) == reference].set_index(on)
    rows = []
    for keys, g in runs[runs["dispatcher"].astype(str) != reference].groupby(SERIES, sort=True, observed=True):
        g = g.set_index(on)
        common = g.index.intersection(ref.index)
        row: dict[str, object] = dict(zip(SERIES, map(_plain, keys)))
        row["pairs"] = len(common)
        for m in metrics:
            a, b = g.loc[common, m].to_numpy(np.float64), ref.loc[common, m].to_numpy(np.float64)
            _columns(row, m, paired_difference(a, b))
        rows.append(row)
    return pd.DataFrame(rows).set_index(SERIES) if rows else pd.DataFrame()


def workload_table(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The table across workloads: per workload, load factor, predictor and dispatcher, the metric's mean
    over replicas and its interval (tidy; pivot the dispatchers into columns to read it)."""
    done = runs[runs["status"] == "done"]
    return replica_table(done, [metric], ["workload", "load_factor", "predictor", "dispatcher"])


def _plain(x: object) -> object:
    """Group keys as plain Python values (numpy floats print as such in pages)."""
    return x.item() if isinstance(x, np.generic) else x


def job_classes(jm: pd.DataFrame) -> list[tuple[str, pd.Categorical]]:
    """Each job's class in each family: the type it asks (when `kind` is there), short / medium / long
    by run time, narrow / wide by units."""
    run = jm["run"].to_numpy()
    code = (run >= SHORT_S).astype(np.int8) + (run > MEDIUM_S)
    out = [("duration", pd.Categorical.from_codes(code, DURATIONS)),
           ("width", pd.Categorical.from_codes((jm["units"].to_numpy() > 1).astype(np.int8), WIDTHS))]
    if "kind" in jm.columns:
        out.insert(0, ("kind", jm["kind"].array))
    return out


def run_class_means(jm: pd.DataFrame) -> pd.DataFrame:
    """Per run (`run_row`) and job class: the jobs, their mean wait and mean bounded slowdown; `family`
    and `class` ordered as `job_classes` gives them."""
    parts, order = [], []
    for family, cls in job_classes(jm):
        df = pd.DataFrame({"run_row": jm["run_row"].to_numpy(), "class": cls, "wait": jm["wait"].to_numpy(),
                           "bsld": jm["bsld"].to_numpy()}, copy=False)
        g = df.groupby(["run_row", "class"], sort=True, observed=True).agg(
            jobs=("wait", "size"), wait=("wait", "mean"), bsld=("bsld", "mean")).reset_index()
        parts.append(g.assign(family=family, **{"class": g["class"].astype(str)}))
        order += list(cls.categories)
    if not parts:
        return pd.DataFrame()
    out = pd.concat(parts, ignore_index=True)
    out["family"] = pd.Categorical(out["family"], categories=list(dict.fromkeys(out["family"])), ordered=True)
    out["class"] = pd.Categorical(out["class"], categories=order, ordered=True)
    return out


def class_table(jm: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Per dispatcher, predictor and job class (in the order of `job_classes`): jobs per replica, and
    the mean wait and mean bounded slowdown with their intervals over replicas. For medium and long
    jobs the bounded slowdown equals the slowdown (CP'19 Figure 4)."""
    per = run_class_means(jm)
    if per.empty:
        return pd.DataFrame()
    per = per.join(runs[[*SERIES, "replica"]], on="run_row")
    table = replica_table(per, ["jobs", "wait", "bsld"], [*SERIES, "family", "class"]).reset_index()
    table["class"] = pd.Categorical(table["class"], categories=per["class"].cat.categories, ordered=True)
    return table


def decision_table(done: pd.DataFrame) -> pd.DataFrame:
    """PCP'20 Tables 1-2 and the decision times: per dispatcher and predictor, the mean over replicas of
    each run's calls, p50 / mean / p99 / max decision time [ms] and simulation time [s]."""
    cols = ["dispatch_calls", *(c for c, _ in DECISION), "sim_wall_s"]
    g = done.groupby(SERIES, sort=True, observed=True)[cols].mean().reset_index()
    return g.astype({c: str for c in SERIES}).set_index(SERIES)


def prediction_table(jm: pd.DataFrame) -> pd.DataFrame:
    """Per predictor (all runs pooled): jobs with a prediction, mean absolute error [s] and the shares
    predicted below (under-estimation) and above (over-estimation) the real runtime."""
    df = jm.loc[jm["predicted"].notna(), ["predictor", "predicted", "runtime"]]
    err = df["predicted"] - df["runtime"]
    d = pd.DataFrame({"predictor": df["predictor"], "abs": err.abs(), "under": err < 0, "over": err > 0})
    out = d.groupby("predictor", sort=True, observed=True).agg(jobs=("abs", "size"), mae=("abs", "mean"),
                                                               under=("under", "mean"), over=("over", "mean"))
    out = out.reset_index()
    out["predictor"] = out["predictor"].astype(str)
    return out


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


def window_mean(timeline: pd.DataFrame, column: str, t0: float, t1: float) -> float:
    """Time-weighted mean of a step column over [t0, t1] (0 before the first event): utilisation over
    the submit window, where the drain after the last submission does not dilute it."""
    if t1 <= t0 or timeline.empty:
        return float("nan")
    t = timeline["time"].to_numpy(np.float64)
    v = timeline[column].to_numpy(np.float64)
    edges = np.clip(np.append(t, t1), t0, t1)
    return float(np.sum(v * np.diff(edges)) / (t1 - t0))


def ecdf_points(values: np.ndarray, limit: int = MAX_ECDF) -> tuple[np.ndarray, np.ndarray]:
    """Sorted finite values and their cumulative shares, thinned to `limit` evenly spaced ranks (first and
    last kept), so a curve over millions of jobs stays a few thousand points."""
    v = np.sort(values[np.isfinite(values)])
    if v.size == 0:
        return v, v
    idx = np.unique(np.linspace(0, v.size - 1, min(v.size, limit)).round().astype(np.int64))
    return v[idx], (idx + 1) / v.size
