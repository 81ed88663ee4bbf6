"""pcp20's second stage (dispatchers/cp/models/pcp20/second_stage.py) and the simulator's room probe: golden cases
checked by hand, and the probe's counts on a generated run."""

from __future__ import annotations

import pytest

import cpdispatch as cpd
from cpdispatch.dispatchers import make_dispatcher
from cpdispatch.dispatchers.cp.models.pcp20 import Pcp20Dispatcher
from cpdispatch.snapshot import RunningJob, Start
from cpdispatch.validate import schedule_errors

from .helpers import job, on, snapshot, system

# node 0: a GPU node (4 cores, 1 GPU); node 1: a CPU node (4 cores)
TWO = system(("gpu", 1, {"core": 4, "gpu": 1}), ("cpu", 1, {"core": 4, "gpu": 0}))


def gpu_case() -> tuple[cpd.Snapshot, Pcp20Dispatcher]:
    """A job R holds node 0's GPU and a core until t=100. A (2 cores, 1,000 s) fits now on either
    node; B (4 cores + 1 GPU) fits on node 0 only once R has ended, and then only if A is not
    there: A on node 0 delays B to t=1,000, A on node 1 lets it start at t=100."""
    running = (RunningJob(job("R", 0, 200, req=(1, 1)), 0, 200, on(0)),)
    a, b = job("A", 50, 1000, req=(2, 0)), job("B", 60, 100, req=(4, 1))
    return snapshot(TWO, [(a, 1000), (b, 100)], running, now=100), Pcp20Dispatcher(allocator="best-fit")


def test_the_second_stage_moves_a_start_that_delays_a_queued_gpu_job() -> None:
    snap, d = gpu_case()
    starts, report = d.refine(snap, d.order(snap), (Start("A", (0,)),))
    assert starts == (Start("A", (1,)),)  # the same job, now on the CPU node
    assert report.status == "moved" and report.gained == 1 and report.room
    assert report.variables is not None and report.ms > 0


def test_the_second_stage_keeps_a_placement_that_delays_no_one() -> None:
    snap, d = gpu_case()
    starts, report = d.refine(snap, d.order(snap), (Start("A", (1,)),))
    assert starts == (Start("A", (1,)),)
    assert report.status == "no-room" and not report.room and report.gained == 0


def test_the_second_stage_never_changes_which_jobs_start() -> None:
    """Through a whole decision, with the best-fit first stage that puts A on the fuller node 0:
    the decision starts A alone, on node 1, and says so."""
    snap, d = gpu_case()
    decision = d.decide(snap)
    assert [s.job_id for s in decision.starts] == ["A"]
    assert decision.starts[0].nodes == (1,)
    assert decision.stage2 is not None and decision.stage2.status == "moved"
    off = Pcp20Dispatcher(allocator="best-fit", stage2=0).decide(snap)
    assert [s.job_id for s in off.starts] == ["A"] and off.stage2 is None


def test_nothing_to_do_and_fluid_cases_exit_without_a_model() -> None:
    snap, d = gpu_case()
    _, report = d.refine(snap, d.order(snap), ())
    assert report.status == "none" and report.variables is None
    cores = system(("n", 3, {"core": 4}))  # one type, units of one core: the cumulative is exact
    snap = snapshot(cores, [(job("a", 0, 10, units=3), 10), (job("b", 0, 10, units=12), 10)], now=5)
    d = Pcp20Dispatcher()
    _, report = d.refine(snap, d.order(snap), (Start("a", (0, 0, 1)),))
    assert report.status == "fluid" and report.variables is None


def test_the_paper_profile_has_no_second_stage() -> None:
    assert make_dispatcher("pcp20", {"profile": "paper"}).stage2 == 0  # type: ignore[attr-defined]


def test_the_room_probe_counts_what_the_second_stage_would_move() -> None:
    """The probe asks pcp20's second stage about any dispatcher's starts: a run with a best-fit
    dispatcher on a GPU-contended mix is valid, asks about its decisions with a queue, and
    reports its counts in the summary; pcp20 answers for itself."""
    eurora = cpd.System.preset("eurora")
    jobs = cpd.generate_eurora(150, seed=2, mix="gpu-contended")
    fifo = cpd.simulate(eurora, jobs, "fifo", "real", load_factor=6.0, room=True)
    room = fifo.summary["room"]
    assert room["source"] == "probe" and room["decisions"] > 0
    assert 0 <= room["with_room"] <= room["decisions"] and room["jobs_gained"] >= room["with_room"]
    assert not schedule_errors(fifo.raw)
    pcp20 = cpd.simulate(eurora, jobs, "pcp20", "real", load_factor=6.0, room=True)
    assert pcp20.summary["room"]["source"] == "stage2"
    stage2 = pcp20.summary["stage2"]
    assert sum(stage2["status"].values()) == sum(1 for d in pcp20.raw.decisions if d.stage2 is not None)
    assert not schedule_errors(pcp20.raw)
    columns = list(pcp20.decisions.columns)
    assert columns[-4:] == ["stage2", "stage2_ms", "stage2_variables", "stage2_gained"]


def test_the_room_probe_is_off_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A diagnostic, not part of any decision: a default run never asks the second stage about a
    baseline's starts, and gives the same schedule."""
    eurora = cpd.System.preset("eurora")
    jobs = cpd.generate_eurora(150, seed=2, mix="gpu-contended")
    asked = cpd.simulate(eurora, jobs, "fifo", "real", load_factor=6.0, room=True)

    def no_probe(*_: object) -> None:
        raise AssertionError("the room probe ran")

    monkeypatch.setattr(Pcp20Dispatcher, "placement_room", no_probe)
    plain = cpd.simulate(eurora, jobs, "fifo", "real", load_factor=6.0)
    assert "room" not in plain.summary and asked.summary["room"]["decisions"] > 0
    assert plain.jobs.equals(asked.jobs)


def test_the_probe_says_fluid_without_ordering_when_every_job_asks_one_unit(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a single-type trace (one core per unit) where a job goes cannot matter whichever queued
    jobs the stage would take: the probe answers "fluid" as the stage does, without sorting the
    queue (which cost most of a FIFO run on KTH); a job with another request still gets the stage."""
    cores = system(("n", 2, {"core": 4}))
    queued = [(job(f"q{i}", i, 100, units=1 + i % 3), 100) for i in range(6)]
    snap = snapshot(cores, queued, (), now=10)
    d = Pcp20Dispatcher()
    starts = (Start("q0", (0,)),)
    assert d._stage2(snap, d.order(snap), starts)[1].status == "fluid"

    def no_sorting(*_: object) -> None:
        raise AssertionError("the queue was ordered")

    monkeypatch.setattr(Pcp20Dispatcher, "order", no_sorting)
    assert d.placement_room(snap, starts).status == "fluid"
    wide = snapshot(cores, [*queued, (job("w", 7, 100, req=(2,)), 100)], (), now=10)
    monkeypatch.undo()
    assert d.placement_room(wide, starts).status == d._stage2(wide, d.order(wide), starts)[1].status


def test_the_probe_knows_once_when_no_queue_of_the_workload_can_leave_room(monkeypatch: pytest.MonkeyPatch) -> None:
    """A workload whose jobs all ask 1 unit of one type: the probe counts each decision asked,
    none with room, without asking the second stage at all."""
    from cpdispatch.simulator.room import RoomProbe

    cores = system(("n", 2, {"core": 4}))
    jobs = [job(f"q{i}", i, 100, units=1 + i % 3) for i in range(6)]
    snap = snapshot(cores, [(j, 100) for j in jobs], (), now=10)

    def no_stage(*_: object) -> None:
        raise AssertionError("the second stage was asked")

    monkeypatch.setattr(Pcp20Dispatcher, "placement_room", no_stage)
    probe = RoomProbe(jobs, Pcp20Dispatcher)
    probe.observe(snap, cpd.Decision(starts=(Start("q0", (0,)),)))
    assert probe.summary()["decisions"] == 1 and probe.summary()["with_room"] == 0


def test_placement_cannot_matter_only_for_one_unit_of_one_type_and_no_spread_job() -> None:
    from cpdispatch.allocators import placement_cannot_matter

    assert placement_cannot_matter([job("a", 0, 1, units=3, req=(1, 0)), job("b", 0, 1, req=(0, 1))])
    assert not placement_cannot_matter([job("a", 0, 1, req=(1, 0)), job("b", 0, 1, req=(2, 0))])
    assert not placement_cannot_matter([job("a", 0, 1, req=(1, 1))])
    assert not placement_cannot_matter([job("a", 0, 1, units=2, req=(1,), one_per_node=True)])
    assert placement_cannot_matter([job("a", 0, 1, units=1, req=(1,), one_per_node=True)])


def test_a_baseline_run_where_placement_cannot_matter_loads_no_cp_solver() -> None:
    """The room probe answers such a workload without pcp20 (CP-SAT and pandas cost half a second
    of start-up, a sixth of a whole FIFO run on KTH-SP2)."""
    import subprocess
    import sys

    code = ("import sys, cpdispatch as cpd\n"
            "from cpdispatch.job import Job\n"
            "jobs = [Job(str(i), i, 30 + 20 * (i % 3), (1,), 50, 40) for i in range(40)]\n"
            "r = cpd.simulate(cpd.System.preset('kth-sp2'), jobs, 'fifo', room=True)\n"
            "assert r.summary['room']['decisions'] > 0, r.summary['room']\n"
            "print(sorted(m for m in sys.modules if m.startswith(('ortools', 'cpdispatch.dispatchers.cp'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
