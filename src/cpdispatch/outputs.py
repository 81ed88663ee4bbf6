"""Writers for the run output contract: schedule.csv, decisions.csv, summary.json.

Rows are built as plain string lists and handed to one `csv.writer.writerows` call: the HPC2N
trace (~200k jobs, ~400k decisions) must be written in well under two seconds. Output is
byte-identical for identical results (only the measured wall/cpu times vary between runs).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from .metrics import summarize
from .records import DecisionRecord, JobRecord, SimulationResult

DECISION_COLUMNS = ("time", "queued", "running", "started", "wall_ms", "cpu_ms", "status",
                    "variables", "constraints", "objective")


def schedule_columns(types: tuple[str, ...]) -> list[str]:
    """The schedule.csv header, in contract order, for a system with resource `types`."""
    return ["job_id", "user", "submit", "start", "end", "units", *(f"req_{t}" for t in types),
            "walltime", "runtime", "predicted", "nodes", "status", "reason"]


def _cell(v: object) -> object:
    return "" if v is None else v


def _schedule_row(r: JobRecord, names: tuple[str, ...]) -> list[object]:
    j = r.job
    return [j.id, j.user, j.submit, _cell(r.start), _cell(r.end), j.units, *j.req, _cell(j.walltime),
            j.runtime, _cell(r.predicted), ";".join([names[i] for i in r.nodes]), r.status, r.reason]


def _decision_row(d: DecisionRecord) -> list[object]:
    return [d.time, d.queued, d.running, d.started, f"{d.wall_ms:.3f}", f"{d.cpu_ms:.3f}", d.status,
            _cell(d.variables), _cell(d.constraints), _cell(d.objective)]


def write_schedule(result: SimulationResult, path: Path) -> None:
    names = result.system.node_names
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(schedule_columns(result.system.types))
        w.writerows([_schedule_row(r, names) for r in result.records])


def write_decisions(result: SimulationResult, path: Path) -> None:
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(DECISION_COLUMNS)
        w.writerows([_decision_row(d) for d in result.decisions])


def _json_safe(v: Any) -> Any:
    """NaN/inf become null (strict JSON), NumPy scalars plain numbers; containers are walked."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {str(k): _json_safe(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_json_safe(x) for x in v]
    return v


def write_summary(summary: dict[str, Any], path: Path) -> None:
    """Indent 2, sorted keys, strict JSON; values JSON cannot hold (paths, enums) become strings."""
    text = json.dumps(_json_safe(summary), indent=2, sort_keys=True, default=str, allow_nan=False)
    path.write_text(text + "\n", encoding="utf-8")


def write_outputs(result: SimulationResult, out_dir: str | Path, summary: dict[str, Any] | None = None
                  ) -> dict[str, Any]:
    """Write the three contract files into `out_dir` (created if needed); return the summary."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if summary is None:
        summary = summarize(result)
    write_schedule(result, out / "schedule.csv")
    write_decisions(result, out / "decisions.csv")
    write_summary(summary, out / "summary.json")
    return summary
