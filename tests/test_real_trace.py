"""Real traces end to end: the whole KTH-SP2 trace under EASY with last-two predictions."""

from __future__ import annotations

from pathlib import Path

from cpdispatch.cli import run_simulation
from cpdispatch.validate import schedule_errors


def test_kth_sp2_whole_trace_easy_last2(workloads_dir: Path, tmp_path: Path) -> None:
    run = run_simulation("kth-sp2", str(workloads_dir / "KTH-SP2-1996-2.1-cln.swf.gz"), "easy", "last2",
                         str(tmp_path), progress=False, plots=False)
    result, summary = run["result"], run["summary"]
    assert schedule_errors(result) == []
    assert not result.refused
    assert summary["jobs"] == 28_476
    assert summary["completed"] + summary["killed"] + summary["rejected"] == 28_476
    # the one line without a processor count is rejected with its reason, not dropped
    assert summary["rejected"] == sum(1 for r in result.records if r.status == "rejected") >= 1
    assert all(r.reason for r in result.records if r.status == "rejected")
    assert summary["avg_wait"] > 0
    lines = (tmp_path / "schedule.csv").read_text().splitlines()
    assert len(lines) == 28_476 + 1
