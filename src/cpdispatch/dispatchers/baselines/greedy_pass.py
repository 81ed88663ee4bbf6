"""One greedy allocation pass of the baselines: start queued jobs in a given order on a working
copy of the free amounts, rejecting most jobs with integer comparisons before any per-node numpy
work (`GreedyPass`), and the node-allocation option the baselines share.
"""

from __future__ import annotations

import numpy as np

from ...allocators import ALLOCATOR_HELP, Allocator
from ...job import Job
from ...snapshot import QueuedJob, Snapshot, Start
from ..base import Option
from .queue_cache import QueueCache

#: the node-allocation option of the baselines that start jobs in queue order (FIFO, SJF, LJF, EASY)
ALLOCATOR_OPTION = Option("allocator", "first-fit", f"node allocation: {ALLOCATOR_HELP}")


class Failures:
    """Requests that failed to fit in a working array that only shrinks during a pass: any job
    asking at least as many units of at least as much of every type would fail as well."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: list[tuple[int, tuple[int, ...]]] = []

    def add(self, units: int, req: tuple[int, ...]) -> None:
        self.entries.append((units, req))

    def cover(self, units: int, req: tuple[int, ...]) -> bool:
        """Whether a job of `units` x `req` surely fails too."""
        return any(units >= u and all(a >= b for a, b in zip(req, r)) for u, r in self.entries)


class GreedyPass:
    """A working copy of the free amounts for one decision, with cheap rejections in front of numpy.

    Comparing job totals with free totals, and with requests that already failed in this pass,
    rejects most jobs without touching numpy. The copy of the free array is made on first use.
    """

    __slots__ = ("_free", "_source", "alloc", "allocs", "capacity", "failed", "free_totals", "totals")

    def __init__(self, snapshot: Snapshot, allocator: Allocator) -> None:
        self._source = snapshot.free
        self._free: np.ndarray | None = None
        self.capacity: np.ndarray = snapshot.system.capacity
        self.alloc = allocator
        free = snapshot.free
        self.free_totals = [int(free[:, k].sum()) for k in range(free.shape[1])]  # at the start
        self.totals = list(self.free_totals)  # kept up to date
        self.failed = Failures()
        self.allocs = 0  # allocator calls so far

    @property
    def free(self) -> np.ndarray:
        if self._free is None:
            self._free = self._source.copy()
        return self._free

    def may_start(self, job: Job) -> bool:
        """False when `job` surely does not fit now (totals, or a smaller failed request)."""
        units, totals = job.units, self.totals
        for k, a in enumerate(job.req):
            if a * units > totals[k]:
                return False
        return not self.failed.cover(units, job.req)

    def try_start(self, job: Job) -> tuple[int, ...] | None:
        """Allocate `job` now if it fits (updating the working copy), else None."""
        if not self.may_start(job):
            return None
        units, req, totals = job.units, job.req, self.totals
        nodes = self.alloc(self.free, self.capacity, req, units, job.one_per_node)
        self.allocs += 1
        if nodes is None:
            if not job.one_per_node:  # (a packed request that fails implies the spread one fails, not back)
                self.failed.add(units, req)
            return None
        for k, a in enumerate(req):
            totals[k] -= a * units
        return nodes


def start_in_order(
    snapshot: Snapshot, cache: QueueCache, order: np.ndarray | None, allocator: Allocator, skip: bool
) -> tuple[tuple[Start, ...], QueuedJob | None]:
    """Allocate the queued jobs at positions `order` (None: queue order), in that order; without
    `skip`, stop at the first one that does not fit (returned second, else None). With `skip`,
    jobs whose totals exceed the free totals are dropped up front (free only shrinks in a pass:
    they could never start)."""
    allocator.observe(snapshot)
    work = GreedyPass(snapshot, allocator)
    items = cache.items
    if order is None:
        order = np.arange(len(items))
    if skip:
        order = order[cache.may_fit(work.free_totals)[order]]
    starts: list[Start] = []
    done: list[int] = []
    blocked = None
    for i in order.tolist() if skip else map(int, order):
        job = items[i].job
        nodes = work.try_start(job)
        if nodes is not None:
            starts.append(Start(job.id, nodes))
            done.append(i)
        elif not skip:
            blocked = items[i]
            break
    cache.remove(done)
    return tuple(starts), blocked
