"""Queue-order baselines FIFO, SJF, LJF (AccaSim semantics), and the greedy pass they share.

Jobs are sorted (stable, so ties keep queue order) and allocated strictly in that order without
skipping: the first job that cannot be allocated now blocks every later one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import ClassVar

import numpy as np

from ..allocators import Allocator, get_allocator
from ..job import Job
from ..snapshot import Decision, QueuedJob, Snapshot, Start
from .base import Dispatcher, Option, registered


class GreedyPass:
    """A working copy of the free amounts for one decision, with cheap rejections in front of numpy.

    Free only shrinks during a pass, so a per-unit request that failed with `u` units fails with
    `u` or more units for the rest of the pass; comparing job totals with free totals rejects most
    jobs of a long queue without touching numpy.
    """

    __slots__ = ("alloc", "capacity", "failed", "free", "totals")

    def __init__(self, snapshot: Snapshot, allocator: Allocator) -> None:
        self.free: np.ndarray = snapshot.free.copy()
        self.capacity: np.ndarray = snapshot.system.capacity
        self.alloc = allocator
        self.totals: list[int] = self.free.sum(axis=0).tolist()
        self.failed: dict[tuple[int, ...], int] = {}  # per-unit request -> fewest units that failed

    def try_start(self, job: Job) -> tuple[int, ...] | None:
        """Allocate `job` now if it fits (updating the working copy), else None."""
        units, req, totals = job.units, job.req, self.totals
        for k, a in enumerate(req):
            if a * units > totals[k]:
                return None
        if self.failed.get(req, units + 1) <= units:
            return None
        nodes = self.alloc(self.free, self.capacity, req, units)
        if nodes is None:
            self.failed[req] = units
            return None
        for k, a in enumerate(req):
            totals[k] -= a * units
        return nodes


def start_in_order(
    snapshot: Snapshot, ordered: Iterable[QueuedJob], allocator: Allocator, skip: bool
) -> tuple[Start, ...]:
    """Allocate jobs in the given order; without `skip`, stop at the first one that does not fit."""
    work = GreedyPass(snapshot, allocator)
    starts: list[Start] = []
    for q in ordered:
        nodes = work.try_start(q.job)
        if nodes is not None:
            starts.append(Start(q.job.id, nodes))
        elif not skip:
            break
    return tuple(starts)


ALLOCATOR_OPTION = Option("allocator", "first-fit", "node allocation: first-fit (AccaSim default) or best-fit")


class _QueueOrder(Dispatcher):
    """Sort the queue by `key`, then start jobs strictly in that order."""

    key: ClassVar[Callable[[QueuedJob], int] | None] = None
    options = (ALLOCATOR_OPTION,)
    allocator: str

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._alloc = get_allocator(self.allocator)

    def decide(self, snapshot: Snapshot) -> Decision:
        key = type(self).key
        ordered = snapshot.queued if key is None else sorted(snapshot.queued, key=key)
        return Decision(starts=start_in_order(snapshot, ordered, self._alloc, skip=False))


def _by_submit(q: QueuedJob) -> int:
    return q.job.submit


def _by_predicted(q: QueuedJob) -> int:
    return q.predicted


def _by_minus_predicted(q: QueuedJob) -> int:
    return -q.predicted


@registered()
class Fifo(_QueueOrder):
    name = "fifo"
    summary = "first come first served, strict order (a blocked job blocks all later ones)"
    key = _by_submit


@registered()
class Sjf(_QueueOrder):
    name = "sjf"
    summary = "shortest predicted duration first, strict order"
    key = _by_predicted


@registered()
class Ljf(_QueueOrder):
    name = "ljf"
    summary = "longest predicted duration first, strict order"
    key = _by_minus_predicted
