"""EASY backfilling with a reservation protected at node level.

FIFO until the first job that does not fit (the head). The head gets a reservation: the shadow
time is the first predicted end (of a running job, or of a job started in this pass; never before
now + 1, since a job running now has not ended) at which the head fits on the nodes, and at that
time specific nodes/amounts are set aside for it; what is left there is the "extra". A later job
backfills now, in queue order, if it fits now and either ends (now + predicted) by the shadow time
or also fits within the extra, so it can never delay the head's reservation. AccaSim master does
not protect the reservation (reference notes 1.9); this does.

Speed: the simulator calls this at every event with queues of hundreds to tens of thousands of
jobs and hundreds of running jobs. The pass itself is compiled (`easy_kernel`); queue and running
jobs live in numpy arrays kept across calls (they follow the simulator's `LiveView`s, matched by
object identity, so they never change a decision; started and ended jobs are only marked dead),
so a call converts only what changed since the last one. Measured: HPC2N (202,871 jobs) in 10 s,
RICC (447,794) in 43 s, about 0.02 and 0.06 ms per call (docs/results.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import ClassVar

import numpy as np

from ...allocators import get_allocator
from ...snapshot import Decision, LiveView, RunningJob, Snapshot, Start
from ...system import System
from ..base import Dispatcher, Option, registered
from .queue_cache import kernel_order
from .queue_order import ALLOCATOR_OPTION, LiveQueueCache


class RunningCache:
    """Running jobs as arrays kept across calls, one entry per job (`live` ones, and dead ones not
    yet compacted away): predicted end, per-unit request (jobs x types), its allocation
    ("pairs": node and count, `pairs` of them from `first`), and
    the entries in order of predicted end (`by_end`: sorted up to `sorted[0]`; the compiled pass
    inserts the newer ones, so no call sorts all running jobs).

    It follows the simulator's `LiveView` of the running jobs: new jobs are appended, ended ones
    (found by identity) marked dead, the arrays compacted once many are dead (amortised O(1) per
    job); a plain tuple is converted whole. The arrays are a function of the running jobs alone.
    """

    #: Compact once more than MIN_COMPACT + live / 2 entries are dead.
    MIN_COMPACT = 16

    def __init__(self) -> None:
        self._reset(0)

    def _reset(self, ntypes: int) -> None:
        self.ntypes = ntypes
        self.items: list[RunningJob] = []  # per entry, dead ones included (keeps their ids unique)
        self._column: dict[int, int] = {}  # id of a live job -> its entry
        self.n = self.n_pairs = 0
        self._end = np.zeros(0, dtype=np.int64)
        self._req = np.zeros((0, ntypes), dtype=np.int64)
        self._first = np.zeros(0, dtype=np.int64)
        self._pairs = np.zeros(0, dtype=np.int64)
        self._live = np.zeros(0, dtype=bool)
        self._by_end = np.zeros(0, dtype=np.int64)
        self.sorted = np.zeros(1, dtype=np.int64)
        self._node = np.zeros(0, dtype=np.int64)
        self._count = np.zeros(0, dtype=np.int64)
        self._added: list[RunningJob] | None = None  # the LiveView lists followed, and how far
        self._n_added = self._n_removed = 0

    def arrays(self) -> tuple[np.ndarray, ...]:
        """What the compiled pass reads: end, live, req, first, pairs, pair node, pair count,
        by_end, sorted."""
        n, p = self.n, self.n_pairs
        return (
            self._end[:n], self._live[:n], self._req[:n], self._first[:n], self._pairs[:n], self._node[:p],
            self._count[:p], self._by_end[:n], self.sorted,
        )

    def sync(self, running: Sequence[RunningJob], ntypes: int) -> None:
        view = running if isinstance(running, LiveView) else None
        if (
            view is not None and ntypes == self.ntypes and view.added is self._added
            and view.n_added >= self._n_added and view.n_removed >= self._n_removed
        ):
            self._append(view.added[self._n_added : view.n_added])
            column = self._column
            for r in view.removed[self._n_removed : view.n_removed]:
                self._live[column.pop(id(r))] = False
            if self.n - len(column) > self.MIN_COMPACT + len(column) // 2:
                self._compact()
        else:
            self._reset(ntypes)
            self._append(list(running))
            self._sort()
        if view is not None:
            self._added, self._n_added, self._n_removed = view.added, view.n_added, view.n_removed

    def _append(self, new: list[RunningJob]) -> None:
        if not new:
            return
        k, n, m = len(new), self.n, self.n_pairs
        node: Sequence[int]
        count: Sequence[int]
        if k == 1:  # one start (the usual call)
            node, count = new[0].alloc.nodes, new[0].alloc.counts
        else:
            pairs = [len(r.alloc.nodes) for r in new]
            node = list(chain.from_iterable(r.alloc.nodes for r in new))
            count = list(chain.from_iterable(r.alloc.counts for r in new))
        p = len(node)
        if n + k > len(self._end):
            cap = max(2 * (n + k), 64)
            self._end, self._first, self._pairs, self._live, self._by_end = (
                _grown(a, cap) for a in (self._end, self._first, self._pairs, self._live, self._by_end)
            )
            self._req = _grown(self._req, cap)
        if m + p > len(self._node):
            cap = max(2 * (m + p), 256)
            self._node, self._count = _grown(self._node, cap), _grown(self._count, cap)
        if k == 1:  # scalar stores: several times cheaper than converting one-item lists
            r = new[0]
            self._end[n], self._req[n], self._pairs[n], self._first[n] = r.start + r.predicted, r.job.req, p, m
        else:
            self._end[n : n + k] = [r.start + r.predicted for r in new]
            self._req[n : n + k] = [r.job.req for r in new]
            self._pairs[n : n + k] = pairs
            self._first[n : n + k] = m + np.cumsum(pairs) - pairs
        self._live[n : n + k] = True
        self._node[m : m + p], self._count[m : m + p] = node, count
        for i, r in enumerate(new, n):
            self._column[id(r)] = i
        self.items.extend(new)
        self.n, self.n_pairs = n + k, m + p

    def _compact(self) -> None:
        n = self.n
        live = self._live[:n]
        keep = np.flatnonzero(live)
        pmask = np.repeat(live, self._pairs[:n])
        k, p = len(keep), int(np.count_nonzero(pmask))
        self._end[:k], self._req[:k], self._pairs[:k] = self._end[keep], self._req[keep], self._pairs[keep]
        self._first[:k] = np.cumsum(self._pairs[:k]) - self._pairs[:k]
        self._node[:p], self._count[:p] = self._node[: self.n_pairs][pmask], self._count[: self.n_pairs][pmask]
        self._live[:k] = True
        self.items = [self.items[i] for i in keep.tolist()]
        self._column = {id(r): i for i, r in enumerate(self.items)}
        self.n, self.n_pairs = k, p
        self._sort()

    def _sort(self) -> None:
        self._by_end[: self.n] = np.argsort(self._end[: self.n], kind="stable")
        self.sorted[0] = self.n


def _grown(a: np.ndarray, cap: int) -> np.ndarray:
    """`a` copied into a buffer of `cap` entries along the first axis."""
    out = np.zeros((cap, *a.shape[1:]), dtype=a.dtype)
    out[: len(a)] = a
    return out


class CompiledPass(Dispatcher):
    """What the compiled backfilling passes share: the queue and running jobs as arrays kept
    across calls, the system's capacity and the allocator's weights in the kernels' types."""

    options: ClassVar[tuple[Option, ...]] = (ALLOCATOR_OPTION,)
    allocator: str

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._alloc = get_allocator(self.allocator)  # an unknown name is an error here
        self._best = self.allocator != "first-fit"  # the kernels know first fit and (weighted) best fit
        self._queue = LiveQueueCache()
        self._running = RunningCache()
        self._capacity: tuple[System, np.ndarray] | None = None
        self._zeros = np.zeros(0)

    def _sync(self, snapshot: Snapshot) -> bool:
        """Bring the queue and running caches up to date; False when no job is queued."""
        ntypes = snapshot.free.shape[1]
        self._queue.sync(snapshot.queued, ntypes)
        if not self._queue.nlive:
            return False
        self._running.sync(snapshot.running, ntypes)
        return True

    def _weights(self, snapshot: Snapshot) -> np.ndarray:
        """The allocator's scarcity weights for this snapshot (all zero for plain first/best fit)."""
        self._alloc.observe(snapshot)
        weights = self._alloc.weights
        return self._no_weights(snapshot.free.shape[1]) if weights is None else weights.astype(np.float64)

    def _no_weights(self, ntypes: int) -> np.ndarray:
        """All-zero scarcity weights (plain first or best fit), made once, not per call."""
        if len(self._zeros) != ntypes:
            self._zeros = np.zeros(ntypes)
        return self._zeros

    def _capacity_of(self, system: System) -> np.ndarray:
        """The system's capacity as a writable contiguous array (one compiled kernel for all)."""
        if self._capacity is None or self._capacity[0] is not system:
            self._capacity = (system, np.array(system.capacity, dtype=np.int64, order="C"))
        return self._capacity[1]

    @staticmethod
    def _starts(cache: LiveQueueCache, positions: np.ndarray, nodes: np.ndarray, offsets: np.ndarray) -> Decision:
        """The kernel's started positions as a decision, and forgotten by the queue cache."""
        if not len(positions):
            return Decision()
        items, flat, off, done = cache.items, nodes.tolist(), offsets.tolist(), positions.tolist()
        starts = tuple(Start(items[i].job.id, tuple(flat[off[k] : off[k + 1]])) for k, i in enumerate(done))
        cache.remove(done)
        return Decision(starts=starts)


@registered()
class Easy(CompiledPass):
    name = "easy"
    summary = "EASY backfilling: FIFO plus backfill that never delays the first blocked job's reservation"
    shortest_first = False  # the order of the backfill candidates: queue order (EASY)

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        from .easy_kernel import easy_pass  # here: numba (~150 MB, 0.2 s) only for runs that use it

        self._pass = easy_pass
        # per shape of the queue cache, the units that fit in `_last_free` (where `_known`), kept
        # across calls for the kernel
        self._fit = np.zeros(0, dtype=np.int64)
        self._known = np.zeros(0, dtype=bool)
        self._last_free = np.zeros((0, 0), dtype=np.int64)
        self._shape_ids: object = None  # the queue cache's numbering of shapes they use

    def decide(self, snapshot: Snapshot) -> Decision:
        if not self._sync(snapshot):
            return Decision()
        cache, running = self._queue, self._running
        order = None if cache.in_submit_order else cache.fifo_order()
        free = snapshot.free.copy()
        self._keep_fits(free, cache)
        positions, nodes, offsets = self._pass(
            free, self._capacity_of(snapshot.system), self._best, self._weights(snapshot), snapshot.time,
            cache.live, kernel_order(order), cache.units, cache.predicted, cache.shape,
            cache.shapes, cache.shape_live, self._fit, self._known, self._last_free,
            running.arrays(), self.shortest_first,
        )
        return self._starts(cache, positions, nodes, offsets)

    def _keep_fits(self, free: np.ndarray, cache: LiveQueueCache) -> None:
        """Size the kept fits for the cache's shapes; forget them if the shapes were renumbered or
        the free array changed size (they stay valid on any other change of the free amounts:
        the kernel counts them again on the nodes that differ)."""
        if self._last_free.shape != free.shape or self._shape_ids is not cache.shape_ids:
            self._fit, self._known = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
            self._last_free = free.copy()
            self._shape_ids = cache.shape_ids
        n = cache.shapes.shape[1]
        if len(self._fit) < n:
            grow = max(n, 2 * len(self._fit)) - len(self._fit)
            self._fit = np.concatenate((self._fit, np.zeros(grow, dtype=np.int64)))
            self._known = np.concatenate((self._known, np.zeros(grow, dtype=bool)))



@registered()
class EasySjf(Easy):
    """EASY++'s backfilling (Tsafrir, Etsion & Feitelson 2007): the same reservation for the head,
    but the candidates behind it are tried shortest predicted first, so a good prediction lets
    more short jobs through before long ones take the holes."""

    name = "easy-sjf"
    summary = "EASY backfilling whose candidates are tried shortest predicted first (EASY++'s order)"
    shortest_first = True
