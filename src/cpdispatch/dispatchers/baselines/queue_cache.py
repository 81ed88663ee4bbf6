"""The queue's per-job numbers kept across calls, for the baselines (FIFO, SJF, LJF, EASY, PBS).

Speed matters (the simulator calls a dispatcher at every event, with queues of thousands of jobs),
so per-job numbers live in numpy arrays that follow the queue: between two calls only the jobs
that arrived are converted, and the jobs that started are dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain

import numpy as np

from ...job import Job
from ...snapshot import LiveView, QueuedJob


def shape_key(job: Job) -> tuple[int, ...]:
    """A job's column of `QueueCache.shapes`: its per-unit request, then its most units per node."""
    return (*job.req, int(job.one_per_node))


class QueueCache:
    """The queue's per-job numbers as an int64 matrix with one column per job, following `items`.

    Rows: submit, predicted, units, an optional extra number (`column(job)`, e.g. the queue's EWT),
    the job's shape (an id of its per-unit request, numbered at first sight: `shapes[:, id]`), then
    units * per-unit request per type (one contiguous row per quantity: per-row numpy calls are
    several times cheaper than reductions across a short axis). Between two calls of one
    simulation the queue is the previous one minus the jobs just started plus new jobs at the end;
    `sync` verifies that (by object identity, falling back to equality) and converts only the new
    jobs, else it rebuilds. Columns are a function of the queued jobs alone, so the cache never
    changes a decision.
    """

    SUBMIT, PREDICTED, UNITS, EXTRA, SHAPE, TOTALS = range(6)

    def __init__(self, column: Callable[[Job], int] | None = None) -> None:
        self.column = column
        self.items: tuple[QueuedJob, ...] = ()
        self.ntypes = 0
        self.data = np.zeros((self.TOTALS, 0), dtype=np.int64)
        self.in_submit_order = True
        self.shape_ids: dict[tuple[int, ...], int] = {}  # a new dict whenever shapes are renumbered
        self.shapes = np.zeros((0, 0), dtype=np.int64)  # (types + 1 x shapes) per-unit requests, then
        # the most units per node (0: no limit; 1: a job whose units need distinct nodes)

    @property
    def submit(self) -> np.ndarray:
        return self.data[self.SUBMIT]

    @property
    def predicted(self) -> np.ndarray:
        return self.data[self.PREDICTED]

    @property
    def units(self) -> np.ndarray:
        return self.data[self.UNITS]

    @property
    def extra(self) -> np.ndarray:
        return self.data[self.EXTRA]

    @property
    def shape(self) -> np.ndarray:
        return self.data[self.SHAPE]

    @property
    def totals(self) -> np.ndarray:
        """(types x jobs) units * per-unit request."""
        return self.data[self.TOTALS : self.TOTALS + self.ntypes]

    def sync(self, queued: Sequence[QueuedJob], ntypes: int) -> int:
        """Align with `queued`; returns how many leading jobs were kept from the last call."""
        if isinstance(queued, LiveView):
            queued = queued.items()
        assert isinstance(queued, tuple)
        old = self.items
        m = len(old)
        if not (m <= len(queued) and self.ntypes == ntypes and (m == 0 or (queued[0] is old[0] and queued[:m] == old))):
            m = 0
            self._reset(ntypes)
        if m == len(queued):
            return m
        new = self._convert(queued[m:], int(self.data[self.SUBMIT, m - 1]) if m else None)
        self.items = queued
        self.data = np.concatenate((self.data, new), axis=1) if m else np.ascontiguousarray(new)
        return m

    def _reset(self, ntypes: int) -> None:
        if self.ntypes != ntypes:
            self.shape_ids, self.shapes = {}, np.zeros((ntypes + 1, 0), dtype=np.int64)
        self.ntypes = ntypes
        self.data = np.zeros((self.TOTALS + ntypes, 0), dtype=np.int64)
        self.in_submit_order = True

    def _convert(self, queued: Sequence[QueuedJob], last_submit: int | None) -> np.ndarray:
        """The columns of `queued` (new jobs after a last one submitted at `last_submit`)."""
        ntypes = self.ntypes
        ids = self.shape_ids
        known = len(ids)
        rows = [self._row(q, ids.setdefault(shape_key(q.job), len(ids))) for q in queued]
        if len(ids) > known:
            fresh = np.array(list(ids)[known:], dtype=np.int64).reshape(len(ids) - known, ntypes + 1).T
            self.shapes = np.concatenate((self.shapes, fresh), axis=1)
        new = np.array(rows, dtype=np.int64).reshape(len(rows), self.TOTALS + ntypes).T
        if self.in_submit_order:
            sub = new[self.SUBMIT]
            self.in_submit_order = bool((sub[1:] >= sub[:-1]).all()) and (
                last_submit is None or int(sub[0]) >= last_submit
            )
        return new

    def _row(self, q: QueuedJob, shape: int) -> tuple[int, ...]:
        """The column of one queued job (rows as in the class docstring)."""
        j, col = q.job, self.column
        return (j.submit, q.predicted, j.units, col(j) if col else 0, shape, *[j.units * a for a in j.req])

    def remove(self, positions: list[int]) -> None:
        """Forget the jobs at `positions` (just started): what the next queue should begin with."""
        if not positions:
            return
        cut = sorted(positions)
        items = self.items
        parts = [items[a + 1 : b] for a, b in zip([-1, *cut], [*cut, len(items)])]
        self.items = tuple(chain.from_iterable(parts))
        self.data = np.delete(self.data, cut, axis=1)  # removing jobs keeps submit order

    def fifo_order(self) -> np.ndarray | None:
        """Positions sorted by submit time, ties in queue order; None when that is queue order."""
        if self.in_submit_order:
            return None
        return np.argsort(self.submit, kind="stable")

    def may_fit(self, free_totals: list[int], positions: np.ndarray | None = None) -> np.ndarray:
        """Whether each job's totals are within `free_totals` (necessary to fit now): for every
        position of the queue, or for the given ones."""
        return within(self.totals if positions is None else self.totals[:, positions], free_totals)


class LiveQueueCache(QueueCache):
    """A QueueCache for one dispatcher that follows the simulator's queue without O(queue) work
    per call: started jobs are only marked dead (`live`), the columns compacted once most are
    dead; the columns live in a buffer grown by doubling; and a `LiveView` tells which jobs
    arrived and left since the last call (a tuple is compared as QueueCache does).

    `items` is aligned with the columns, dead ones included; `shape_live` counts the live jobs
    of each shape (`shapes` column). `sync` returns the first new column: when the queue is the
    last one minus the jobs `remove`d plus new jobs at the end; otherwise everything was rebuilt
    (and 0 is returned).
    """

    #: Compact once more than MIN_COMPACT + nlive / 8 columns are dead (amortised O(1) per job).
    MIN_COMPACT = 16

    def __init__(self, column: Callable[[Job], int] | None = None) -> None:
        super().__init__(column)
        self.items: list[QueuedJob] = []  # type: ignore[assignment]
        self.live = np.ones(0, dtype=bool)
        self.nlive = 0
        self._buf = self.data
        self._live_buf = self.live
        self._added: list[QueuedJob] | None = None  # the LiveView lists followed, and how far
        self._n_added = self._n_removed = 0
        self._gone: list[QueuedJob] = []  # removed since the last sync
        self.shape_live = np.zeros(0, dtype=np.int64)  # live jobs per shape id

    @property
    def dead(self) -> int:
        return len(self.items) - self.nlive

    def sync(self, queued: Sequence[QueuedJob], ntypes: int) -> int:
        view = queued if isinstance(queued, LiveView) else None
        incremental = False
        if self.ntypes == ntypes:
            if view is not None:
                if view.added is self._added and view.n_added >= self._n_added and view.n_removed >= self._n_removed:
                    gone, expect = view.removed[self._n_removed : view.n_removed], self._gone
                    if len(gone) == len(expect) and all(a is b for a, b in zip(gone, expect)):
                        incremental = True
                        new: Sequence[QueuedJob] = view.added[self._n_added : view.n_added]
            else:
                self._compact()
                old = self.items
                m = len(old)
                if m <= len(queued) and (m == 0 or (queued[0] is old[0] and tuple(queued[:m]) == tuple(old))):
                    incremental = True
                    new = queued[m:]
        self._gone = []
        if view is not None:
            self._added, self._n_added, self._n_removed = view.added, view.n_added, view.n_removed
        else:
            self._added = None
        first = len(self.items)
        if not incremental:
            self._reset(ntypes)
            self.items, self.nlive, first = [], 0, 0
            self._buf, self._live_buf = self.data, np.ones(0, dtype=bool)
            self.shape_live = np.zeros(len(self.shape_ids), dtype=np.int64)
            new = tuple(queued)
        if new:
            self._append(new)
        return first

    def _append(self, new: Sequence[QueuedJob]) -> None:
        n, k = len(self.items), len(new)
        if k == 1 and n < self._buf.shape[1] and shape_key(new[0].job) in self.shape_ids:  # one submission
            q = new[0]
            shape = self.shape_ids[shape_key(q.job)]
            self._buf[:, n] = self._row(q, shape)
            self.shape_live[shape] += 1
            if self.in_submit_order and n:
                self.in_submit_order = q.job.submit >= int(self._buf[self.SUBMIT, n - 1])
            self._live_buf[n] = True
            self.items.append(q)
            self.nlive += 1
            self._views(n + 1)
            return
        cols = self._convert(new, int(self._buf[self.SUBMIT, n - 1]) if n else None)
        if n + k > self._buf.shape[1]:
            cap = max(2 * (n + k), 64)
            buf = np.empty((cols.shape[0], cap), dtype=np.int64)
            buf[:, :n] = self._buf[:, :n]
            live = np.ones(cap, dtype=bool)
            live[:n] = self._live_buf[:n]
            self._buf, self._live_buf = buf, live
        self._buf[:, n : n + k] = cols
        self._live_buf[n : n + k] = True
        count = np.bincount(cols[self.SHAPE], minlength=len(self.shape_ids))
        count[: len(self.shape_live)] += self.shape_live
        self.shape_live = count
        self.items.extend(new)
        self.nlive += k
        self._views(n + k)

    def _views(self, n: int) -> None:
        self.data, self.live = self._buf[:, :n], self._live_buf[:n]

    def remove(self, positions: list[int]) -> None:
        """Mark the jobs at `positions` (just started, in that order) dead."""
        if not positions:
            return
        live, count, shape = self.live, self.shape_live, self.shape
        for i in positions:  # usually one or two: scalar stores beat fancy indexing
            live[i] = False
            count[shape[i]] -= 1
        self.nlive -= len(positions)
        self._gone.extend(self.items[i] for i in positions)
        if self.dead > self.MIN_COMPACT + self.nlive // 8:
            self._compact()

    def _compact(self) -> None:
        if not self.dead:
            return
        keep = np.flatnonzero(self.live)
        n = len(keep)
        self._buf[:, :n] = self._buf[:, keep]
        self._live_buf[:n] = True
        self.items = [self.items[i] for i in keep.tolist()]
        self._views(n)

    def fifo_order(self) -> np.ndarray | None:
        """Live positions sorted by submit time, ties in queue order; None when that is all
        positions in order."""
        if self.in_submit_order:
            return None if not self.dead else np.flatnonzero(self.live)
        live = np.flatnonzero(self.live)
        return live[np.argsort(self.submit[live], kind="stable")]


_IN_ORDER = np.zeros(0, dtype=np.int64)


def kernel_order(order: np.ndarray | None) -> np.ndarray:
    """`order` as the compiled backfilling kernels take it: an empty array for queue order (numba
    takes no None)."""
    return _IN_ORDER if order is None else order


def within(totals: np.ndarray, limit: list[int]) -> np.ndarray:
    """Per column of a (types x jobs) array, whether every type is within `limit`."""
    if not limit:
        return np.ones(totals.shape[1], dtype=bool)
    ok = totals[0] <= limit[0]
    for k in range(1, len(limit)):
        ok &= totals[k] <= limit[k]
    return ok
