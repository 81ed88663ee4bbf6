"""The output files follow the contract: headers, cells, node names, determinism."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from cpdispatch.metrics import summarize
from cpdispatch.outputs import write_outputs
from test_metrics import empty_result, sample_result

SCHEDULE_HEADER = ("job_id,user,submit,start,end,units,req_core,req_mem,walltime,runtime,predicted,"
                   "nodes,status,reason")
DECISIONS_HEADER = "time,queued,running,started,wall_ms,cpu_ms,status,variables,constraints,objective"


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_files_and_headers(tmp_path: Path) -> None:
    summary = write_outputs(sample_result(), tmp_path / "run")
    out = tmp_path / "run"
    assert sorted(p.name for p in out.iterdir()) == ["decisions.csv", "schedule.csv", "summary.json"]
    assert (out / "schedule.csv").read_text().splitlines()[0] == SCHEDULE_HEADER
    assert (out / "decisions.csv").read_text().splitlines()[0] == DECISIONS_HEADER
    assert json.loads((out / "summary.json").read_text()) == summary


def test_schedule_rows(tmp_path: Path) -> None:
    write_outputs(sample_result(), tmp_path)
    rows = _rows(tmp_path / "schedule.csv")
    assert [r["job_id"] for r in rows] == ["a", "b", "c", "d", "e"]  # records order
    a, d, e = rows[0], rows[3], rows[4]
    assert a == {"job_id": "a", "user": "u1", "submit": "0", "start": "0", "end": "100", "units": "2",
                 "req_core": "2", "req_mem": "10", "walltime": "200", "runtime": "100",
                 "predicted": "200", "nodes": "n-1;n-1", "status": "completed", "reason": ""}
    # rejected: empty start/end/predicted/nodes; unknown walltime is empty too
    assert (d["start"], d["end"], d["predicted"], d["nodes"], d["walltime"]) == ("", "", "", "", "")
    assert (d["status"], d["reason"]) == ("rejected", "does not fit on the empty system")
    assert (e["nodes"], e["status"], e["reason"]) == ("n-2", "killed", "walltime reached")
    assert rows[2]["user"] == ""


def test_decision_rows(tmp_path: Path) -> None:
    write_outputs(sample_result(), tmp_path)
    rows = _rows(tmp_path / "decisions.csv")
    assert len(rows) == 6
    assert rows[0] == {"time": "0", "queued": "1", "running": "0", "started": "1", "wall_ms": "1.000",
                       "cpu_ms": "0.500", "status": "heuristic", "variables": "", "constraints": "",
                       "objective": ""}
    last = rows[-1]
    assert (last["wall_ms"], last["variables"], last["constraints"], last["objective"]) == (
        "12.346", "42", "17", "3.5")


def test_summary_json(tmp_path: Path) -> None:
    write_outputs(sample_result(), tmp_path)
    text = (tmp_path / "summary.json").read_text()
    data = json.loads(text)
    required = {"jobs", "completed", "killed", "rejected", "avg_wait", "avg_slowdown",
                "avg_bounded_slowdown", "makespan", "utilization", "dispatch_calls", "dispatch_ms_mean",
                "dispatch_ms_p50", "dispatch_ms_p99", "dispatch_ms_max", "sim_wall_s", "peak_rss_mb",
                "options", "dispatcher", "predictor", "system", "notes", "skipped_lines",
                "refused_decisions", "decision_status"}
    assert required <= data.keys()
    assert list(data) == sorted(data)  # sorted keys
    assert text.startswith('{\n  "')  # indent 2


def test_given_summary_is_written_and_made_strict(tmp_path: Path) -> None:
    summary = summarize(sample_result())
    summary["notes"] = {"nan": math.nan, "path": tmp_path}
    back = write_outputs(sample_result(), tmp_path, summary)
    assert back is summary
    data = json.loads((tmp_path / "summary.json").read_text())
    assert data["notes"] == {"nan": None, "path": str(tmp_path)}


def test_deterministic(tmp_path: Path) -> None:
    write_outputs(sample_result(), tmp_path / "1")
    write_outputs(sample_result(), tmp_path / "2")
    for name in ("schedule.csv", "decisions.csv", "summary.json"):
        assert (tmp_path / "1" / name).read_bytes() == (tmp_path / "2" / name).read_bytes()


def test_nothing_started(tmp_path: Path) -> None:
    summary = write_outputs(empty_result(), tmp_path)
    assert summary["avg_wait"] is None
    assert (tmp_path / "decisions.csv").read_text() == DECISIONS_HEADER + "\n"
    rows = _rows(tmp_path / "schedule.csv")
    assert len(rows) == 1 and rows[0]["status"] == "rejected" and rows[0]["start"] == ""
    assert json.loads((tmp_path / "summary.json").read_text())["avg_slowdown"] is None
