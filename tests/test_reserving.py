"""Conservative backfilling and Slurm's backfill: hand-checked decisions, every decision against a
plain reference, and the promise of a reservation (never delayed by a job after it)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cpdispatch.allocators import get_allocator
from cpdispatch.dispatchers import make_dispatcher
from cpdispatch.dispatchers.baselines.conservative import ReservingPass
from cpdispatch.job import Job
from cpdispatch.predictors import make_predictor
from cpdispatch.simulator import SimOptions, simulate
from cpdispatch.snapshot import Decision, QueuedJob, Snapshot
from cpdispatch.system import NodeGroup, System

from .helpers import job, workload
from .strategies import systems, workloads
from .test_baselines_golden import TWO, decide, snap, starts

Starts = list[tuple[str, tuple[int, ...]]]


# -- a plain reference of the pass --------------------------------------------------------------


def ref_reserving(
    s: Snapshot, order: list[QueuedJob], alloc_name: str = "first-fit", depth: int = -1, window: int = -1,
    resolution: int = 1,
) -> tuple[Starts, dict[str, int]]:
    """Starts and reservations (job id -> time) of one pass, written for clarity: a profile of
    the free amount per type at every time something ends, jobs in `order`."""
    now, alloc, cap, free = s.time, get_allocator(alloc_name), s.system.capacity, s.free.copy()

    def up(t: int) -> int:
        return now + -(-(t - now) // resolution) * resolution

    holds: list[tuple[int, int, np.ndarray]] = [  # (from, to, amounts per type) taken
        (now, up(max(r.predicted_end, now + 1)), r.job.units * np.array(r.job.req)) for r in s.running
    ]
    total = s.free.sum(axis=0) + sum((h[2] for h in holds), np.zeros(len(cap[0]), dtype=np.int64))
    out: Starts = []
    reserved: dict[str, int] = {}
    for tested, q in enumerate(order):
        if 0 <= depth <= tested:
            break
        need = q.job.units * np.array(q.job.req)
        length = up(now + max(q.predicted, 1)) - now
        candidates = sorted({now} | {h[1] for h in holds})

        def fits(t: int, need: np.ndarray = need, length: int = length) -> bool:
            points = {t} | {h[0] for h in holds if t < h[0] < t + length}
            return all((total - sum((h[2] for h in holds if h[0] <= p < h[1]), 0 * total) >= need).all()
                       for p in points)

        start = next((t for t in candidates if fits(t)), None)
        if start is None or (window >= 0 and start > now + window):
            continue
        nodes = alloc(free, cap, q.job.req, q.job.units, q.job.one_per_node) if start == now else None
        if nodes is not None:
            out.append((q.job.id, nodes))
        else:
            reserved[q.job.id] = start
        holds.append((start, start + length, need))
    return out, reserved


def reserving(name: str, **opts: Any) -> ReservingPass:
    """A dispatcher that keeps the reservations of its last call."""
    d = make_dispatcher(name, opts)
    assert isinstance(d, ReservingPass)
    d.keep_reservations = True
    return d


def fifo(s: Snapshot) -> list[QueuedJob]:
    return sorted(s.queued, key=lambda q: q.job.submit)


# -- hand-checked -----------------------------------------------------------------------------------


def test_conservative_reserves_for_every_job_and_backfills_only_harmless_ones() -> None:
    """Two nodes of two cores; r1 holds node 0 until 100. a (3 cores) is reserved at 100 until
    110; b (4 cores) after it, 110 to 210; c (1 core, 150 s) would delay b -> reserved at 210;
    d (1 core, 50 s) delays no one -> starts now. EASY protects only a: it starts c in the core
    a leaves free, and b waits until 150."""
    s = snap(TWO, 0, [(job("a", 1, 10, units=3), 10), (job("b", 2, 100, units=4), 100),
                      (job("c", 3, 150), 150), (job("d", 4, 50), 50)], [(job("r1", 0, 100, units=2), 0, 100, (0, 0))])
    d = reserving("conservative")
    assert starts(d.decide(s)) == [("d", (1,))]
    assert d.reservations == {"a": 100, "b": 110, "c": 210}
    assert decide("easy", s) == [("c", (1,)), ("d", (1,))]


def test_conservative_unit_that_does_not_fit_on_the_nodes_holds_capacity_now() -> None:
    """Three cores free over two nodes (1 + 2) but a asks one unit of 3 cores: the count says now,
    the nodes say no; a holds the capacity, so b (2 cores) may not take it."""
    sys_ = System.build("t", [NodeGroup("n", 2, {"core": 2})])
    s = snap(sys_, 0, [(Job("a", 0, 1, (2,), 50, 50), 50), (Job("b", 1, 1, (2,), 50, 50), 50)],
             [(Job("r", 0, 1, (1,), 100, 100), 0, 100, (0,))])
    assert decide("conservative", s) == [("a", (1,))]
    s = snap(sys_, 0, [(Job("a", 0, 1, (3,), 50, 50), 50), (Job("b", 1, 1, (1,), 500, 500), 500)],
             [(Job("r", 0, 1, (1,), 100, 100), 0, 100, (0,))])
    assert decide("conservative", s) == []


# -- against the reference, and the promise -------------------------------------------------------------


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), alloc=st.sampled_from(["first-fit", "best-fit"]),
       predictor=st.sampled_from(["walltime", "real", "last2", "learned"]))
def test_conservative_matches_the_reference_on_every_decision(data: st.DataObject, alloc: str, predictor: str) -> None:
    sys_ = data.draw(systems())
    wl = data.draw(workloads(sys_))
    dispatcher = reserving("conservative", allocator=alloc)

    def check(s: Snapshot, d: Decision, _wall: float) -> None:
        expected, reserved = ref_reserving(s, fifo(s), alloc)
        assert starts(d) == expected, f"t={s.time}"
        assert dispatcher.reservations == reserved

    simulate(sys_, wl, dispatcher, make_predictor(predictor), SimOptions(progress=False), on_decision=check)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), cut=st.integers(0, 12))
def test_a_job_s_plan_never_depends_on_the_jobs_after_it(data: st.DataObject, cut: int) -> None:
    """Dropping the jobs after the first `cut` of the order changes no start and no reservation
    of the first `cut`."""
    sys_ = data.draw(systems())
    seen: list[Snapshot] = []
    simulate(sys_, data.draw(workloads(sys_)), make_dispatcher("conservative"), make_predictor("walltime"),
             SimOptions(progress=False), on_decision=lambda s, d, w: seen.append(s))
    for s in seen:
        order = fifo(s)
        full_starts, full_res = ref_reserving(s, order)
        keep = {q.job.id for q in order[:cut]}
        part_starts, part_res = ref_reserving(s, order[:cut])
        assert [x for x in full_starts if x[0] in keep] == part_starts
        assert {k: v for k, v in full_res.items() if k in keep} == part_res


def _one_type_system(sizes: list[int]) -> System:
    return System.build("one", [NodeGroup(f"g{i}", 1, {"core": c}) for i, c in enumerate(sizes)])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sizes=st.lists(st.integers(1, 4), min_size=1, max_size=4),
       jobs=st.lists(st.tuples(st.integers(0, 40), st.integers(1, 4), st.integers(1, 60)), min_size=1, max_size=25))
def test_with_exact_predictions_no_job_starts_after_its_first_reservation(
    sizes: list[int], jobs: list[tuple[int, int, int]]
) -> None:
    """Units of one core (the count is then exact) and exact run times: a reservation is a
    promise. Later arrivals and backfilled jobs never push a job past the first time it was given."""
    sys_ = _one_type_system(sizes)
    total = sum(sizes)
    wl = workload(*[job(str(i), t, r, units=min(u, total)) for i, (t, u, r) in enumerate(jobs)])
    dispatcher = reserving("conservative")
    first: dict[str, int] = {}

    def note(s: Snapshot, d: Decision, _wall: float) -> None:
        plan = {x.job_id: s.time for x in d.starts} | dispatcher.reservations
        for jid, t in plan.items():
            first.setdefault(jid, t)

    result = simulate(sys_, wl, dispatcher, make_predictor("real"), SimOptions(progress=False), on_decision=note)
    for r in result.records:
        assert r.start is not None and r.start <= first[r.job.id], r.job.id


# -- Slurm's backfill ------------------------------------------------------------------------------


class RefUsage:
    """Each user's decayed processor-seconds, from the running jobs of each snapshot in turn."""

    def __init__(self, half_life_s: float) -> None:
        self.rate = math.log(2) / half_life_s
        self.usage: dict[str, float] = {}
        self.procs: dict[str, int] = {}
        self.t: int | None = None

    def see(self, s: Snapshot) -> None:
        if self.t is not None and s.time > self.t:
            keep = math.exp(-self.rate * (s.time - self.t))
            for u in self.usage:
                self.usage[u] = self.usage[u] * keep + self.procs.get(u, 0) * (1 - keep) / self.rate
        self.t = s.time
        self.procs = {}
        for r in s.running:
            self.procs[r.job.user] = self.procs.get(r.job.user, 0) + r.job.units * r.job.req[0]
        for u in [*self.procs, *(q.job.user for q in s.queued)]:
            self.usage.setdefault(u, 0.0)

    def factor(self, user: str) -> float:
        """Fair Tree with equal shares: 1 for the least used, down by 1/n per user used less."""
        n = len(self.usage)
        return (n - sum(v < self.usage[user] for v in self.usage.values())) / n


def ref_slurm_order(s: Snapshot, usage: RefUsage, max_age_s: int = 7 * 86_400) -> list[QueuedJob]:
    """Slurm's queue order: integer priority (at least 1) descending, then submit time."""
    cpus_total, nodes_total = s.system.totals[0], s.system.n_nodes

    def prio(q: QueuedJob) -> float:
        age = min((s.time - q.job.submit) / max_age_s, 1.0)
        cpus = q.job.units * q.job.req[0]
        size = (math.ceil(cpus * nodes_total / cpus_total) / nodes_total + cpus / cpus_total) / 2
        return max(math.floor(1000 * age + 1000 * min(size, 1.0) + 10000 * usage.factor(q.job.user)), 1)

    return [q for _, q in sorted(enumerate(s.queued), key=lambda x: (-prio(x[1]), x[1].job.submit, x[0]))]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), depth=st.sampled_from([500, 2]), window=st.sampled_from([1440, 1]),
       resolution=st.sampled_from([60, 1, 7]), predictor=st.sampled_from(["walltime", "real", "last2"]))
def test_slurm_backfill_matches_the_reference_on_every_decision(
    data: st.DataObject, depth: int, window: int, resolution: int, predictor: str
) -> None:
    sys_ = data.draw(systems())
    wl = data.draw(workloads(sys_))
    opts = {"bf_max_job_test": depth, "bf_window": window, "bf_resolution": resolution}
    dispatcher = reserving("slurm-backfill", **opts)
    usage = RefUsage(7 * 86_400)

    def check(s: Snapshot, d: Decision, _wall: float) -> None:
        usage.see(s)
        expected, reserved = ref_reserving(s, ref_slurm_order(s, usage), depth=depth, window=window * 60,
                                           resolution=resolution)
        assert starts(d) == expected, f"t={s.time}"
        assert dispatcher.reservations == reserved

    simulate(sys_, wl, dispatcher, make_predictor(predictor), SimOptions(progress=False), on_decision=check)


def test_slurm_fair_share_puts_the_least_used_user_first() -> None:
    """heavy has run 4 cores for a day, light nothing: light's later job goes first; without that
    history, the older job does."""
    sys_ = System.build("t", [NodeGroup("n", 4, {"core": 1})])
    d = reserving("slurm-backfill")
    busy = [(Job(f"r{i}", 0, 1, (1,), 90_000, 90_000, "heavy"), 0, 90_000, (i,)) for i in range(4)]
    d.decide(snap(sys_, 0, [(Job("x", 0, 4, (1,), 10, 10, "light"), 10)], busy))
    queue = [(Job("h", 10, 1, (1,), 100, 100, "heavy"), 100), (Job("l", 20, 1, (1,), 100, 100, "light"), 100)]
    d.decide(snap(sys_, 86_400, queue, busy))
    assert list(d.reservations) == ["l", "h"]
    fresh = reserving("slurm-backfill")
    fresh.decide(snap(sys_, 86_400, queue, busy))
    assert list(fresh.reservations) == ["h", "l"]


def test_slurm_window_and_depth_limit_the_reservations() -> None:
    """r holds all 4 cores for two days: with a one-day window nothing is reserved; depth 1 tests
    one job only."""
    sys_ = System.build("t", [NodeGroup("n", 4, {"core": 1})])
    busy = [(Job(f"r{i}", 0, 1, (1,), 172_800, 172_800), 0, 172_800, (i,)) for i in range(4)]
    queue = [(Job("a", 0, 2, (1,), 100, 100), 100), (Job("b", 1, 2, (1,), 100, 100), 100)]
    d = reserving("slurm-backfill")
    assert starts(d.decide(snap(sys_, 0, queue, busy))) == [] and d.reservations == {}
    d = reserving("slurm-backfill", bf_window=3 * 1440, bf_max_job_test=1)
    d.decide(snap(sys_, 0, queue, busy))
    assert d.reservations == {"a": 172_800}
