"""Results for pandas: `runs.parquet` (a row per run) and `jobs.parquet` (a row per job per run),
rebuilt from the run folders alone, so they can always be recomputed and never disagree with them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .runner import RUNS, complete_runs

SETTINGS = ("key", "workload", "system", "dispatcher", "dispatcher_name", "predictor", "load_factor", "replica")
FIGURES = ("jobs", "completed", "killed", "rejected", "avg_wait", "sd_wait", "p50_wait", "p95_wait", "max_wait",
           "avg_slowdown", "sd_slowdown", "avg_bounded_slowdown", "sd_bounded_slowdown", "makespan",
           "dispatch_calls", "dispatch_ms_mean", "dispatch_ms_p50", "dispatch_ms_p99", "dispatch_ms_max",
           "dispatch_cpu_ms_mean", "dispatch_cpu_ms_p99", "dispatch_cpu_ms_max", "sim_wall_s", "peak_rss_mb")

PREDICTION = ("mae_s", "mean_accuracy", "under_rate")  # summary.json's prediction figures kept per run


def settings_row(record: dict[str, Any]) -> dict[str, Any]:
    """A run's settings as flat columns (the campaign's axes)."""
    s = record["settings"]
    w, d = s["workload"], s["dispatcher"]
    return {"key": record["key"], "workload": w["label"], "system": Path(w["system"]).stem if "/" in w["system"]
            else w["system"], "dispatcher": d["label"], "dispatcher_name": d["name"], "predictor": s["predictor"],
            "load_factor": float(s["load_factor"]), "replica": int(s["replica"]),
            "options": json.dumps(d["options"], sort_keys=True)}


def run_rows(out: Path) -> list[dict[str, Any]]:
    """One row per run folder (done) and per failure file (failed, unless a later try succeeded)."""
    rows = []
    for path in complete_runs(out):
        record = json.loads(path.read_text())
        summary = json.loads((path.parent / "summary.json").read_text())
        row = {**settings_row(record), "status": "done", "error": ""}
        row.update({k: summary.get(k) for k in FIGURES})
        prediction = summary.get("prediction") or {}
        row.update({f"prediction_{k}": prediction.get(k) for k in PREDICTION})
        row["run_wall_s"] = record["wall_s"]
        # how the decisions were taken (optimal, feasible, fastpath, unsolved, ...), as JSON
        row["decision_status"] = json.dumps(summary.get("decision_status", {}), sort_keys=True)
        for t, u in summary.get("utilization", {}).items():
            row[f"util_{t}"] = u
        for t, c in summary.get("capacity", {}).items():
            row[f"capacity_{t}"] = c
        rows.append(row)
    done = {r["key"] for r in rows}
    for path in sorted((out / RUNS).glob("*.failed.json")):
        record = json.loads(path.read_text())
        if record["key"] not in done:
            rows.append({**settings_row(record), "status": "failed", "error": record["error"]})
    return rows


def collect(out: str | Path) -> tuple[Path, Path, int, int]:
    """Write DIR/runs.parquet and DIR/jobs.parquet; returns their paths, runs done and failed."""
    import pandas as pd

    from ..outputs_safety import replacing

    root = Path(out)
    rows = run_rows(root)
    runs = pd.DataFrame(rows, columns=_columns(rows))
    paths = root / "runs.parquet", root / "jobs.parquet"
    with replacing(paths[0]) as tmp:
        runs.to_parquet(tmp, index=False)
    with replacing(paths[1]) as tmp:
        _write_jobs(root, [r for r in rows if r["status"] == "done"], tmp)
    done = int((runs["status"] == "done").sum()) if len(runs) else 0
    return paths[0], paths[1], done, len(runs) - done


def _write_jobs(root: Path, done: list[dict[str, Any]], path: Path) -> None:
    """Every job of every run, one row group per run (streamed: a full campaign holds hundreds
    of millions of job rows). One schema for all: times that may be empty and per-type amounts
    (absent on systems without the type) are floats with nulls."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    types = list(dict.fromkeys(k[len("capacity_"):] for r in done for k in r if k.startswith("capacity_")))
    text, exact, maybe = pa.string(), pa.int64(), pa.float64()
    fields = [("key", text), ("workload", text), ("system", text), ("dispatcher", text), ("dispatcher_name", text),
              ("predictor", text), ("load_factor", maybe), ("replica", exact), ("job_id", text), ("user", text),
              ("submit", exact), ("start", maybe), ("end", maybe), ("units", exact),
              *((f"req_{t}", maybe) for t in types), ("walltime", maybe), ("runtime", exact),
              ("predicted", maybe), ("status", text), ("reason", text)]
    schema = pa.schema(fields)
    with pq.ParquetWriter(path, schema) as writer:
        for row in done:
            table = pq.read_table(root / RUNS / row["key"] / "schedule.parquet")
            n = table.num_rows
            columns = [pa.array([row[name]] * n, kind) if name in SETTINGS
                       else table.column(name).cast(kind) if name in table.column_names
                       else pa.nulls(n, kind) for name, kind in fields]
            writer.write_table(pa.Table.from_arrays(columns, schema=schema))


def _columns(rows: list[dict[str, Any]]) -> list[str]:
    """Settings, status, figures, then the per-type columns in first-seen order."""
    fixed = [*SETTINGS, "options", "status", "error", *FIGURES, "run_wall_s", "decision_status"]
    extra = [k for r in rows for k in r if k not in fixed]
    return fixed + list(dict.fromkeys(extra))
