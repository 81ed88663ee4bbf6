"""PBS-like priority-rule dispatcher (AccaSim's PRB, the baseline the papers compare with).

Jobs are ranked by waiting time weighted by their queue's expected waiting time (EWT), the
intended key -max_ewt * (now - submit + 1) / ewt(queue) (reference notes 1.9, 2.2: the CP'19
code has an operator-precedence slip, PRB has it right), ties broken by the smaller area
predicted * sum over types of units * per-unit amount, then by queue order. Jobs are allocated in
that order with skipping: one that does not fit now is passed over and later ones may start.
"""

from __future__ import annotations

import numpy as np

from ...allocators import ALLOCATOR_HELP, get_allocator
from ...job import Job
from ...snapshot import Decision, QueuedJob, Snapshot
from ..base import Dispatcher, Option, registered
from ..ewt import parse_ewt
from .greedy_pass import start_in_order
from .queue_cache import QueueCache


@registered()
class Pbs(Dispatcher):
    name = "pbs"
    summary = ("a simulated PBS-like priority rule (AccaSim's PRB): waiting time weighted by queue EWT, area "
               "tie-break, skipping; the papers' PBS baseline is the trace's own schedule, `recorded`")
    options = (
        Option(
            "ewt", "default=1800",
            "expected waiting time per queue, 'queue=seconds,...,default=seconds', or the preset "
            "'eurora' (debug=60,parallel=600,longpar=3600,default=1800)",
        ),
        Option("allocator", "best-fit", f"node allocation: {ALLOCATOR_HELP}"),
    )
    ewt: str
    allocator: str

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._ewt = parse_ewt(self.ewt)
        self._max_ewt = max(self._ewt.values())
        self._alloc = get_allocator(self.allocator)
        self._cache = QueueCache(self.queue_ewt)

    def queue_ewt(self, job: Job) -> int:
        return self._ewt.get(job.queue, self._ewt["default"])

    def priority(self, q: QueuedJob, now: int) -> tuple[float, int]:
        """Sort key (smaller first): weighted waiting time, then area (reference, one job)."""
        job = q.job
        ewt = self.queue_ewt(job)
        area = q.predicted * sum(job.units * a for a in job.req)
        return (-(self._max_ewt * (now - job.submit + 1)) / ewt, area)

    def order(self, cache: QueueCache, now: int) -> np.ndarray:
        """Queue positions by `priority`, ties in queue order (same floats as `priority`: int64
        products converted exactly, one correctly rounded division)."""
        key = -(self._max_ewt * (now - cache.submit + 1)) / cache.extra
        area = cache.predicted * cache.totals.sum(axis=0)
        return np.lexsort((area, key))

    def decide(self, snapshot: Snapshot) -> Decision:
        cache = self._cache
        cache.sync(snapshot.queued, snapshot.free.shape[1])
        order = self.order(cache, snapshot.time)
        return Decision(starts=start_in_order(snapshot, cache, order, self._alloc, skip=True)[0])
