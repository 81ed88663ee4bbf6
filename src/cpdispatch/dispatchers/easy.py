"""EASY backfilling with a reservation protected at node level.

FIFO until the first job that does not fit (the head). The head gets a reservation: the shadow
time is the first predicted end (of a running job, or of a job started in this pass) at which the
head fits on the nodes, and at that time specific nodes/amounts are set aside for it; what is left
there is the "extra". A later job backfills now if it fits now and either ends (now + predicted) by
the shadow time or fits within the extra as well, so it can never delay the head's reservation.
AccaSim master does not protect the reservation (reference notes 1.9); this does.
"""

from __future__ import annotations

from itertools import chain

import numpy as np

from ..allocators import Allocator, consume, get_allocator
from ..job import Job
from ..snapshot import Decision, Snapshot, Start
from ..system import units_fitting
from .base import Dispatcher, registered
from .queue_order import ALLOCATOR_OPTION, GreedyPass, _by_submit


class Reservation:
    """The head job's shadow time and the extra amounts (nodes x types) left beside it then."""

    __slots__ = ("extra", "failed", "shadow", "totals")

    def __init__(self, shadow: int, extra: np.ndarray) -> None:
        self.shadow = shadow
        self.extra = extra
        self.totals: list[int] = extra.sum(axis=0).tolist()
        self.failed: dict[tuple[int, ...], int] = {}


def reserve(
    snapshot: Snapshot,
    free: np.ndarray,
    started: list[tuple[Job, int, tuple[int, ...]]],
    head: Job,
    alloc: Allocator,
) -> Reservation | None:
    """Release running and just-started jobs in order of predicted end (never before now + 1)
    until `head` fits on the nodes; None if it never does."""
    now = snapshot.time
    events = [(max(r.start + r.predicted, now + 1), r.job, r.nodes) for r in snapshot.running]
    events += [(now + max(pred, 1), job, nodes) for job, pred, nodes in started]
    events.sort(key=lambda e: e[0])
    units, req = head.units, head.req
    need = [units * a for a in req]
    avail_tot = free.sum(axis=0).tolist()
    avail: np.ndarray | None = None
    done = 0  # events already added to `avail`
    i, n = 0, len(events)
    while True:
        if all(t >= x for t, x in zip(avail_tot, need)):
            if avail is None:
                avail = free.copy()
            _release(avail, events[done:i])
            done = i
            if int(np.minimum(units_fitting(avail, req), units).sum()) >= units:
                break
        if i == n:
            return None
        t_end = events[i][0]
        while i < n and events[i][0] == t_end:
            job = events[i][1]
            for k, a in enumerate(job.req):
                avail_tot[k] += a * job.units
            i += 1
    shadow = events[i - 1][0] if i else now
    nodes = alloc(avail, snapshot.system.capacity, req, units)
    assert nodes is not None  # the fit test above passed
    return Reservation(shadow, avail)


def _release(avail: np.ndarray, events: list[tuple[int, Job, tuple[int, ...]]]) -> None:
    """Give back the resources of `events` (one batched update)."""
    if not events:
        return
    nodes = np.fromiter(chain.from_iterable(e[2] for e in events), dtype=np.intp)
    reqs = np.array([e[1].req for e in events], dtype=np.int64)
    counts = [len(e[2]) for e in events]
    np.add.at(avail, nodes, np.repeat(reqs, counts, axis=0))


def _start_within_extra(work: GreedyPass, res: Reservation, job: Job) -> tuple[int, ...] | None:
    """Start a job that outlives the shadow time: it must fit now and within the extra."""
    units, req = job.units, job.req
    for k, a in enumerate(req):
        if a * units > work.totals[k] or a * units > res.totals[k]:
            return None
    if work.failed.get(req, units + 1) <= units or res.failed.get(req, units + 1) <= units:
        return None
    limit = np.minimum(work.free, res.extra)
    nodes = work.alloc(limit, work.capacity, req, units)
    if nodes is None:
        res.failed[req] = units
        return None
    consume(work.free, nodes, req)
    consume(res.extra, nodes, req)
    for k, a in enumerate(req):
        work.totals[k] -= a * units
        res.totals[k] -= a * units
    return nodes


@registered()
class Easy(Dispatcher):
    name = "easy"
    summary = "EASY backfilling: FIFO plus backfill that never delays the first blocked job's reservation"
    options = (ALLOCATOR_OPTION,)
    allocator: str

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._alloc = get_allocator(self.allocator)

    def decide(self, snapshot: Snapshot) -> Decision:
        queue = sorted(snapshot.queued, key=_by_submit)
        work = GreedyPass(snapshot, self._alloc)
        starts: list[Start] = []
        started: list[tuple[Job, int, tuple[int, ...]]] = []
        for pos, q in enumerate(queue):  # noqa: B007 (pos is used after the loop)
            nodes = work.try_start(q.job)
            if nodes is None:
                break
            starts.append(Start(q.job.id, nodes))
            started.append((q.job, q.predicted, nodes))
        else:
            return Decision(starts=tuple(starts))
        head = queue[pos].job
        res = reserve(snapshot, work.free, started, head, self._alloc)
        shadow = res.shadow if res is not None else None
        horizon = (shadow - snapshot.time) if shadow is not None else None
        for q in queue[pos + 1 :]:
            job = q.job
            if horizon is None or q.predicted <= horizon:
                nodes = work.try_start(job)
            else:
                assert res is not None
                nodes = _start_within_extra(work, res, job)
            if nodes is not None:
                starts.append(Start(job.id, nodes))
        plan = {head.id: shadow} if shadow is not None else {}
        return Decision(starts=tuple(starts), plan=plan)
