"""Metrics checked against values computed by hand on a tiny 2-node run."""

from __future__ import annotations

import numpy as np
import pytest

from cpdispatch.job import Job
from cpdispatch.metrics import job_arrays, queue_timeline, summarize, utilization_timeline
from cpdispatch.records import DecisionRecord, JobRecord, SimulationResult
from cpdispatch.system import NodeGroup, System

from .helpers import on


def two_nodes() -> System:
    return System.build("tiny", [NodeGroup("n", 2, {"core": 4, "mem": 100})])


def sample_result() -> SimulationResult:
    """Two nodes of {4 cores, 100 mem}. Started jobs (wait, run):
    a (0, 100), b (20, 0: runtime-0 rule), c (80, 5), e (50, 100: killed at walltime);
    d is rejected (8 cores per unit)."""
    a = Job("a", 0, 2, (2, 10), 200, 100, user="u1")
    b = Job("b", 10, 1, (4, 50), 60, 0, user="u2")
    c = Job("c", 20, 1, (4, 0), 10, 5)
    d = Job("d", 40, 3, (8, 0), None, 7, user="u1")
    e = Job("e", 50, 1, (1, 20), 100, 500, user="u3")
    records = [
        JobRecord(a, "completed", 0, 100, 200, on(0, 0)),
        JobRecord(b, "completed", 30, 30, 60, on(1)),
        JobRecord(c, "completed", 100, 105, 10, on(0)),
        JobRecord(d, "rejected", reason="does not fit on the empty system"),
        JobRecord(e, "killed", 100, 200, 100, on(1), reason="walltime reached"),
    ]
    decisions = [
        DecisionRecord(0, 1, 0, 1, 1.0, 0.5, "heuristic"),
        DecisionRecord(10, 1, 1, 0, 2.0, 1.0, "heuristic"),
        DecisionRecord(20, 2, 1, 0, 3.0, 1.5, "heuristic"),
        DecisionRecord(30, 2, 1, 1, 4.0, 2.0, "heuristic"),
        DecisionRecord(50, 2, 1, 0, 5.0, 2.5, "feasible", 10, 20, 7.0),
        DecisionRecord(100, 2, 0, 2, 12.3456, 10.0, "optimal", 42, 17, 3.5),
    ]
    return SimulationResult(two_nodes(), "fifo", "walltime", records, decisions,
                            options={"seed": 0, "kill_at_walltime": True}, notes={"note": "hand-made"},
                            sim_wall_s=0.25, peak_rss_mb=100.0)


def empty_result() -> SimulationResult:
    """Nothing ever started: one rejected job, no dispatcher call."""
    d = Job("d", 5, 3, (8, 0), None, 7)
    return SimulationResult(two_nodes(), "pcp", "last2", [JobRecord(d, "rejected", reason="too big")], [])


def test_counts_and_waits() -> None:
    s = summarize(sample_result())
    assert (s["jobs"], s["completed"], s["killed"], s["rejected"], s["started"]) == (5, 3, 1, 1, 4)
    assert s["avg_wait"] == pytest.approx((0 + 20 + 80 + 50) / 4)
    assert s["max_wait"] == 80
    assert s["p50_wait"] == pytest.approx(35.0)
    assert s["skipped_lines"] == 0 and s["refused_starts"] == 0


def test_slowdowns() -> None:
    a = job_arrays(sample_result())
    # a: 100/100; b: run 0 -> max(1, wait=20); c: 85/5; e: killed, actual run 100 -> 150/100
    assert a["slowdown"].tolist() == pytest.approx([1.0, 20.0, 17.0, 1.5])
    # bounded: max(1, (w + r) / max(r, 10))
    assert a["bounded_slowdown"].tolist() == pytest.approx([1.0, 2.0, 8.5, 1.5])
    s = summarize(sample_result())
    assert s["avg_slowdown"] == pytest.approx(39.5 / 4)
    assert s["avg_bounded_slowdown"] == pytest.approx(13.0 / 4)


def test_runtime_zero_without_wait_has_slowdown_one() -> None:
    j = Job("z", 7, 1, (1, 1), 10, 0)
    res = SimulationResult(two_nodes(), "fifo", "real", [JobRecord(j, "completed", 7, 7, 0, on(0))], [])
    s = summarize(res)
    assert s["avg_slowdown"] == 1.0 and s["avg_bounded_slowdown"] == 1.0


def test_makespan_and_utilization() -> None:
    s = summarize(sample_result())
    assert s["makespan"] == 200  # last end 200 - first start 0
    assert s["utilization_span"] == 200  # last end 200 - first submit 0
    # core: a 2*2*100 + c 4*5 + e 1*100 = 520 over 8 cores * 200 s
    assert s["utilization"]["core"] == pytest.approx(520 / 1600)
    # mem: a 2*10*100 + e 20*100 = 4000 over 200 * 200
    assert s["utilization"]["mem"] == pytest.approx(0.1)
    assert s["capacity"] == {"core": 8, "mem": 200}


def test_utilization_over_the_submit_window() -> None:
    """Only the part of each run between the first and the last submission counts (0-50 s): a's
    2 units of 2 cores and 10 mem; b ran 0 s, c and e start after 50."""
    s = summarize(sample_result())
    assert s["submit_window"] == 50
    assert s["utilization_submit"] == pytest.approx({"core": 2 * 2 * 50 / (8 * 50), "mem": 2 * 10 * 50 / (200 * 50)})
    empty = summarize(empty_result())  # one submission: no window to average over
    assert (empty["submit_window"], empty["utilization_submit"]) == (0, {"core": None, "mem": None})


def test_dispatch_stats() -> None:
    s = summarize(sample_result())
    wall = [1.0, 2.0, 3.0, 4.0, 5.0, 12.3456]
    assert s["dispatch_calls"] == 6
    assert s["dispatch_ms_mean"] == pytest.approx(np.mean(wall))
    assert s["dispatch_ms_p50"] == pytest.approx(3.5)
    assert s["dispatch_ms_p99"] == pytest.approx(np.percentile(wall, 99))
    assert s["dispatch_ms_max"] == pytest.approx(12.3456)
    assert s["dispatch_cpu_ms_mean"] == pytest.approx(17.5 / 6)
    assert s["dispatch_cpu_ms_p99"] == pytest.approx(np.percentile([0.5, 1.0, 1.5, 2.0, 2.5, 10.0], 99))
    assert s["dispatch_cpu_ms_max"] == pytest.approx(10.0)
    assert s["decision_status"] == {"feasible": 1, "heuristic": 4, "optimal": 1}


def test_identity_fields() -> None:
    s = summarize(sample_result())
    assert (s["system"], s["dispatcher"], s["predictor"]) == ("tiny", "fifo", "walltime")
    assert s["options"] == {"seed": 0, "kill_at_walltime": True}
    assert s["notes"] == {"note": "hand-made"}
    assert (s["sim_wall_s"], s["peak_rss_mb"]) == (0.25, 100.0)


def test_nothing_started() -> None:
    s = summarize(empty_result())
    assert (s["jobs"], s["completed"], s["rejected"], s["started"]) == (1, 0, 1, 0)
    for key in ("avg_wait", "avg_slowdown", "avg_bounded_slowdown", "p95_wait", "dispatch_ms_mean"):
        assert s[key] is None
    assert s["makespan"] == 0
    assert s["utilization"] == {"core": 0.0, "mem": 0.0}


def test_utilization_timeline() -> None:
    times, used = utilization_timeline(sample_result(), "core")
    # t=0: a +4; b has run 0 (no step); t=100: a -4, c +4, e +1; t=105: c -4; t=200: e -1
    assert times.tolist() == [0, 100, 105, 200]
    assert used.tolist() == [4, 5, 1, 0]
    t, u = utilization_timeline(empty_result(), "mem")
    assert t.size == 0 and u.size == 0


def test_queue_timeline() -> None:
    times, queued = queue_timeline(sample_result())
    assert times.tolist() == [0, 10, 20, 30, 50, 100]
    assert queued.tolist() == [0, 1, 2, 1, 2, 0]


def classes_result() -> SimulationResult:
    """(submit, start, run, prediction, queue): short s1 (0, 0, 100, 200, q1), s2 (0, 100, 3599,
    3599, q1); medium m1 (0, 50, 3600, 1800, none), m2 (0, 0, 18000, none, none); long
    l1 (0, 1000, 18001, 18001, q2)."""
    rows = [("s1", 0, 100, 200, "q1"), ("s2", 100, 3599, 3599, "q1"), ("m1", 50, 3600, 1800, ""),
            ("m2", 0, 18000, None, ""), ("l1", 1000, 18001, 18001, "q2")]
    records = [JobRecord(Job(i, 0, 1, (1, 0), None, run, queue=q), "completed", start, start + run, pred, on(0))
               for i, start, run, pred, q in rows]
    return SimulationResult(two_nodes(), "fifo", "real", records, [])


def test_standard_deviations_duration_classes_and_queues() -> None:
    s = summarize(classes_result())
    assert s["sd_wait"] == pytest.approx(np.std([0, 100, 50, 0, 1000], ddof=1))
    assert s["sd_bounded_slowdown"] == pytest.approx(np.std([1, 1 + 100 / 3599, 1 + 50 / 3600, 1, 1 + 1000 / 18001],
                                                            ddof=1))
    short, medium, long = (s["by_duration"][c] for c in ("short", "medium", "long"))
    assert (short["jobs"], short["avg_wait"], short["sd_wait"]) == (2, 50, pytest.approx(np.sqrt(5000)))
    assert (medium["jobs"], medium["avg_wait"]) == (2, 25)  # 1 h and 5 h are both medium
    assert (long["jobs"], long["avg_wait"], long["sd_wait"]) == (1, 1000, None)
    assert {q: v["jobs"] for q, v in s["by_queue"].items()} == {"-": 2, "q1": 2, "q2": 1}
    assert s["by_queue"]["q2"]["avg_slowdown"] == pytest.approx(1 + 1000 / 18001)
