"""Baseline dispatchers (fifo, sjf, ljf, easy, pbs): hand-checked decisions and schedules, and the
fast implementations against plain reference code (the specification, written for clarity)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cpdispatch.allocators import get_allocator
from cpdispatch.dispatchers import make_dispatcher
from cpdispatch.dispatchers.ewt import parse_ewt
from cpdispatch.errors import CpdispatchError
from cpdispatch.job import Job
from cpdispatch.predictors import make_predictor
from cpdispatch.simulator import SimOptions, simulate
from cpdispatch.snapshot import Decision, QueuedJob, RunningJob, Snapshot
from cpdispatch.system import NodeGroup, System

from .helpers import job, on, system, workload
from .strategies import systems, workloads

Queued = tuple[Job, int]  # job, predicted
Running = tuple[Job, int, int, tuple[int, ...]]  # job, start, predicted, nodes
Starts = list[tuple[str, tuple[int, ...]]]


def snap(sys_: System, now: int, queued: list[Queued], running: list[Running] | None = None) -> Snapshot:
    """A snapshot whose free amounts are the capacity minus what the running jobs use."""
    free = np.array(sys_.capacity, dtype=np.int64)
    runs = []
    for j, start, pred, nodes in running or []:
        for n in nodes:
            free[n] -= j.req
        runs.append(RunningJob(j, start, pred, on(*nodes)))
    assert (free >= 0).all()
    free.setflags(write=False)  # a dispatcher must never write into the snapshot
    return Snapshot(now, sys_, tuple(QueuedJob(j, p) for j, p in queued), tuple(runs), free)


def starts(decision: Decision) -> Starts:
    return [(s.job_id, s.nodes) for s in decision.starts]


def decide(name: str, s: Snapshot, **opts: str) -> Starts:
    return starts(make_dispatcher(name, opts).decide(s))


# two nodes of two cores; one resource type
TWO = system(("n", 2, {"core": 2}))


# ------------------------------------------------------------------------------ FIFO / SJF / LJF


def test_fifo_blocks_behind_the_head() -> None:
    # node 0 busy until 100; a (3 units) cannot start, and b, which would fit, waits behind it
    r1 = job("r1", 0, 100, units=2)
    s = snap(TWO, 5, [(job("a", 1, 10, units=3), 10), (job("b", 2, 10), 10)], [(r1, 0, 100, (0, 0))])
    assert decide("fifo", s) == []


def test_fifo_sjf_ljf_orders() -> None:
    x, y, z = job("x", 0, 300, units=2), job("y", 1, 400, units=3), job("z", 2, 50)
    s = snap(TWO, 2, [(x, 300), (y, 400), (z, 50)])
    # fifo: x on node 0, then y (3 units, 2 free) blocks z
    assert decide("fifo", s) == [("x", (0, 0))]
    # sjf: z (50) on node 0, x (300) on node 0 + node 1, then y blocks
    assert decide("sjf", s) == [("z", (0,)), ("x", (0, 1))]
    # ljf: y (400) on node 0 x2 + node 1, then x (2 units, 1 free) blocks z
    assert decide("ljf", s) == [("y", (0, 0, 1))]


def test_sjf_ties_keep_queue_order() -> None:
    s = snap(TWO, 0, [(job("a", 0, 5), 5), (job("b", 0, 5), 5), (job("c", 0, 1, units=3), 9)])
    assert decide("sjf", s) == [("a", (0,)), ("b", (0,))]


def test_allocator_option() -> None:
    three = system(("n", 3, {"core": 4}))
    r = job("r", 0, 100, units=3)
    s = snap(three, 0, [(job("a", 0, 10), 10)], [(r, 0, 100, (1, 1, 1))])
    assert decide("fifo", s) == [("a", (0,))]
    assert decide("fifo", s, allocator="best-fit") == [("a", (1,))]  # the fullest node
    with pytest.raises(CpdispatchError, match="unknown allocator"):
        make_dispatcher("fifo", {"allocator": "worst-fit"})


# ------------------------------------------------------------------------------------------ EASY


def easy_snapshot(b_units: int = 2) -> Snapshot:
    """Node 0 busy until 100, node 1 free. Queue: a (3 units) blocked -> shadow time 100, where
    first fit reserves node 0 x2 + node 1 x1 for it, leaving an extra of one core on node 1."""
    r1 = job("r1", 0, 100, units=2)
    return snap(TWO, 0, [
        (job("a", 1, 10, units=3), 10),
        (job("b", 2, 200, units=b_units), 200),  # outlives the shadow time
        (job("c", 3, 200), 200),  # outlives it too, but fits in the extra core
        (job("d", 4, 50), 50),  # ends by the shadow time
    ], [(r1, 0, 100, (0, 0))])


def test_easy_protects_the_reservation_and_backfills_harmless_jobs() -> None:
    # b would take node 1's two cores until 200: a could not start at 100 -> refused (AccaSim
    # master would start it). c uses only the extra core -> starts; d ends by 100 -> starts.
    assert decide("easy", easy_snapshot()) == [("c", (1,)), ("d", (1,))]
    assert decide("fifo", easy_snapshot()) == []


def test_easy_sjf_tries_the_shortest_candidates_first() -> None:
    # d (50 s) is tried before b and c (200 s): it takes one core of node 1 until 50; c still fits
    # in the extra core, b (two cores past the shadow time) still may not start.
    assert decide("easy-sjf", easy_snapshot()) == [("d", (1,)), ("c", (1,))]
    # b of one unit fits in the extra; shortest first, d takes the free core, leaving none for b.
    assert decide("easy", easy_snapshot(b_units=1)) == [("b", (1,)), ("d", (1,))]
    assert decide("easy-sjf", easy_snapshot(b_units=1)) == [("d", (1,)), ("b", (1,))]


def test_easy_long_job_within_the_extra_is_accepted() -> None:
    assert decide("easy", easy_snapshot(b_units=1)) == [("b", (1,)), ("d", (1,))]


def test_easy_shadow_uses_node_level_fit() -> None:
    # 2 nodes x 2 cores, one core free on node 1. The head needs 2 cores on one node. At 50 one
    # core frees on node 0: the totals (2) suffice, but no node has 2 free cores until 80, when
    # node 0 is empty: shadow time 80, the extra is node 1's core. s (ends 60 <= 80) backfills
    # there; with a totals-only shadow time of 50 it would outlive the reservation.
    r1, r3, r4 = job("r1", 0, 1), job("r3", 0, 1), job("r4", 0, 1)
    head = Job("h", 1, 1, (2,), 10, 10)
    short = job("s", 2, 60)
    s = snap(TWO, 0, [(head, 10), (short, 60)], [(r1, 0, 50, (0,)), (r3, 0, 80, (0,)), (r4, 0, 100, (1,))])
    assert decide("easy", s) == [("s", (1,))]
    long = job("l", 2, 81)  # ends 81 > 80 and node 1's core is the extra: may outlive 80
    s = snap(TWO, 0, [(head, 10), (long, 81)], [(r1, 0, 50, (0,)), (r3, 0, 80, (0,)), (r4, 0, 100, (1,))])
    assert decide("easy", s) == [("l", (1,))]
    s = snap(TWO, 0, [(head, 10), (long, 81)], [(r1, 0, 50, (0,)), (r3, 0, 80, (1,)), (r4, 0, 100, (1,))])
    # now node 0 frees at 50 (h fits there) and the extra is empty: l would delay h -> refused
    assert decide("easy", s) == []


def test_easy_clamps_overdue_running_jobs_to_now_plus_one() -> None:
    # One node, 2 cores, r1 on one of them was predicted to end at 10 but still runs at 50: it is
    # taken to end at 51, the shadow time of a (2 cores), with no extra. c (ends 52) would delay
    # a: refused although it fits now; b (ends 51) backfills. With the raw predicted end (10) b
    # would look as if it outlived the reservation.
    one = system(("n", 1, {"core": 2}))
    r1 = job("r1", 0, 1000)
    s = snap(one, 50, [(job("a", 1, 10, units=2), 10), (job("c", 2, 2), 2), (job("b", 3, 1), 1)],
             [(r1, 0, 10, (0,))])
    assert decide("easy", s) == [("b", (0,))]


def test_easy_next_call_reserves_afresh_after_a_backfill_within_the_extra() -> None:
    # 4 nodes x 2 cores; r (3 units of 2 cores on nodes 0-2) ends at 99; h (4 cores) is blocked.
    four = system(("n", 4, {"core": 2}))
    r = Job("r", 0, 3, (2,), 99, 99)
    h = job("h", 26, 150, units=4)
    b, c = job("b", 80, 200), job("c", 88, 170)
    # at 82: best fit reserves nodes 0 and 1 for h at 99 (all equally full); b outlives 99 and
    # uses node 3, part of the extra
    first = snap(four, 82, [(h, 150), (b, 200)], [(r, 0, 99, (0, 1, 2))])
    # at 88 (b running, c submitted): at 99 node 3 is now the fullest, best fit reserves it for
    # h, so c may not use it: no start (a stale reservation would start c on node 3)
    second = snap(four, 88, [(h, 150), (c, 170)], [(r, 0, 99, (0, 1, 2)), (b, 82, 200, (3,))])
    disp = make_dispatcher("easy", {"allocator": "best-fit"})
    assert starts(disp.decide(first)) == [("b", (3,))]
    assert starts(disp.decide(second)) == [] == decide("easy", second, allocator="best-fit")
    # first fit reserves the same nodes either way: c may use node 3 (extra) at 88
    disp = make_dispatcher("easy")
    assert starts(disp.decide(first)) == [("b", (3,))]
    assert starts(disp.decide(second)) == [("c", (3,))] == decide("easy", second)


def test_easy_without_a_blocked_job_is_fifo() -> None:
    s = snap(TWO, 0, [(job("a", 0, 10, units=3), 10), (job("b", 1, 10), 10)])
    assert decide("easy", s) == [("a", (0, 0, 1)), ("b", (1,))]


# ------------------------------------------------------------------------------------------- PBS


def test_pbs_orders_by_waiting_time_over_queue_ewt() -> None:
    one = system(("n", 1, {"core": 1}))
    # at 1000: long job waited 1001 s (/3600), debug job 101 s (/60): debug goes first
    lng = Job("L", 0, 1, (1,), 10, 10, queue="long")
    dbg = Job("D", 900, 1, (1,), 10, 10, queue="debug")
    s = snap(one, 1000, [(lng, 10), (dbg, 10)])
    assert decide("pbs", s, ewt="debug=60,long=3600") == [("D", (0,))]
    assert decide("pbs", s) == [("L", (0,))]  # one EWT for all: FIFO


def test_pbs_area_tie_break_and_skipping() -> None:
    # same submit and queue: smaller area (predicted x units x req) first; a job that does not fit
    # is skipped and later ones may start
    big = job("big", 0, 10, units=3)  # cannot fit (2 free)
    small = job("small", 0, 10, units=2)
    tiny = job("tiny", 0, 5)
    s = snap(TWO, 10, [(big, 10), (small, 10), (tiny, 5)], [(job("r", 0, 50), 0, 50, (0,))])
    # free: node 0 one core, node 1 two. Areas tiny 5 < small 20 < big 30: tiny on node 0 (best
    # fit: the fullest), small on node 1, big does not fit and is skipped
    assert decide("pbs", s) == [("tiny", (0,)), ("small", (1, 1))]


def test_parse_ewt() -> None:
    assert parse_ewt("default=1800") == {"default": 1800}
    assert parse_ewt("q1=60, q2=600") == {"default": 1800, "q1": 60, "q2": 600}
    assert parse_ewt("eurora") == {"default": 1800, "debug": 60, "parallel": 600, "longpar": 3600}
    for bad in ("q1", "q1=x", "q1=0", "=5"):
        with pytest.raises(CpdispatchError, match="option ewt"):
            parse_ewt(bad)


# ----------------------------------------------------------- end-to-end schedules (simulator)

ONE4 = system(("n", 1, {"core": 4}))
E2E = [  # id, submit, runtime (= walltime = predicted), units
    job("j1", 0, 100, units=2),
    job("j2", 10, 50, units=3),
    job("j3", 20, 30, units=2),
    job("j4", 30, 200, units=2),
    job("j5", 40, 10, units=1),
]


@pytest.mark.parametrize(("name", "expected"), [
    # fifo: j1 at 0; j2 (3 cores, 2 free) blocks everything until j1 ends at 100; j3 (2 of the 1
    # free) blocks until j2 ends at 150, then j3 and j4 start; j5 waits for j3 (180).
    ("fifo", {"j1": 0, "j2": 100, "j3": 150, "j4": 150, "j5": 180}),
    # sjf: at 20 j3 (30 s) goes before j2 (50 s) and takes the 2 free cores; at 50 j5 (10 s) then
    # j2 blocks; at 100 j2 starts, j4 (2 cores, 1 free) waits until 150.
    ("sjf", {"j1": 0, "j3": 20, "j5": 50, "j2": 100, "j4": 150}),
    # easy: j2 blocked, shadow 100 (j1 ends) with 1 extra core. At 20 j3 ends by 50 <= 100:
    # backfills. At 50: j4 (ends 250) needs 2 cores but only the 1 extra core may outlive 100:
    # refused; j5 (ends 60) backfills. j2 starts at 100 as reserved (unprotected backfilling would
    # have started j4 at 50 and delayed j2 to 250); j4 at 150.
    ("easy", {"j1": 0, "j3": 20, "j5": 50, "j2": 100, "j4": 150}),
])
def test_end_to_end_schedule(name: str, expected: dict[str, int]) -> None:
    res = simulate(ONE4, workload(*E2E), make_dispatcher(name), make_predictor("walltime"),
                   SimOptions(progress=False))
    assert {r.job.id: r.start for r in res.records} == expected
    assert not res.refused


def test_end_to_end_easy_backfill_on_two_nodes() -> None:
    # 2 nodes x 2 cores; walltime = runtime = predicted.
    jobs = [
        Job("a", 0, 1, (2,), 100, 100),  # node 0 (whole) until 100
        Job("b", 5, 1, (1,), 300, 300),  # one core of node 1 until 305
        Job("c", 6, 1, (2,), 50, 50),  # needs a whole node: blocked, shadow 100 on node 0
        Job("d", 7, 1, (1,), 90, 90),  # node 1's last core, ends 97 <= 100: backfills at 7
        Job("e", 8, 1, (1,), 40, 40),  # nothing free until d ends at 97; then e ends 137 > 100,
    ]  # but the extra at 100 is node 1's core (c takes node 0): e starts at 97 there
    res = simulate(TWO, workload(*jobs), make_dispatcher("easy"), make_predictor("walltime"),
                   SimOptions(progress=False))
    assert {r.job.id: (r.start, r.alloc.per_unit()) for r in res.records} == {
        "a": (0, (0,)), "b": (5, (1,)), "c": (100, (0,)), "d": (7, (1,)), "e": (97, (1,)),
    }


# ---------------------------------------------------- against plain reference implementations


def ref_order(s: Snapshot, key: Callable[[QueuedJob], Any], alloc_name: str, skip: bool) -> Starts:
    alloc, cap, free = get_allocator(alloc_name), s.system.capacity, s.free.copy()
    out: Starts = []
    for q in sorted(s.queued, key=key):
        nodes = alloc(free, cap, q.job.req, q.job.units, q.job.one_per_node)
        if nodes is not None:
            out.append((q.job.id, nodes))
        elif not skip:
            break
    return out


def ref_easy(s: Snapshot, alloc_name: str = "first-fit", shortest_first: bool = False) -> Starts:
    alloc, cap, now, free = get_allocator(alloc_name), s.system.capacity, s.time, s.free.copy()
    queue = sorted(s.queued, key=lambda q: q.job.submit)
    out: Starts = []
    started: list[tuple[tuple[int, ...], int, tuple[int, ...]]] = []
    k = 0
    while k < len(queue):
        q = queue[k]
        nodes = alloc(free, cap, q.job.req, q.job.units, q.job.one_per_node)
        if nodes is None:
            break
        out.append((q.job.id, nodes))
        started.append((q.job.req, now + max(q.predicted, 1), nodes))
        k += 1
    if k == len(queue):
        return out
    head = queue[k].job
    events = [(r.job.req, max(r.predicted_end, now + 1), r.alloc.per_unit()) for r in s.running] + started
    shadow, extra = None, free
    for t in sorted({e[1] for e in events}):
        avail = free.copy()
        for req, end, used in events:
            if end <= t:
                for n in used:
                    avail[n] += req
        if alloc(avail, cap, head.req, head.units, head.one_per_node) is not None:  # reserve the head's nodes
            shadow, extra = t, avail
            break
    behind = sorted(queue[k + 1:], key=lambda q: q.predicted) if shortest_first else queue[k + 1:]
    for q in behind:
        j = q.job
        if shadow is None or now + q.predicted <= shadow:
            nodes = alloc(free, cap, j.req, j.units, j.one_per_node)
        else:
            nodes = alloc(np.minimum(free, extra), cap, j.req, j.units, j.one_per_node)
            for n in nodes or ():
                free[n] -= j.req
                extra[n] -= j.req
        if nodes is not None:
            out.append((j.id, nodes))
    return out


def ref_pbs(s: Snapshot, ewt: dict[str, int], alloc_name: str = "best-fit") -> Starts:
    top = max(ewt.values())

    def key(q: QueuedJob) -> tuple[float, int]:
        w = ewt.get(q.job.queue, ewt["default"])
        return (-(top * (s.time - q.job.submit + 1)) / w, q.predicted * sum(q.job.units * a for a in q.job.req))

    return ref_order(s, key, alloc_name, skip=True)


REFERENCES: dict[str, Callable[[Snapshot, str], Starts]] = {
    "fifo": lambda s, a: ref_order(s, lambda q: q.job.submit, a, False),
    "sjf": lambda s, a: ref_order(s, lambda q: q.predicted, a, False),
    "ljf": lambda s, a: ref_order(s, lambda q: -q.predicted, a, False),
    "easy": ref_easy,
    "easy-sjf": lambda s, a: ref_easy(s, a, shortest_first=True),
    "pbs": lambda s, a: ref_pbs(s, {"default": 1800, "q1": 60}, a),
}


@pytest.mark.parametrize("alloc", ["first-fit", "best-fit"])
@pytest.mark.parametrize("seed", range(4))
def test_easy_matches_the_reference_on_seeded_workloads(alloc: str, seed: int) -> None:
    """More and longer simulations than the hypothesis test below, for EASY's state kept across
    calls (per-shape fit counts, running jobs in order of end)."""
    rng = random.Random(seed)
    for _ in range(25):
        groups = [NodeGroup(f"g{g}", rng.randint(1, 4), {"core": rng.randint(1, 8), "mem": rng.choice([0, 1024, 4096])})
                  for g in range(rng.randint(1, 3))]
        sys_ = System.build("seeded", groups)
        jobs, t = [], 0
        for i in range(rng.randint(5, 40)):
            t += rng.randint(0, 30)
            wt = rng.choice([None, rng.randint(1, 200)])
            jobs.append(Job(str(i), t, rng.randint(1, 4), (rng.randint(1, 4), rng.choice([0, 256, 1024])), wt,
                            rng.randint(0, 120), default_walltime=None if wt else 150))

        def check(s: Snapshot, d: Decision, _wall: float) -> None:
            assert starts(d) == ref_easy(s, alloc), f"t={s.time}"

        simulate(sys_, workload(*jobs), make_dispatcher("easy", {"allocator": alloc}),
                 make_predictor(rng.choice(["walltime", "real", "last2"])), SimOptions(progress=False),
                 on_decision=check)


@pytest.mark.parametrize("name", sorted(REFERENCES))
@pytest.mark.parametrize("alloc", ["first-fit", "best-fit"])
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), predictor=st.sampled_from(["walltime", "real", "last2"]))
def test_every_decision_matches_the_reference(name: str, alloc: str, data: st.DataObject, predictor: str) -> None:
    """Along whole simulations (so the caches kept across calls are exercised), and again on each
    snapshot with a fresh dispatcher and out of order (so they never change a decision)."""
    sys_ = data.draw(systems())
    wl = data.draw(workloads(sys_))
    opts = {"allocator": alloc} | ({"ewt": "q1=60"} if name == "pbs" else {})
    seen: list[tuple[Snapshot, Starts]] = []

    def check(s: Snapshot, d: Decision, _wall: float) -> None:
        assert starts(d) == REFERENCES[name](s, alloc), f"t={s.time}"
        seen.append((s, starts(d)))

    simulate(sys_, wl, make_dispatcher(name, opts), make_predictor(predictor), SimOptions(progress=False),
             on_decision=check)
    shared = make_dispatcher(name, opts)
    for s, expected in reversed(seen):
        assert starts(shared.decide(s)) == expected
