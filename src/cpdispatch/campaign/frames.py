"""A campaign's results as pandas frames: `runs.parquet` and `jobs.parquet` read back, labelled in the
campaign's order, the reference dispatcher and the run drawn over time.

Job metrics follow `cpdispatch.metrics`: wait = start - submit, run = end - start (the trace runtime
unless the job was killed), slowdown = (wait + run) / run (run 0: max(1, wait)), bounded slowdown =
max(1, (wait + run) / max(run, 10)).
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from ..errors import CpdispatchError
from ..metrics import slowdowns
from . import CAMPAIGN_FILE, RUNS_FILE

SETTINGS = ["key", "workload", "system", "dispatcher", "dispatcher_name", "predictor", "load_factor", "replica"]
RUN_NUMBERS = ["jobs", "completed", "killed", "rejected", "avg_wait", "sd_wait", "p50_wait", "p95_wait", "max_wait",
               "avg_slowdown", "sd_slowdown", "avg_bounded_slowdown", "sd_bounded_slowdown", "makespan",
               "dispatch_calls", "dispatch_ms_mean", "dispatch_ms_p50", "dispatch_ms_p99", "dispatch_ms_max",
               "sim_wall_s", "run_wall_s", "peak_rss_mb"]
JOB_COLUMNS = ["key", "submit", "start", "end", "units", "runtime", "predicted"]
#: Types that every job asks: a job asking any other type (gpu, mic, ...) is counted as such a job.
COMMON_TYPES = ("core", "mem")
#: The columns labelled in the campaign's order (the spec's), not alphabetically.
ORDERED = ("workload", "dispatcher", "predictor")


def load_runs(campaign_dir: str | Path) -> pd.DataFrame:
    """runs.parquet in key order, numbers as floats (a column of JSON nulls arrives as objects), workload,
    dispatcher and predictor as categoricals in the campaign's order, and the number of each run's
    (workload, load factor) section."""
    root = Path(campaign_dir)
    path = root / "runs.parquet"
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
    order = campaign_order(root)
    for c in ORDERED:  # labels the campaign file lacks follow in their order of appearance
        seen = list(dict.fromkeys(runs[c].astype(str)))
        cats = [x for x in order.get(c, []) if x in seen] + [x for x in seen if x not in order.get(c, [])]
        runs[c] = pd.Categorical(runs[c].astype(str), categories=cats, ordered=True)
    runs = runs.sort_values("key", kind="stable").reset_index(drop=True)
    runs["section"] = runs.groupby(["workload", "load_factor"], sort=True, observed=True).ngroup()
    return runs


def campaign_order(root: Path) -> dict[str, list[str]]:
    """The order of workloads, dispatchers and predictors in the campaign file (campaign-runs.json);
    empty for a folder built by other means, whose runs.parquet order then counts."""
    try:
        runs = json.loads((root / RUNS_FILE).read_text())["runs"]
        return {"workload": list(dict.fromkeys(str(r["workload"]["label"]) for r in runs)),
                "dispatcher": list(dict.fromkeys(str(r["dispatcher"]["label"]) for r in runs)),
                "predictor": list(dict.fromkeys(str(r["predictor"]) for r in runs))}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def reference_of(root: Path, runs: pd.DataFrame, reference: str | None = None) -> str | None:
    """The dispatcher the others are compared with: `reference`, else the campaign file's `reference`,
    else the campaign's first dispatcher; None without a done run."""
    labels = list(runs.loc[runs["status"] == "done", "dispatcher"].astype(str).unique())
    if reference is None:
        try:
            reference = tomllib.loads((root / CAMPAIGN_FILE).read_text()).get("reference")
        except (OSError, ValueError):
            reference = None
    if reference is not None:
        if str(reference) not in runs["dispatcher"].cat.categories:
            raise CpdispatchError(f"reference {reference}: no such dispatcher in this campaign "
                                  f"(known: {', '.join(runs['dispatcher'].cat.categories)})")
        return str(reference)
    first = [d for d in runs["dispatcher"].cat.categories if d in labels]
    return first[0] if first else None


def accelerator_types(runs: pd.DataFrame) -> list[str]:
    """The resource types (other than cores and memory) the systems of these runs offer."""
    return [c.removeprefix("capacity_") for c in runs.columns if c.startswith("capacity_")
            and c.removeprefix("capacity_") not in COMMON_TYPES and (runs[c].fillna(0) > 0).any()]


def load_jobs(path: Path, types: list[str] | tuple[str, ...] = ()) -> pd.DataFrame:
    """The job columns the report needs (and the request of each of `types` the file holds), keys
    dictionary-encoded: millions of rows stay small."""
    if not path.is_file():
        raise CpdispatchError(f"{path.parent}: no jobs.parquet (collect the campaign first)")
    names = pq.read_schema(path).names
    missing = [c for c in JOB_COLUMNS if c not in names]
    if missing and pq.ParquetFile(path).metadata.num_rows:
        raise CpdispatchError(f"{path}: missing columns {', '.join(missing)}")
    if missing:  # a campaign without any done run: no job column at all
        return pd.DataFrame({c: pd.Series(dtype=str if c == "key" else float) for c in JOB_COLUMNS})
    cols = JOB_COLUMNS + [f"req_{t}" for t in types if f"req_{t}" in names]
    table = pq.read_table(path, columns=cols, read_dictionary=["key"])
    return table.to_pandas(split_blocks=True, self_destruct=True)  # not two copies at once


def load_jobs_all(path: Path) -> pd.DataFrame:
    """Every column of jobs.parquet (settings included), for analyses beyond the report's."""
    if not path.is_file():
        raise CpdispatchError(f"{path.parent}: no jobs.parquet (collect the campaign first)")
    return pq.read_table(path).to_pandas(self_destruct=True)


def _run_rows(keys: pd.Series, runs: pd.DataFrame) -> np.ndarray:
    """Per job, the row of its run in `runs` (-1: a key runs.parquet lacks), through the key dictionary:
    per-row string work on millions of jobs would dominate the report's time."""
    cat = keys if isinstance(keys.dtype, pd.CategoricalDtype) else keys.astype("category")
    pos = pd.Index(runs["key"].astype(str)).get_indexer(cat.cat.categories.astype(str))
    return np.append(pos, -1)[cat.cat.codes.to_numpy()]  # code -1 (no key) picks the appended -1


def _spread(runs: pd.DataFrame, column: str, rows: np.ndarray) -> pd.Categorical:
    """A categorical run column spread over jobs: one small code per job, the campaign's order kept."""
    return pd.Categorical.from_codes(runs[column].cat.codes.to_numpy()[rows], dtype=runs[column].dtype)


def job_kind(jobs: pd.DataFrame, types: list[str]) -> np.ndarray:
    """Per job, the first of `types` it asks (index into `types`), len(types) for a CPU-only job."""
    kind = np.full(len(jobs), len(types), dtype=np.int8)
    for i, t in reversed(list(enumerate(types))):
        if f"req_{t}" in jobs.columns:
            kind[np.nan_to_num(jobs[f"req_{t}"].to_numpy(np.float64)) > 0] = i
    return kind


def job_metrics(jobs: pd.DataFrame, runs: pd.DataFrame, types: list[str] | None = None) -> pd.DataFrame:
    """Started jobs with wait, run, slowdown and bounded slowdown, labelled from runs.parquet by key: the
    row of their run (`run_row`), section, dispatcher and predictor; `kind` (a type of `types` the job
    asks, or CPU-only) when `types` is given."""
    rows = _run_rows(jobs["key"], runs)
    keep = (rows >= 0) & jobs["start"].notna().to_numpy() & jobs["end"].notna().to_numpy()
    rows = rows[keep]

    def col(name: str) -> np.ndarray:
        return jobs[name].to_numpy(np.float64)[keep]

    wait, run = col("start") - col("submit"), col("end") - col("start")
    sld, bsld = slowdowns(wait, run)
    out = pd.DataFrame({
        "run_row": rows.astype(np.int32), "section": runs["section"].to_numpy()[rows],
        "dispatcher": _spread(runs, "dispatcher", rows), "predictor": _spread(runs, "predictor", rows),
        "units": col("units"), "runtime": col("runtime"), "predicted": col("predicted"), "wait": wait, "run": run,
        "slowdown": sld, "bsld": bsld}, copy=False)
    if types:
        names = [f"{t.upper()} jobs" for t in types] + ["CPU-only jobs"]
        out["kind"] = pd.Categorical.from_codes(job_kind(jobs, types)[keep], names)
    return out


def choose_run(runs: pd.DataFrame, run_key: str | None, reference: str | None = None) -> pd.Series | None:
    """The run whose replica is drawn over time: `run_key`, else the reference dispatcher's (default: the
    first dispatcher's) run of the first section, first predictor and lowest replica with a done run."""
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
    ref = done[done["dispatcher"].astype(str) == reference] if reference is not None else done.iloc[:0]
    pick = (ref if len(ref) else done).sort_values(["section", "predictor", "replica", "dispatcher"], kind="stable")
    return pick.iloc[0]


def replica_runs(runs: pd.DataFrame, chosen: pd.Series) -> pd.DataFrame:
    """The done runs of every dispatcher on the chosen run's replica (same workload, load, predictor)."""
    same = (runs["status"] == "done") & (runs["section"] == chosen["section"])
    same &= (runs["predictor"] == chosen["predictor"]) & (runs["replica"] == chosen["replica"])
    return runs[same].sort_values("dispatcher", kind="stable")


def replica_jobs(path: Path, keys: list[str], capacity: dict[str, float]) -> pd.DataFrame:
    """The jobs of the given runs, with the requests the utilisation needs."""
    names = set(pq.read_schema(path).names)
    cols = [c for c in ["key", "submit", "start", "end", "units", *(f"req_{t}" for t in capacity)] if c in names]
    return pq.read_table(path, columns=cols, filters=[("key", "in", keys)]).to_pandas()
