"""The CP dispatchers' priorities (reference notes 2.2 step 3, 3.2 step 2): which queued job the
model considers first. The priority is a job's marginal cost of waiting under the version's
objective, so a job's weight multiplies it; ties go to the shorter predicted duration (PCP'20's,
`duration_tiebreak`), then the smaller area, then queue order."""

from __future__ import annotations

from collections.abc import Callable

from ...job import Job
from ...snapshot import QueuedJob, Snapshot
from ..ewt import parse_ewt


class Priorities:
    """The order of `kind` (slowdown | ewt | ewt-shipped) with expected waiting times `ewt` (the
    option's text)."""

    def __init__(self, kind: str, ewt: str, duration_tiebreak: bool) -> None:
        self.kind = kind
        self.tiebreak = duration_tiebreak
        self._ewt = parse_ewt(ewt)
        self._max_ewt = max(self._ewt.values())

    def ewt_of(self, job: Job) -> int:
        return self._ewt.get(job.queue, self._ewt["default"])

    def key(self, now: int) -> Callable[[QueuedJob], tuple[float, ...]]:
        """The sort key at time `now`, smaller first: (-priority, [duration,] area). (One closure
        per decision: the key runs for every queued job at every decision.)"""
        kind, tiebreak, max_ewt, ewt_of = self.kind, self.tiebreak, self._max_ewt, self.ewt_of

        def key(q: QueuedJob) -> tuple[float, ...]:
            job, d = q.job, q.predicted
            wait = now - job.submit
            area = d * job.units * sum(job.req)
            if kind == "slowdown":
                first = -(wait + d) / d if d > 0 else -float(max(1, wait))
            elif kind == "ewt":
                first = -(max_ewt * (wait + 1)) / ewt_of(job)
            else:  # the shipped precedence: -(max_ewt * now - submit + 1) / ewt
                first = -(max_ewt * now - job.submit + 1) / ewt_of(job)
            first *= q.weight
            return (first, d, area) if tiebreak else (first, area)

        return key

    def order(self, snapshot: Snapshot) -> list[QueuedJob]:
        return sorted(snapshot.queued, key=self.key(snapshot.time))
