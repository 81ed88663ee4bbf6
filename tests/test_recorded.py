"""The `recorded` baseline: the trace's own schedule, replayed from SWF field 3."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from cpdispatch.cli import main
from cpdispatch.errors import CpdispatchError
from cpdispatch.recorded import replay_recorded
from cpdispatch.system import NodeGroup, System
from cpdispatch.validate import schedule_errors
from cpdispatch.workloads import scale_arrivals
from cpdispatch.workloads.swf import read_swf

# job, submit, wait, run, allocated procs, ..., requested procs, walltime, ... (18 fields)
LINES = [
    "1 0 10 100 2 -1 -1 2 200 -1 1 1 1 1 1 -1 -1 -1",  # starts at 10 on 2 cores
    "2 5 -1 50 1 -1 -1 1 100 -1 1 2 1 1 1 -1 -1 -1",  # no recorded wait: rejected
    "3 6 0 30 2 -1 -1 2 100 -1 1 2 1 1 1 -1 -1 -1",  # starts at 6, ends at 36
    "4 7 3 20 2 -1 -1 2 100 -1 1 2 1 1 1 -1 -1 -1",  # 10..30: with 1 and 3 running, 6 of 4 cores
    "5 8 1.5 20 1 -1 -1 1 100 -1 1 2 1 1 1 -1 -1 -1",  # a wait that is not a whole number: rejected
]


def two_nodes() -> System:
    return System.build("two", [NodeGroup("n", 2, {"core": 2})], swf_processor={"core": 1})


def trace(tmp_path: Path, lines: list[str]) -> str:
    path = tmp_path / "t.swf"
    path.write_text("; a hand-made trace\n" + "\n".join(lines) + "\n")
    return str(path)


def test_jobs_start_at_submit_plus_recorded_wait(tmp_path: Path) -> None:
    result = replay_recorded(two_nodes(), read_swf(trace(tmp_path, LINES[:3]), two_nodes()))
    by_id = {r.job.id: r for r in result.records}
    assert (by_id["1"].start, by_id["1"].end, by_id["3"].start, by_id["3"].end) == (10, 110, 6, 36)
    assert by_id["2"].status == "rejected" and "field 3" in by_id["2"].reason
    assert by_id["1"].alloc.nodes != by_id["3"].alloc.nodes  # both fit: one node each
    assert result.notes["recorded"]["over_capacity_starts"] == 0
    assert schedule_errors(result) == []


def test_a_recorded_schedule_beyond_the_system_is_reported_not_refused(tmp_path: Path) -> None:
    result = replay_recorded(two_nodes(), read_swf(trace(tmp_path, LINES), two_nodes()))
    by_id = {r.job.id: r for r in result.records}
    assert (by_id["4"].start, by_id["4"].status) == (10, "completed")
    assert result.notes["recorded"] | {"meaning": ""} == {
        "over_capacity_starts": 1, "first_over_capacity": ["4"], "meaning": ""}
    assert by_id["5"].status == "rejected"
    assert any("core" in e for e in schedule_errors(result))  # the validator sees the excess


def test_rescaled_arrivals_have_no_recorded_schedule(tmp_path: Path) -> None:
    workload = scale_arrivals(read_swf(trace(tmp_path, LINES[:3]), two_nodes()), 2.0)
    assert all(j.recorded_wait is None for j in workload.jobs)
    with pytest.raises(CpdispatchError, match="load-factor"):
        replay_recorded(two_nodes(), workload)


def test_real_trace_waits_are_the_traces_own(workloads_dir: Path, tmp_path: Path) -> None:
    """HPC2N, first 3,000 jobs, through the command line: the average wait is the mean of field 3
    over the simulated jobs, read independently here."""
    path = workloads_dir / "HPC2N-2002-2.2-cln.swf.gz"
    out = tmp_path / "out"
    assert main(["simulate", "--system", "hpc2n", "--workload", str(path), "--dispatcher", "recorded",
                 "--limit-jobs", "3000", "--out", str(out), "--no-plots", "--no-progress"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    waits = []
    with gzip.open(path, "rt") as f:
        for line in f:
            if line.startswith(";") or not line.strip():
                continue
            fields = line.split()
            if len(waits) == 3000:
                break
            waits.append(int(fields[2]))
    started = [w for w in waits if w >= 0]
    assert summary["started"] == len(started) == summary["jobs"] - summary["rejected"]
    assert summary["avg_wait"] == pytest.approx(np.mean(started))
    assert summary["notes"]["recorded"]["over_capacity_starts"] == 0
