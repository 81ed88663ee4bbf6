"""Writers for the run output contract: schedule.csv, decisions.csv, summary.json.

CSV lines are formatted directly (with csv-compatible minimal quoting): the HPC2N trace (~200k
jobs, ~400k decisions) must be written in well under two seconds. Output is
byte-identical for identical results (only the measured wall/cpu times vary between runs).
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from .gcpause import no_gc
from .metrics import summarize
from .outputs_safety import replacing
from .records import SimulationResult
from .snapshot import PlacementReport

DECISION_COLUMNS = ("time", "queued", "running", "started", "wall_ms", "cpu_ms", "status",
                    "variables", "constraints", "objective",
                    "stage2", "stage2_ms", "stage2_variables", "stage2_gained")  # pcp20's second stage


def schedule_columns(types: tuple[str, ...]) -> list[str]:
    """The schedule.csv header, in contract order, for a system with resource `types`."""
    return ["job_id", "user", "submit", "start", "end", "units", *(f"req_{t}" for t in types),
            "walltime", "runtime", "predicted", "nodes", "status", "reason"]


def _q(s: str) -> str:
    """Quote a text cell exactly as csv.writer's QUOTE_MINIMAL does (numbers never need it)."""
    if "," in s or '"' in s or "\n" in s or "\r" in s:
        return '"' + s.replace('"', '""') + '"'
    return s


# Lines are %-formatted directly: csv.writer over row lists took ~1 s per file on HPC2N sizes,
# one template per line takes a third of that and gives the same bytes (see tests). They are
# written every `chunk` characters: the `nodes` column has one name per unit (2 GB for whole
# CEA-Curie), and holding even 20,000 of its lines took 400 MB.
def write_schedule(result: SimulationResult, path: Path, chunk: int = 1 << 22) -> None:
    names = result.system.node_names
    n = len(result.system.types)
    fmt = "%s,%s,%s,%s,%s,%s," + ",".join(["%s"] * n) + ",%s,%s,%s,%s,%s,%s\n"
    with replacing(path) as tmp, tmp.open("w", encoding="utf-8", newline="") as f:
        lines = [",".join(schedule_columns(result.system.types)) + "\n"]
        size = 0
        for r in result.records:
            j = r.job
            line = fmt % (  # None is an empty cell (tested inline: a call per cell costs ~10%)
                _q(j.id), _q(j.user), j.submit, "" if r.start is None else r.start,
                "" if r.end is None else r.end, j.units, *j.req, "" if j.walltime is None else j.walltime,
                j.runtime, "" if r.predicted is None else r.predicted,
                _q(";".join([names[k] for k in r.alloc.per_unit()])),
                _q(r.status), _q(r.reason))
            lines.append(line)
            size += len(line)
            if size > chunk:
                f.writelines(lines)
                lines, size = [], 0
        f.writelines(lines)


def _stage2_cells(s: PlacementReport | None) -> str:
    if s is None:
        return ",,,"
    return f"{s.status},{s.ms:.3f},{'' if s.variables is None else s.variables},{s.gained}"


def write_decisions(result: SimulationResult, path: Path) -> None:
    lines = [",".join(DECISION_COLUMNS) + "\n"]
    lines += [
        f"{d.time},{d.queued},{d.running},{d.started},{d.wall_ms:.3f},{d.cpu_ms:.3f},{_q(d.status)},"
        f"{'' if d.variables is None else d.variables},{'' if d.constraints is None else d.constraints},"
        f"{'' if d.objective is None else d.objective},{_stage2_cells(d.stage2)}\n"
        for d in result.decisions
    ]
    with replacing(path) as tmp, tmp.open("w", encoding="utf-8", newline="") as f:
        f.writelines(lines)


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
    with replacing(path) as tmp:
        tmp.write_text(text + "\n", encoding="utf-8")




def write_outputs(result: SimulationResult, out_dir: str | Path, summary: dict[str, Any] | None = None
                  ) -> dict[str, Any]:
    """Write the three contract files into `out_dir` (created if needed); return the summary."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if summary is None:
        summary = summarize(result)
    t0 = time.perf_counter()
    with no_gc():
        write_schedule(result, out / "schedule.csv")
        write_decisions(result, out / "decisions.csv")
    if "timing" in summary:
        summary["timing"]["outputs_s"] = time.perf_counter() - t0
    write_summary(summary, out / "summary.json")
    return summary
