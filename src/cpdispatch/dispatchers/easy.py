"""EASY backfilling with a reservation protected at node level.

FIFO until the first job that does not fit (the head). The head gets a reservation: the shadow
time is the first predicted end (of a running job, or of a job started in this pass; never before
now + 1, since a job running now has not ended) at which the head fits on the nodes, and at that
time specific nodes/amounts are set aside for it; what is left there is the "extra". A later job
backfills now, in queue order, if it fits now and either ends (now + predicted) by the shadow time
or also fits within the extra, so it can never delay the head's reservation. AccaSim master does
not protect the reservation (reference notes 1.9); this does.

Speed: the simulator calls this at every event with queues of hundreds to tens of thousands of
jobs and hundreds of running jobs. Queue and running jobs live in numpy arrays kept across calls
(matched by object identity, so they never change a decision); vectorised filters leave the exact
per-job loop only the jobs that may start; the reservation is computed only when some job may
backfill, its node-level part only when a job outlives its totals bound; and a call that only
adds jobs to the state the last pass left (a submission) looks at the new jobs alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np

from ..allocators import STABLE_ALLOCATORS, Allocator, get_allocator
from ..job import Job
from ..snapshot import Decision, RunningJob, Snapshot, Start
from ..system import units_fitting
from .base import Dispatcher, registered
from .queue_order import ALLOCATOR_OPTION, Failures, GreedyPass, QueueCache, within

Started = list[tuple[Job, int, tuple[int, ...]]]  # (job, predicted, nodes) started in this pass

#: Backfill candidates are filtered (vectorised) in chunks of CHUNK, each with the state reached so
#: far; after an allocation the rest of a chunk is filtered again if more than REFILTER remain.
CHUNK, REFILTER = 1024, 32


class RunningCache:
    """Running jobs as arrays kept across calls, one column per job in snapshot order: predicted
    end, units and per-unit request; the node of every unit, job after job.

    Between two calls the simulator's running jobs are the previous ones minus those that ended
    plus new ones at the end. `sync` finds the ended ones by comparing tuple slices (identity
    first, as tuple comparison does; equal objects carry equal numbers) and converts only the new
    ones; anything else is simply rebuilt. The arrays are a function of the running jobs alone.
    """

    #: More disappeared jobs than this in one call: rebuild instead of matching.
    MAX_GONE = 256

    def __init__(self) -> None:
        self._reset(0)

    def _reset(self, ntypes: int) -> None:
        self.items: tuple[RunningJob, ...] = ()
        self.end = np.zeros(0, dtype=np.int64)
        self.units = np.zeros(0, dtype=np.int64)
        self.req = np.zeros((ntypes, 0), dtype=np.int64)
        self.unit_node = np.zeros(0, dtype=np.intp)  # units of each job together, jobs in order

    def sync(self, running: tuple[RunningJob, ...], ntypes: int) -> None:
        old = self.items
        if self.req.shape[0] != ntypes:
            self._reset(ntypes)
            old = ()
        n, r = len(old), len(running)
        keep: list[tuple[int, int]] = []  # kept slices of the old columns
        i = j = 0
        while j < n and i < r:
            length = min(r - i, n - j)
            p = _matching_prefix(running, i, old, j, length)
            if p:
                keep.append((j, j + p))
                i, j = i + p, j + p
            if p == length:
                break
            j += 1  # old[j] is no longer running
            if j - i > self.MAX_GONE:
                keep, i = [], 0
                break
        kept = sum(b - a for a, b in keep)
        if kept < n:
            self._keep(keep, n)
        if i < r:
            self._add(running[i:])
        self.items = running

    def _keep(self, slices: list[tuple[int, int]], n: int) -> None:
        mask = np.zeros(n, dtype=bool)
        for a, b in slices:
            mask[a:b] = True
        self.unit_node = self.unit_node[np.repeat(mask, self.units)]
        self.end, self.units, self.req = self.end[mask], self.units[mask], self.req[:, mask]

    def _add(self, new: tuple[RunningJob, ...]) -> None:
        k = len(new)
        counts = [len(r.nodes) for r in new]
        self.end = np.concatenate((self.end, np.fromiter([r.start + r.predicted for r in new], np.int64, k)))
        self.units = np.concatenate((self.units, np.asarray(counts, dtype=np.int64)))
        req = np.array([r.job.req for r in new], dtype=np.int64).reshape(k, self.req.shape[0]).T
        self.req = np.concatenate((self.req, req), axis=1)
        nodes = np.fromiter(chain.from_iterable(r.nodes for r in new), dtype=np.intp, count=sum(counts))
        self.unit_node = np.concatenate((self.unit_node, nodes))


def _matching_prefix(a: tuple[RunningJob, ...], i: int, b: tuple[RunningJob, ...], j: int, length: int) -> int:
    """The largest p <= length with a[i:i+p] == b[j:j+p] (binary search on C-level slice compares)."""
    if a[i : i + length] == b[j : j + length]:
        return length
    lo, hi = 0, length  # a[i:i+lo] == b[j:j+lo]; the first difference is before hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[i + lo : i + mid] == b[j + lo : j + mid]:
            lo = mid
        else:
            hi = mid
    return lo


class Reservation:
    """The head job's reservation, in two steps since many backfill candidates need only the first.

    `bound`: the first predicted end at which the totals released reach the head's totals (a lower
    bound on the shadow time; None when they never do). `settle()`: the exact shadow time (the
    head fits on the nodes), the head's nodes there, and the `extra` (nodes x types) left beside
    them, with its `totals`; `shadow` stays None if the head never fits.
    """

    def __init__(
        self, now: int, running: RunningCache, started: Started, free: np.ndarray, totals: list[int],
        head: Job, alloc: Allocator, capacity: np.ndarray,
    ) -> None:
        self._head, self._alloc, self._capacity, self._free = head, alloc, capacity, free
        end, req, units, unit_node = np.maximum(running.end, now + 1), running.req, running.units, running.unit_node
        if started:
            k = len(started)
            end = np.concatenate((end, [now + max(pred, 1) for _, pred, _ in started]))
            sreq = np.array([job.req for job, _, _ in started], dtype=np.int64).reshape(k, req.shape[0]).T
            req = np.concatenate((req, sreq), axis=1)
            units = np.concatenate((units, [len(nodes) for _, _, nodes in started]))
            unit_node = np.concatenate((unit_node, np.fromiter(chain.from_iterable(s[2] for s in started), np.intp)))
        # jobs in order of predicted end (ties: any order, they are released together)
        order = np.argsort(end, kind="stable")
        self._end, self._units, self._req = end[order], units[order], req[:, order]
        self._order, self._all_units, self._unit_node = order, units, unit_node
        self.bound: int | None = now
        count = -1  # jobs to release (minus one) before the totals suffice
        for k, a in enumerate(head.req):
            deficit = head.units * a - totals[k]
            if deficit > 0:
                released = (self._req[k] * self._units).cumsum()
                if not released.size or released[-1] < deficit:
                    self.bound = None
                    break
                count = max(count, int(released.searchsorted(deficit)))
        if self.bound is not None and count >= 0:
            self.bound = int(self._end[count])
        self.settled = False
        self.used_extra = False  # a job started within the extra
        self.shadow: int | None = None
        self.extra = free
        self.totals: list[int] = []
        self.failed = Failures()

    def settle(self) -> None:
        """Find the first predicted end, from `bound` on, at which the head fits on the nodes, and
        reserve the head's nodes there."""
        self.settled = True
        if self.bound is None:
            return
        head, ends, counts = self._head, self._end, self._units
        # the units of the jobs in order of predicted end: the released units are a prefix
        first = (np.cumsum(self._all_units) - self._all_units)[self._order]
        before = np.cumsum(counts)
        perm = np.repeat(first - (before - counts), counts) + np.arange(int(before[-1]) if len(before) else 0)
        nodes, amounts = self._unit_node[perm], np.repeat(self._req, counts, axis=1)
        avail = self._free
        done = 0
        if len(ends) and self.bound >= ends[0]:
            done = int(before[int(ends.searchsorted(self.bound, "right")) - 1])
        _add_units(avail, nodes[:done], amounts[:, :done])
        fit = units_fitting(avail, head.req)
        if int(np.minimum(fit, head.units).sum()) < head.units:
            after = _first_fitting_unit(avail, fit, nodes[done:], amounts[:, done:], head.req, head.units)
            if after is None:
                return  # the head never fits
            t = int(np.repeat(ends, counts)[done + after])  # the shadow time
            upto = int(before[int(ends.searchsorted(t, "right")) - 1])
            _add_units(avail, nodes[done:upto], amounts[:, done:upto])
        else:
            t = self.bound
        reserved = self._alloc(avail, self._capacity, head.req, head.units)
        assert reserved is not None  # it fits at t
        self.shadow, self.extra = t, avail
        self.totals = [int(avail[:, k].sum()) for k in range(avail.shape[1])]


def _add_units(avail: np.ndarray, nodes: np.ndarray, amounts: np.ndarray) -> None:
    """Give back one unit per entry of `nodes`, with per-type `amounts` (types x units)."""
    if len(nodes):  # bincount: np.add.at on a column view is ~30x slower
        for k in range(avail.shape[1]):
            avail[:, k] += np.bincount(nodes, weights=amounts[k], minlength=len(avail)).astype(np.int64)


def _first_fitting_unit(
    avail: np.ndarray, fit: np.ndarray, nodes: np.ndarray, amounts: np.ndarray, req: tuple[int, ...], units: int
) -> int | None:
    """Releasing units one by one (in the given order, starting from `avail`, where `fit` units
    of `req` fit per node), the index of the unit whose release lets `units` units fit; None if
    that never happens. Vectorised: every unit's release changes the fit of its node only, so
    per-node running sums (units sorted by node, stable) give each release's gain in fit."""
    n = len(nodes)
    if not n:
        return None
    order = np.argsort(nodes.astype(np.int64) * n + np.arange(n))  # by node, then release order
    node_sorted = nodes[order]
    group = np.flatnonzero(np.diff(node_sorted, prepend=-1))  # first unit of each node
    size = np.diff(np.append(group, n))
    after: np.ndarray | None = None  # fit of the unit's node once it is released
    for k, a in enumerate(req):
        if a > 0:
            amount = amounts[k][order]
            total = amount.cumsum()
            running = total - np.repeat(total[group] - amount[group], size)
            q = (avail[node_sorted, k] + running) // a
            after = q if after is None else np.minimum(after, q)
    if after is None:
        return 0  # nothing requested: it fits already
    after = np.minimum(after, units)
    gain = after.copy()
    gain[1:] -= after[:-1]
    gain[group] = after[group] - np.minimum(fit[node_sorted[group]], units)
    in_order = np.empty_like(gain)
    in_order[order] = gain
    reached = int(np.minimum(fit, units).sum()) + in_order.cumsum()
    i = int(reached.searchsorted(units))
    return i if i < n else None


def _start_within_extra(work: GreedyPass, res: Reservation, job: Job) -> tuple[int, ...] | None:
    """Start a job that outlives the shadow time: it must fit now and within the extra."""
    units, req = job.units, job.req
    for k, a in enumerate(req):
        if a * units > res.totals[k]:
            return None
    if not work.may_start(job) or res.failed.cover(units, req):
        return None
    limit = np.minimum(work.free, res.extra)
    before = limit.copy()
    nodes = work.alloc(limit, work.capacity, req, units)
    work.allocs += 1
    if nodes is None:
        res.failed.add(units, req)
        return None
    used = before - limit
    free = work.free
    free -= used
    res.extra -= used
    res.used_extra = True
    for k, a in enumerate(req):
        work.totals[k] -= a * units
        res.totals[k] -= a * units
    return nodes


@dataclass
class _Carry:
    """The end state of a pass whose head stayed blocked, for the next call (see `Easy._resumable`)."""

    now: int
    running: tuple[RunningJob, ...]  # the snapshot's running jobs
    started: Started  # every job started by the pass, in order
    work: GreedyPass  # free amounts after the pass, failed requests
    res: Reservation | None
    head: Job
    queued: int  # jobs left in the queue


@registered()
class Easy(Dispatcher):
    name = "easy"
    summary = "EASY backfilling: FIFO plus backfill that never delays the first blocked job's reservation"
    options = (ALLOCATOR_OPTION,)
    allocator: str

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._alloc = get_allocator(self.allocator)
        self._queue = QueueCache()
        self._running = RunningCache()
        self._carry: _Carry | None = None

    def decide(self, snapshot: Snapshot) -> Decision:
        cache = self._queue
        kept = cache.sync(snapshot.queued, snapshot.free.shape[1])
        carry, self._carry = self._carry, None
        if carry is not None and self._resumable(carry, snapshot, kept):
            return self._pass(snapshot, carry.work, carry.head, carry.res, [], np.arange(kept, len(cache.items)))
        work = GreedyPass(snapshot, self._alloc)
        may_fit = cache.may_fit(work.free_totals)
        items = cache.items
        order = cache.fifo_order()
        if not may_fit.any():  # the common case on a busy system: settled without numpy work
            if items:
                self._keep_carry(snapshot, work, None, items[0 if order is None else int(order[0])].job, [])
            return Decision()
        starts: list[Start] = []
        done: list[int] = []
        started: Started = []
        for pos in range(len(items)):
            i = pos if order is None else int(order[pos])
            q = items[i]
            nodes = work.try_start(q.job) if may_fit[i] else None
            if nodes is None:
                rest = np.arange(pos + 1, len(items)) if order is None else order[pos + 1 :]
                return self._pass(snapshot, work, q.job, None, starts, rest, done, started)
            starts.append(Start(q.job.id, nodes))
            done.append(i)
            started.append((q.job, q.predicted, nodes))
        cache.remove(done)
        return Decision(starts=tuple(starts))

    def _pass(
        self, snapshot: Snapshot, work: GreedyPass, head: Job, res: Reservation | None, starts: list[Start],
        cand: np.ndarray, done: list[int] | None = None, started: Started | None = None,
    ) -> Decision:
        """Backfill the candidates (queue positions, in queue order) around the head's reservation
        (computed here, only if some candidate may fit, when `res` is None); remove the started
        jobs from the queue cache; keep the end state for the next call."""
        done = [] if done is None else done
        started = [] if started is None else started
        first_backfill = len(starts)
        cache, now = self._queue, snapshot.time
        cand = cand[cache.may_fit(work.totals, cand)]
        if cand.size:
            if res is None:
                self._running.sync(snapshot.running, snapshot.free.shape[1])
                res = Reservation(
                    now, self._running, started, work.free.copy(), list(work.totals), head, self._alloc,
                    snapshot.system.capacity,
                )
            self._backfill(now, cand, work, res, starts, done)
        items = cache.items
        started = started + [
            (items[i].job, items[i].predicted, s.nodes) for i, s in zip(done[first_backfill:], starts[first_backfill:])
        ]
        cache.remove(done)
        self._keep_carry(snapshot, work, res, head, started)
        return Decision(starts=tuple(starts))

    def _keep_carry(
        self, snapshot: Snapshot, work: GreedyPass, res: Reservation | None, head: Job, started: Started
    ) -> None:
        self._carry = _Carry(snapshot.time, snapshot.running, started, work, res, head, len(self._queue.items))

    def _resumable(self, carry: _Carry, snapshot: Snapshot, kept: int) -> bool:
        """Whether this call continues the last pass: nothing ended, the last decision was applied
        as is, no new job comes before the head, and no running job outlived its prediction (so
        none is re-timed to now + 1).

        Then the reservation and the free amounts are those the last pass ended with, and no job
        it did not start can start: free amounts and extra only shrank, and a job that ended by
        the shadow time but did not fit now still does not fit now, whether it still ends by the
        shadow time or not. Only the new jobs need a look. (The jobs started within the extra are
        the only change at the shadow time; first fit reserves the same nodes for the head
        despite them, best fit may not: then no resuming.)
        """
        running, old = snapshot.running, carry.running
        n = len(old)
        if not (
            kept == carry.queued and self._queue.in_submit_order and snapshot.time >= carry.now
            and len(running) == n + len(carry.started) and running[:n] == old
        ):
            return False
        for r, (job, pred, nodes) in zip(running[n:], carry.started):
            if r.job is not job or r.start != carry.now or r.predicted != pred or r.nodes != nodes:
                return False
        if carry.res is not None and carry.res.used_extra and self.allocator not in STABLE_ALLOCATORS:
            return False  # a fresh pass could reserve other nodes for the head
        if not np.array_equal(snapshot.free, carry.work.free):
            return False
        self._running.sync(running, snapshot.free.shape[1])
        return not len(running) or int(self._running.end.min()) > snapshot.time

    def _backfill(
        self, now: int, cand: np.ndarray, work: GreedyPass, res: Reservation, starts: list[Start], done: list[int],
    ) -> None:
        """Start the candidates (queue positions, in queue order) that fit now and either end by
        the shadow time or fit within the extra. The reservation's numpy part is computed only
        when a candidate outlives its totals bound."""
        cache = self._queue
        horizon = None if res.bound is None else res.bound - now  # None: nothing to protect
        if horizon is not None and not res.settled and (cache.predicted[cand] > horizon).any():
            res.settle()
        if res.settled:
            horizon = None if res.shadow is None else res.shadow - now
        items = cache.items
        # stop early once no candidate left can start: none fits the free totals, or none ends by
        # the shadow time and none fits the extra totals (a long queue is then not scanned)
        smallest = cache.totals[:, cand].min(axis=1).tolist()
        short = np.flatnonzero(cache.predicted[cand] <= horizon) if horizon is not None else None
        last_short = -1 if short is None or not short.size else int(short[-1])
        for lo in range(0, len(cand), CHUNK):
            if any(t < m for t, m in zip(work.totals, smallest)) or (
                short is not None and lo > last_short and any(t < m for t, m in zip(res.totals, smallest))
            ):
                break
            # filter each chunk with the state reached so far: a queue of thousands of jobs is
            # filtered once, not once per start
            chunk = self._filter(cand[lo : lo + CHUNK], work, res, horizon)
            pos = 0
            while pos < len(chunk):
                i = int(chunk[pos])
                pos += 1
                q = items[i]
                allocs = work.allocs
                if horizon is None or q.predicted <= horizon:
                    nodes = work.try_start(q.job)
                else:
                    nodes = _start_within_extra(work, res, q.job)
                if nodes is not None:
                    starts.append(Start(q.job.id, nodes))
                    done.append(i)
                if work.allocs != allocs and len(chunk) - pos > REFILTER:
                    chunk, pos = self._filter(chunk[pos:], work, res, horizon), 0

    def _filter(self, cand: np.ndarray, work: GreedyPass, res: Reservation, horizon: int | None) -> np.ndarray:
        """The candidates that may still start: totals within the free totals and, for jobs that
        outlive the shadow time, within the extra totals; none covered by a request that already
        failed. Only a speed-up: the per-job loop checks all of this again."""
        cache = self._queue
        tot = cache.totals[:, cand]
        ok = within(tot, work.totals)
        if work.failed.entries:
            ok &= ~work.failed.covered(cache.units[cand], cache.req[:, cand])
        long = cache.predicted[cand] > horizon if horizon is not None else None
        if long is not None and long.any():
            ok &= ~long | within(tot, res.totals)
            if res.failed.entries:
                ok &= ~(long & res.failed.covered(cache.units[cand], cache.req[:, cand]))
        return cand[ok]
