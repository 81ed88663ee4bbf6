"""Results for pandas: `runs.parquet` (a row per run) and `jobs.parquet` (a row per job per run),
rebuilt from the run folders alone, so they can always be recomputed and never disagree with them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .runner import RUNS

SETTINGS = ("key", "workload", "system", "dispatcher", "dispatcher_name", "predictor", "load_factor", "replica")
FIGURES = ("jobs", "completed", "killed", "rejected", "avg_wait", "sd_wait", "p50_wait", "p95_wait", "max_wait",
           "avg_slowdown", "sd_slowdown", "avg_bounded_slowdown", "sd_bounded_slowdown", "makespan",
           "dispatch_calls", "dispatch_ms_mean", "dispatch_ms_p50", "dispatch_ms_p99", "dispatch_ms_max",
           "sim_wall_s", "peak_rss_mb")


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
    for path in sorted((out / RUNS).glob("*/run.json")):
        record = json.loads(path.read_text())
        summary = json.loads((path.parent / "summary.json").read_text())
        row = {**settings_row(record), "status": "done", "error": ""}
        row.update({k: summary.get(k) for k in FIGURES})
        row["run_wall_s"] = record["wall_s"]
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
    tables = []
    for row in rows:
        if row["status"] != "done":
            continue
        jobs = pd.read_parquet(root / RUNS / row["key"] / "schedule.parquet").drop(columns=["nodes"])
        for k in SETTINGS:
            jobs.insert(SETTINGS.index(k), k, row[k])
        tables.append(jobs)
    jobs_all = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(columns=list(SETTINGS))
    paths = root / "runs.parquet", root / "jobs.parquet"
    for path, table in zip(paths, (runs, jobs_all)):
        with replacing(path) as tmp:
            table.to_parquet(tmp, index=False)
    done = int((runs["status"] == "done").sum()) if len(runs) else 0
    return paths[0], paths[1], done, len(runs) - done


def _columns(rows: list[dict[str, Any]]) -> list[str]:
    """Settings, status, figures, then the per-type columns in first-seen order."""
    fixed = [*SETTINGS, "options", "status", "error", *FIGURES, "run_wall_s"]
    extra = [k for r in rows for k in r if k not in fixed]
    return fixed + list(dict.fromkeys(extra))
