"""Queue-order baselines FIFO, SJF, LJF (AccaSim semantics).

Jobs are sorted (stable, so ties keep queue order) and allocated strictly in that order without
skipping: the first job that cannot be allocated now blocks every later one. The queue's numbers
come from `LiveQueueCache`, the allocation from `greedy_pass.start_in_order`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

import numpy as np

from ...allocators import get_allocator
from ...snapshot import Decision, QueuedJob, Snapshot
from ..base import Dispatcher, registered
from .greedy_pass import ALLOCATOR_OPTION, start_in_order
from .queue_cache import LiveQueueCache


class _QueueOrder(Dispatcher):
    """Sort the queue by `key` (live positions of the cached arrays), then start jobs strictly in
    that order.

    Most calls find the same first job blocked on the same free capacity (new jobs arrived
    behind it): the decision is then empty without a pass, since whether a job fits depends only
    on the free amounts (every allocator finds a fit when one exists).
    """

    key: ClassVar[Callable[[LiveQueueCache], np.ndarray | None]]
    options = (ALLOCATOR_OPTION,)
    allocator: str

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._alloc = get_allocator(self.allocator)
        self._cache = LiveQueueCache()
        self._blocked: tuple[QueuedJob, np.ndarray] | None = None  # first job in order, free it failed on

    def decide(self, snapshot: Snapshot) -> Decision:
        cache = self._cache
        cache.sync(snapshot.queued, snapshot.free.shape[1])
        if not cache.nlive:
            return Decision(())
        order = type(self).key(cache)
        first = cache.items[0 if order is None else int(order[0])]
        blocked = self._blocked
        if blocked is not None and blocked[0] is first and np.array_equal(blocked[1], snapshot.free):
            self._alloc.observe(snapshot)
            return Decision(())
        starts, stop = start_in_order(snapshot, cache, order, self._alloc, skip=False)
        # remembered only when the first job failed on the snapshot's own free amounts
        self._blocked = (stop, snapshot.free) if stop is not None and not starts else None
        return Decision(starts=starts)


def _fifo(c: LiveQueueCache) -> np.ndarray | None:
    return c.fifo_order()


def _by_predicted(c: LiveQueueCache, sign: int) -> np.ndarray:
    live = np.flatnonzero(c.live)
    return live[np.argsort(sign * c.predicted[live], kind="stable")]


def _sjf(c: LiveQueueCache) -> np.ndarray:
    return _by_predicted(c, 1)


def _ljf(c: LiveQueueCache) -> np.ndarray:
    return _by_predicted(c, -1)


@registered()
class Fifo(_QueueOrder):
    name = "fifo"
    summary = "first come first served, strict order (a blocked job blocks all later ones)"
    key = _fifo


@registered()
class Sjf(_QueueOrder):
    name = "sjf"
    summary = "shortest predicted duration first, strict order"
    key = _sjf


@registered()
class Ljf(_QueueOrder):
    name = "ljf"
    summary = "longest predicted duration first, strict order"
    key = _ljf
