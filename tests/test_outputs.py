"""The output files follow the contract: headers, cells, node names, determinism."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from cpdispatch.job import Job
from cpdispatch.metrics import summarize
from cpdispatch.outputs import schedule_columns, write_outputs, write_schedule
from cpdispatch.records import DecisionRecord, JobRecord, SimulationResult
from cpdispatch.snapshot import PlacementReport

from .test_metrics import empty_result, sample_result, two_nodes

SCHEDULE_HEADER = ("job_id,user,submit,start,end,units,req_core,req_mem,walltime,runtime,predicted,"
                   "nodes,status,reason")
DECISIONS_HEADER = ("time,queued,running,started,wall_ms,cpu_ms,status,variables,constraints,objective,"
                    "stage2,stage2_ms,stage2_variables,stage2_gained")


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
                       "objective": "", "stage2": "", "stage2_ms": "", "stage2_variables": "", "stage2_gained": ""}
    last = rows[-1]
    assert (last["wall_ms"], last["variables"], last["constraints"], last["objective"]) == (
        "12.346", "42", "17", "3.5")


def test_decision_rows_with_a_second_stage(tmp_path: Path) -> None:
    result = sample_result()
    result.decisions[-1].stage2 = PlacementReport("moved", 2.34567, 120, 2)
    result.decisions[-2].stage2 = PlacementReport("no-room", 0.5)
    write_outputs(result, tmp_path)
    rows = _rows(tmp_path / "decisions.csv")
    assert [(r["stage2"], r["stage2_ms"], r["stage2_variables"], r["stage2_gained"]) for r in rows[-2:]] == [
        ("no-room", "0.500", "", "0"), ("moved", "2.346", "120", "2")]
    summary = summarize(result)
    assert summary["stage2"]["status"] == {"moved": 1, "no-room": 1} and summary["stage2"]["jobs_gained"] == 2


def test_summary_json(tmp_path: Path) -> None:
    write_outputs(sample_result(), tmp_path)
    text = (tmp_path / "summary.json").read_text()
    data = json.loads(text)
    required = {"jobs", "completed", "killed", "rejected", "avg_wait", "avg_slowdown",
                "avg_bounded_slowdown", "makespan", "utilization", "dispatch_calls", "dispatch_ms_mean",
                "dispatch_ms_p50", "dispatch_ms_p99", "dispatch_ms_max", "sim_wall_s", "peak_rss_mb",
                "options", "dispatcher", "predictor", "system", "notes", "skipped_lines",
                "refused_starts", "decision_status"}
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


def test_two_runs_write_the_same_files(tmp_path: Path, workloads_dir: Path) -> None:
    """Two independent simulations (hcp19 with a solver, last2 learning on-line, a congested
    HPC2N slice) write identical schedules and decisions, timing columns aside."""
    from cpdispatch.cli import run_simulation

    trace = str(workloads_dir / "HPC2N-2002-2.2-cln.swf.gz")
    for run in ("1", "2"):
        run_simulation("hpc2n", trace, "hcp19", "last2", str(tmp_path / run), skip=20_000, limit=400,
                       progress=False, plots=False)
    assert (tmp_path / "1" / "schedule.csv").read_bytes() == (tmp_path / "2" / "schedule.csv").read_bytes()
    first, second = (_rows(tmp_path / run / "decisions.csv") for run in ("1", "2"))
    for row in first + second:
        del row["wall_ms"], row["cpu_ms"]
    assert first == second
    assert any(row["status"] in ("optimal", "feasible") for row in first)  # the solver took decisions
    summaries = [json.loads((tmp_path / run / "summary.json").read_text()) for run in ("1", "2")]
    assert summaries[0]["avg_wait"] == summaries[1]["avg_wait"] > 0


def test_nothing_started(tmp_path: Path) -> None:
    summary = write_outputs(empty_result(), tmp_path)
    assert summary["avg_wait"] is None
    assert (tmp_path / "decisions.csv").read_text() == DECISIONS_HEADER + "\n"
    rows = _rows(tmp_path / "schedule.csv")
    assert len(rows) == 1 and rows[0]["status"] == "rejected" and rows[0]["start"] == ""
    assert json.loads((tmp_path / "summary.json").read_text())["avg_slowdown"] is None


def test_quoting_matches_csv_writer(tmp_path: Path) -> None:
    """The hand-formatted lines are byte-identical to csv.writer's (QUOTE_MINIMAL, \\n endings)."""
    j = Job('x,"1"', 3, 1, (1, 0), None, 4, user="a\nb")
    rec = JobRecord(j, "rejected", reason='no, "never"\r\nfits')
    res = SimulationResult(two_nodes(), "fifo", "real", [rec],
                           [DecisionRecord(3, 1, 0, 0, 0.0004, 1e-9, "odd,status")])
    write_outputs(res, tmp_path)
    ref = tmp_path / "ref.csv"
    with ref.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(schedule_columns(res.system.types))
        w.writerow([j.id, j.user, 3, "", "", 1, 1, 0, "", 4, "", "", "rejected", rec.reason])
    assert (tmp_path / "schedule.csv").read_bytes() == ref.read_bytes()
    rows = _rows(tmp_path / "schedule.csv")
    assert (rows[0]["job_id"], rows[0]["user"], rows[0]["reason"]) == (j.id, j.user, rec.reason)
    d = _rows(tmp_path / "decisions.csv")[0]
    assert (d["wall_ms"], d["cpu_ms"], d["status"]) == ("0.000", "0.000", "odd,status")


def test_schedule_written_in_batches_is_the_same_file(tmp_path: Path) -> None:
    write_schedule(sample_result(), tmp_path / "one.csv")
    write_schedule(sample_result(), tmp_path / "batched.csv", chunk=10)
    assert (tmp_path / "one.csv").read_bytes() == (tmp_path / "batched.csv").read_bytes()
