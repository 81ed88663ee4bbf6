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
(matched by object identity, so they never change a decision; the queue follows the simulator's
QueueView, started jobs are only marked dead); vectorised filters leave the exact per-job loop
only the jobs that may start: with many jobs, an exact "fits now" test per request shape
(`FitPlan`: the units that fit over all nodes, which is when every allocator succeeds), so that
failing allocation attempts are rare; the reservation is computed only when some job may
backfill, its node-level part (`settle`) only when such a job outlives its totals bound (with the
exact test: a job that fits now, since one that does not never starts in the pass: free amounts
only shrink); and a call that only adds jobs to the state the last pass left (a submission) looks
at the new jobs alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain

import numpy as np

from ..allocators import STABLE_ALLOCATORS, Allocator, FitPlan, get_allocator
from ..job import Job
from ..snapshot import Decision, RunningJob, Snapshot, Start
from ..system import units_fitting
from .base import Dispatcher, registered
from .queue_order import ALLOCATOR_OPTION, Failures, GreedyPass, LiveQueueCache, within

Started = list[tuple[Job, int, tuple[int, ...]]]  # (job, predicted, nodes) started in this pass

#: Backfill candidates are filtered (vectorised) in chunks of CHUNK, each with the state reached so
#: far; after an allocation the rest of a chunk is filtered again if more than REFILTER remain.
CHUNK, REFILTER = 1024, 32

#: From this many queued jobs on, the exact "fits now" test (`FitPlan`, per request shape) filters
#: them; below, comparing totals (and failed requests) is cheaper.
EXACT_MIN = 1000


class RunningCache:
    """Running jobs as arrays kept across calls, one column per job in snapshot order: predicted
    end, units and per-unit request; job after job, its units as runs of units on one node
    ("pairs": node and count, in unit order).

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
        self.pairs = np.zeros(0, dtype=np.int64)  # pairs per job
        self.pair_node = np.zeros(0, dtype=np.intp)  # pairs of each job together, jobs in order
        self.pair_count = np.zeros(0, dtype=np.int64)

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
        pmask = np.repeat(mask, self.pairs)
        self.pair_node, self.pair_count, self.pairs = self.pair_node[pmask], self.pair_count[pmask], self.pairs[mask]
        self.end, self.units, self.req = self.end[mask], self.units[mask], self.req[:, mask]

    def _add(self, new: tuple[RunningJob, ...]) -> None:
        k = len(new)
        counts = [len(r.nodes) for r in new]
        self.end = np.concatenate((self.end, np.fromiter([r.start + r.predicted for r in new], np.int64, k)))
        self.units = np.concatenate((self.units, np.asarray(counts, dtype=np.int64)))
        req = np.array([r.job.req for r in new], dtype=np.int64).reshape(k, self.req.shape[0]).T
        self.req = np.concatenate((self.req, req), axis=1)
        pairs, node, count = _runs([r.nodes for r in new])
        self.pairs = np.concatenate((self.pairs, pairs))
        self.pair_node = np.concatenate((self.pair_node, node))
        self.pair_count = np.concatenate((self.pair_count, count))


def _runs(nodes: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The units of jobs (their nodes) as runs of consecutive units on one node: runs per job, and
    each run's node and number of units."""
    counts = [len(n) for n in nodes]
    total = sum(counts)
    if total <= 64:  # a plain loop is cheaper on a few units
        per_job: list[int] = []
        node: list[int] = []
        count: list[int] = []
        for units in nodes:
            before = len(node)
            last = None
            for n in units:
                if n == last:
                    count[-1] += 1
                else:
                    node.append(n)
                    count.append(1)
                    last = n
            per_job.append(len(node) - before)
        return (
            np.array(per_job, dtype=np.int64), np.array(node, dtype=np.intp), np.array(count, dtype=np.int64)
        )
    flat = np.fromiter(chain.from_iterable(nodes), dtype=np.intp, count=total)
    job = np.repeat(np.arange(len(nodes)), counts)
    first = np.ones(total, dtype=bool)
    first[1:] = (flat[1:] != flat[:-1]) | (job[1:] != job[:-1])
    at = np.flatnonzero(first)
    return (
        np.bincount(job[at], minlength=len(nodes)).astype(np.int64),
        flat[at],
        np.diff(np.append(at, total)).astype(np.int64),
    )


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
        end, req, units = np.maximum(running.end, now + 1), running.req, running.units
        pairs, pair_node, pair_count = running.pairs, running.pair_node, running.pair_count
        if started:
            k = len(started)
            end = np.concatenate((end, [now + max(pred, 1) for _, pred, _ in started]))
            sreq = np.array([job.req for job, _, _ in started], dtype=np.int64).reshape(k, req.shape[0]).T
            req = np.concatenate((req, sreq), axis=1)
            units = np.concatenate((units, [len(nodes) for _, _, nodes in started]))
            spairs, snode, scount = _runs([s[2] for s in started])
            pairs = np.concatenate((pairs, spairs))
            pair_node, pair_count = np.concatenate((pair_node, snode)), np.concatenate((pair_count, scount))
        # jobs in order of predicted end (ties: any order, they are released together)
        order = np.argsort(end, kind="stable")
        self._end, self._units, self._req = end[order], units[order], req[:, order]
        self._order, self._all_pairs, self._pairs = order, pairs, pairs[order]
        self._pair_node, self._pair_count, self._job_end, self._job_req = pair_node, pair_count, end, req
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
        head, ends, counts = self._head, self._end, self._pairs
        # per pair (run of units on one node), jobs in snapshot order: the amounts it releases
        amount = np.repeat(self._job_req, self._all_pairs, axis=1) * self._pair_count
        avail = self._free
        released = np.repeat(self._job_end <= self.bound, self._all_pairs)
        _add_units(avail, self._pair_node[released], amount[:, released])
        fit = units_fitting(avail, head.req)
        if int(np.minimum(fit, head.units).sum()) < head.units:
            # the pairs of the jobs in order of predicted end: the released ones are a prefix; a
            # pair is released at once (its units end together), which gives the same first
            # fitting time as releasing its units one by one
            first = (np.cumsum(self._all_pairs) - self._all_pairs)[self._order]
            before = np.cumsum(counts)
            perm = np.repeat(first - (before - counts), counts) + np.arange(int(before[-1]) if len(before) else 0)
            nodes, amounts = self._pair_node[perm], amount[:, perm]
            done = int(np.count_nonzero(released))
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
    """Give back, per entry of `nodes`, the per-type `amounts` (types x entries)."""
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


@registered()
class Easy(Dispatcher):
    name = "easy"
    summary = "EASY backfilling: FIFO plus backfill that never delays the first blocked job's reservation"
    options = (ALLOCATOR_OPTION,)
    allocator: str

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._alloc = get_allocator(self.allocator)
        self._queue = LiveQueueCache()
        self._running = RunningCache()
        self._carry: _Carry | None = None
        self._fit_memo: dict[bool, tuple[np.ndarray, tuple[object, ...], np.ndarray]] = {}
        self._fit_plan: tuple[np.ndarray, FitPlan] | None = None
        self._fit_base: dict[bool, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._exact = False  # this call uses the exact "fits now" test

    def decide(self, snapshot: Snapshot) -> Decision:
        cache = self._queue
        new = cache.sync(snapshot.queued, snapshot.free.shape[1])
        carry, self._carry = self._carry, None
        self._exact = exact = cache.nlive >= EXACT_MIN
        if carry is not None and self._resumable(carry, snapshot):
            return self._pass(snapshot, carry.work, carry.head, carry.res, [], np.arange(new, len(cache.items)))
        work = GreedyPass(snapshot, self._alloc)
        # exact: exactly those that fit now
        may_fit = cache.units <= self._fit(work)[cache.shape] if exact else cache.may_fit(work.free_totals)
        if cache.dead:
            may_fit &= cache.live
        items = cache.items
        if not may_fit.any():  # the common case on a busy system: settled without a per-job loop
            if cache.nlive:
                self._keep_carry(snapshot, work, None, items[cache.first()].job, [])
            return Decision()
        order = cache.fifo_order()
        starts: list[Start] = []
        done: list[int] = []
        started: Started = []
        n = cache.nlive
        for pos in range(n):
            i = pos if order is None else int(order[pos])
            q = items[i]
            nodes = work.try_start(q.job) if may_fit[i] else None
            if nodes is None:
                # may_fit (at the start of the call) keeps all that may start now
                if order is None:
                    rest = np.flatnonzero(may_fit[pos + 1 :]) + (pos + 1)
                else:
                    rest = order[pos + 1 :]
                    rest = rest[may_fit[rest]]
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
        if self._exact:  # those that do not fit now never start in this pass
            cand = cand[cache.units[cand] <= self._fit(work)[cache.shape[cand]]]
        else:
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
        self._carry = _Carry(snapshot.time, snapshot.running, started, work, res, head)

    def _resumable(self, carry: _Carry, snapshot: Snapshot) -> bool:
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
            self._queue.incremental and self._queue.in_submit_order and snapshot.time >= carry.now
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
        if horizon is not None and not res.settled:
            long = cache.predicted[cand] > horizon
            if long.any():
                if not self._exact or (cache.units[cand[long]] <= self._fit(work)[cache.shape[cand[long]]]).any():
                    res.settle()
                else:  # no job outliving the bound fits now: none ever does in this pass
                    cand = cand[~long]
        if res.settled:
            horizon = None if res.shadow is None else res.shadow - now
        items = cache.items
        filtered = -1  # work.allocs when all of `cand` was last filtered
        if self._exact:  # once on all candidates (most fit now but outlive the shadow time)
            cand, filtered = self._filter(cand, work, res, horizon), work.allocs
        if not cand.size:
            return
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
            chunk = cand[lo : lo + CHUNK]
            if work.allocs != filtered:
                chunk = self._filter(chunk, work, res, horizon)
            pos = 0
            while pos < len(chunk):
                i = int(chunk[pos])
                pos += 1
                q = items[i]
                allocs = work.allocs
                in_extra = not (horizon is None or q.predicted <= horizon)
                if not in_extra:
                    nodes = work.try_start(q.job)
                elif res.settled:
                    nodes = _start_within_extra(work, res, q.job)
                else:
                    nodes = None
                if nodes is not None:
                    starts.append(Start(q.job.id, nodes))
                    done.append(i)
                    if self._exact and work.allocs == allocs + 1:
                        self._fit_started(work, res, allocs, nodes, q.job.req, in_extra)
                if work.allocs != allocs and len(chunk) - pos > REFILTER:
                    chunk, pos = self._filter(chunk[pos:], work, res, horizon), 0

    def _filter(self, cand: np.ndarray, work: GreedyPass, res: Reservation, horizon: int | None) -> np.ndarray:
        """The candidates that may still start: in exact mode, those that fit now and, if they
        outlive the shadow time, fit within the extra too (with an unsettled reservation, such
        jobs were all found not to fit now); else those whose totals are within the free totals
        (and the extra totals) and that no request that already failed covers. Only a speed-up:
        the per-job loop checks all of this again."""
        cache = self._queue
        long = cache.predicted[cand] > horizon if horizon is not None else None
        if long is not None and not long.any():
            long = None
        if self._exact:
            units, shape = cache.units[cand], cache.shape[cand]
            ok = units <= self._fit(work)[shape]
            if long is not None:
                ok &= ~long | (units <= self._fit(work, res)[shape]) if res.settled else ~long
            return cand[ok]
        tot = cache.totals[:, cand]
        ok = within(tot, work.totals)
        if long is not None:
            ok &= ~long | within(tot, res.totals) if res.settled else ~long
        if work.failed.entries:
            ok &= ~work.failed.covered(cache.units[cand], cache.req[:, cand])
        if long is not None and res.failed.entries:
            ok &= ~(long & res.failed.covered(cache.units[cand], cache.req[:, cand]))
        return cand[ok]

    def _fit_started(
        self, work: GreedyPass, res: Reservation, allocs: int, nodes: tuple[int, ...], req: tuple[int, ...],
        in_extra: bool,
    ) -> None:
        """Carry the kept `_fit`s over a start on `nodes` (the only allocator call since `allocs`),
        which took from the free amounts and, `in_extra`, from the extra: only its nodes change."""
        shapes, plan = self._queue.shapes, self._fit_plan
        if plan is None or plan[0] is not shapes:
            return
        touched, counts = np.unique(np.asarray(nodes, dtype=np.intp), return_counts=True)
        taken = counts[:, None] * np.asarray(req, dtype=np.int64)
        free_after = work.free[touched]
        free_before = free_after + taken
        for extra, memo in list(self._fit_memo.items()):
            if memo[0] is not shapes or memo[1] != (work, allocs, res if extra else None):
                continue
            if extra:
                extra_after = res.extra[touched]
                extra_before = extra_after + taken if in_extra else extra_after
                before, after = np.minimum(free_before, extra_before), np.minimum(free_after, extra_after)
            else:
                before, after = free_before, free_after
            fit = plan[1].update(memo[2], before, after)
            self._fit_memo[extra] = (shapes, (work, work.allocs, res if extra else None), fit)

    def _fit(self, work: GreedyPass, res: Reservation | None = None) -> np.ndarray:
        """Per shape of the queue cache, the units that fit in `work`'s free amounts (within the
        settled extra of `res` too, if given). Kept until the free amounts change (an allocator
        call, which also comes before any change of the extra)."""
        shapes = self._queue.shapes
        key = (work, work.allocs, res)
        memo = self._fit_memo.get(res is not None)
        if memo is not None and memo[0] is shapes and memo[1] == key:
            return memo[2]
        if self._fit_plan is None or self._fit_plan[0] is not shapes:
            self._fit_plan = (shapes, FitPlan(shapes))
        plan = self._fit_plan[1]
        free = work.free if res is None else np.minimum(work.free, res.extra)
        # from the last array counted (of the same kind), if few nodes changed since
        base = self._fit_base.get(res is not None)
        fit = None
        if base is not None and base[0] is shapes and base[1].shape == free.shape:
            changed = np.flatnonzero((free != base[1]).any(axis=1))
            if 4 * len(changed) <= len(free):
                fit = plan.update(base[2], base[1][changed], free[changed]) if len(changed) else base[2]
        if fit is None:
            fit = plan(free)
        self._fit_base[res is not None] = (shapes, free.copy() if res is None else free, fit)
        self._fit_memo[res is not None] = (shapes, key, fit)
        return fit
