"""The simulator's own guarantees: invalid decisions refused, nothing lost, options honoured."""

from __future__ import annotations

import pytest

from cpdispatch.dispatchers.base import Dispatcher
from cpdispatch.job import Job
from cpdispatch.predictors import RealPredictor, make_predictor
from cpdispatch.simulator import SimOptions, simulate
from cpdispatch.simulator import core as sim_module
from cpdispatch.snapshot import Decision, Snapshot, Start
from cpdispatch.validate import schedule_errors

from .helpers import job, system, workload


class Scripted(Dispatcher):
    """Starts exactly what a script says at given times (to test the driver, not a policy)."""

    name = "scripted"

    def __init__(self, script: dict[int, list[Start]]) -> None:
        super().__init__()
        self.script = script
        self.calls: list[Snapshot] = []

    def decide(self, snapshot: Snapshot) -> Decision:
        self.calls.append(snapshot)
        return Decision(tuple(self.script.get(snapshot.time, [])))


class FirstNode(Dispatcher):
    """Start every queued job whose units all fit on node 0."""

    name = "firstnode"

    def decide(self, snapshot: Snapshot) -> Decision:
        free = snapshot.free[0].copy()
        starts = []
        for q in snapshot.queued:
            need = [q.job.units * a for a in q.job.req]
            if all(f >= n for f, n in zip(free, need)):
                free -= need
                starts.append(Start(q.job.id, (0,) * q.job.units))
        return Decision(tuple(starts))


def run(sys_, wl, disp, **opts):  # type: ignore[no-untyped-def]
    predictor = make_predictor(opts.pop("predictor", "walltime"))
    return simulate(sys_, wl, disp, predictor, SimOptions(progress=False, **opts))


def test_invalid_starts_are_refused_and_recorded() -> None:
    s = system(("n", 2, {"core": 2}))
    wl = workload(job("a", 0, 10, units=2), job("b", 0, 10))
    disp = Scripted({0: [Start("a", (0, 0)), Start("b", (0,)), Start("zz", (1,)), Start("a", (1, 1))],
                     10: [Start("b", (5,))], 11: []})
    result = run(s, wl, disp)
    refused = "\n".join(result.refused)
    assert "job b refused: node n-1 has 0 core free" in refused  # over capacity
    assert "job zz refused: job is not queued" in refused
    assert "job a refused: job is not queued (or started twice)" in refused
    assert "no node with index 5 (node indices are 0..1)" in refused
    # b never started: with nothing running and no event to come, the stall guard rejects it
    b = next(r for r in result.records if r.job.id == "b")
    assert b.status == "rejected" and "started nothing on an idle system" in b.reason
    assert schedule_errors(result) == []


def test_wrong_unit_count_refused() -> None:
    s = system(("n", 2, {"core": 2}))
    disp = Scripted({0: [Start("a", (0,))], 1: [Start("a", (0, 1))]})
    result = run(s, workload(job("a", 0, 5, units=2)), disp)
    assert "1 nodes given for 2 units" in result.refused[0]
    a = result.records[0]
    assert (a.start, a.end, a.alloc.per_unit()) == (1, 6, (0, 1))


def test_job_larger_than_system_rejected_at_submission() -> None:
    s = system(("n", 2, {"core": 4, "gpu": 1}))
    wl = workload(job("big", 0, 5, units=3, req=(1, 1)), job("ok", 1, 5, units=2, req=(4, 0)))
    result = run(s, wl, FirstNode())
    big, ok = result.records
    assert big.status == "rejected" and "needs 3 units of {core 1, gpu 1} but at most 2 fit" in big.reason
    assert ok.status == "rejected" or ok.status == "completed"
    assert schedule_errors(result) == []


def test_zero_runtime_jobs_start_and_end_at_once_and_free_nothing() -> None:
    s = system(("n", 1, {"core": 1}))
    wl = workload(job("z", 0, 0), job("a", 0, 3), job("b", 0, 2))
    result = run(s, wl, FirstNode())
    times = {r.job.id: (r.start, r.end) for r in result.records}
    assert times == {"z": (0, 0), "a": (0, 3), "b": (3, 5)}
    assert schedule_errors(result) == []


def test_kill_at_walltime() -> None:
    s = system(("n", 1, {"core": 1}))
    wl = workload(job("long", 0, 100, walltime=10), job("next", 0, 5))
    killed = run(s, wl, FirstNode(), kill_at_walltime=True)
    assert [(r.status, r.start, r.end) for r in killed.records] == [("killed", 0, 10), ("completed", 10, 15)]
    assert "walltime of 10 s" in killed.records[0].reason
    kept = run(s, wl, FirstNode())
    assert [(r.status, r.end) for r in kept.records] == [("completed", 100), ("completed", 105)]
    assert schedule_errors(killed) == [] and schedule_errors(kept) == []


def test_charge_dispatch_time_delays_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    ticks = iter(range(0, 10_000, 3))  # each perf_counter call advances 3 s: every decision takes 3 s
    monkeypatch.setattr(sim_module.time, "perf_counter", lambda: float(next(ticks)))
    s = system(("n", 1, {"core": 1}))
    result = run(s, workload(job("a", 0, 5), job("b", 1, 5)), FirstNode(), charge_dispatch_time=True)
    a, b = result.records
    assert (a.start, a.end) == (3, 8)  # decided at 0, took 3 s
    assert b.start == 11  # next event (a's end at 8) processed at 8, decision charged 3 s
    assert schedule_errors(result) == []


def test_dispatcher_exception_propagates_with_time_and_queue() -> None:
    class Broken(Dispatcher):
        name = "broken"

        def decide(self, snapshot: Snapshot) -> Decision:
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom") as info:
        run(system(("n", 1, {"core": 1})), workload(job("a", 7, 1)), Broken())
    assert info.value.__notes__ == ["in dispatcher broken at simulated time 7, deciding on 1 queued jobs (a)"]


def test_predictor_exception_propagates_with_time_and_job() -> None:
    class Broken(RealPredictor):
        name = "broken"

        def observe(self, job: Job, runtime: int, now: int) -> None:
            raise ValueError("bad")

    s = system(("n", 1, {"core": 1}))
    with pytest.raises(ValueError, match="bad") as info:
        simulate(s, workload(job("a", 0, 4)), FirstNode(), Broken())
    assert info.value.__notes__ == ["in predictor broken.observe at simulated time 4, job a"]


def test_snapshot_is_read_only_and_queue_in_submit_order() -> None:
    disp = Scripted({})
    s = system(("n", 1, {"core": 1}))
    run(s, workload(job("b", 0, 1), job("a", 0, 1), job("c", 2, 1)), disp)
    snap = disp.calls[0]
    assert [q.job.id for q in snap.queued] == ["b", "a"]
    with pytest.raises(ValueError):
        snap.free[0, 0] = 5


def test_running_job_predictions_raised_when_outlived() -> None:
    disp = Scripted({0: [Start("a", (0,))]})
    s = system(("n", 2, {"core": 1}))
    wl = workload(job("a", 0, 1000, walltime=5000, user="u"), job("b", 700, 1, walltime=5000, user="u"))
    # last2 with no history predicts the walltime (5000), so nothing to raise: use a history
    wl2 = workload(job("h", 0, 10, walltime=5000, user="u"), job("a", 20, 1000, walltime=5000, user="u"),
                   job("b", 700, 1, walltime=5000, user="u"))
    disp2 = Scripted({0: [Start("h", (0,))], 20: [Start("a", (0,))]})
    run(s, wl, disp, predictor="last2")
    run(s, wl2, disp2, predictor="last2")
    at_700 = next(c for c in disp2.calls if c.time == 700)
    a = next(r for r in at_700.running if r.job.id == "a")
    assert a.predicted > 700 - 20  # predicted 10 at start, outlived, raised beyond the elapsed time


class Recording(Dispatcher):
    """FIFO on node 0, keeping every snapshot and a copy of its queue taken during the call."""

    name = "recording"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[Snapshot, tuple[object, ...]]] = []

    def decide(self, snapshot: Snapshot) -> Decision:
        self.seen.append((snapshot, tuple(snapshot.queued)))
        q = snapshot.queued[0]
        if q.job.units <= snapshot.free[0, 0] // q.job.req[0]:
            return Decision((Start(q.job.id, (0,) * q.job.units),))
        return Decision()


def test_kept_snapshots_keep_their_queue() -> None:
    import pickle

    disp = Recording()
    s = system(("n", 1, {"core": 2}))
    run(s, workload(*[job(f"j{i}", i // 3, 2 + i % 3, units=1 + i % 2) for i in range(12)]), disp)
    assert len(disp.seen) > 5
    for snap, queued in disp.seen:
        view = snap.queued
        assert view == queued and queued == view and view != queued[1:]
        assert len(view) == len(queued) and list(view) == list(queued)
        assert view[0] is queued[0] and view[-1] is queued[-1] and view[1:] == queued[1:]
        assert pickle.loads(pickle.dumps(view)) == queued


def test_easy_same_decisions_from_queue_views_and_tuples(monkeypatch: pytest.MonkeyPatch) -> None:
    """EASY follows the simulator's LiveViews of queue and running jobs (lazy deletion, compaction,
    logs that restart) exactly as it reads tuples."""
    import dataclasses
    import random

    from cpdispatch.dispatchers import make_dispatcher
    from cpdispatch.dispatchers.baselines.easy import RunningCache
    from cpdispatch.dispatchers.baselines.queue_cache import LiveQueueCache

    monkeypatch.setattr(LiveQueueCache, "MIN_COMPACT", 3)
    monkeypatch.setattr(RunningCache, "MIN_COMPACT", 2)
    monkeypatch.setattr(sim_module.Logged, "SLACK", 5)  # the simulator's logs restart often

    class AsTuple(Dispatcher):
        name = "astuple"

        def __init__(self, inner: Dispatcher) -> None:
            super().__init__()
            self.inner = inner

        def decide(self, snapshot: Snapshot) -> Decision:
            return self.inner.decide(
                dataclasses.replace(snapshot, queued=tuple(snapshot.queued), running=tuple(snapshot.running))
            )

    rng = random.Random(7)
    s = system(("a", 3, {"core": 4, "mem": 8}), ("b", 2, {"core": 2, "mem": 16}))
    jobs = [
        job(f"j{i}", rng.randrange(0, 400), rng.randrange(1, 60), units=rng.randrange(1, 5),
            req=(rng.randrange(1, 3), rng.randrange(0, 5)), walltime=rng.randrange(60, 120))
        for i in range(300)
    ]
    for alloc, predictor in (("first-fit", "walltime"), ("best-fit", "last2")):  # last2: raised predictions
        schedules = []
        for wrap in (False, True):
            easy = make_dispatcher("easy", {"allocator": alloc})
            res = run(s, workload(*jobs), AsTuple(easy) if wrap else easy, predictor=predictor)
            schedules.append([(r.job.id, r.start, r.alloc.per_unit()) for r in res.records])
        assert schedules[0] == schedules[1]
