"""Which queued jobs enter a CP dispatcher's model, and the `Instance` they make (reference notes
2.2 step 4). Two selections: the CP'19 versions' and PCP'20's "fit now" (jobs that fit in the free
amounts, plus `blocked` ones that do not, as future starts), and the base versions' "queue" (the
first jobs in queue order, fitting or not)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...job import Job
from ...snapshot import QueuedJob, Snapshot
from .fitting import eligible
from .instance import CpJob, CpRunning, Instance


def select(snapshot: Snapshot, ordered: list[QueuedJob], selection: str, length: int, blocked: int
           ) -> list[QueuedJob]:
    """The model's jobs, in priority order: with fit-now selection, up to `length` jobs that fit
    now, then the first `blocked` that do not (none when no job fits now); with queue selection,
    the first `length` in queue order."""
    if selection == "queue":
        first = {q.job.id for q in snapshot.queued[:length]}
        return [q for q in ordered if q.job.id in first]
    out: list[QueuedJob] = []
    waiting = blocked
    fitting = 0
    for q, fits in zip(ordered, eligible(snapshot.free, [q.job for q in ordered])):
        if fits and fitting < length:
            fitting += 1
            out.append(q)
        elif not fits and waiting > 0:
            waiting -= 1
            out.append(q)
        if fitting == length and waiting == 0:
            break
    return out if fitting else []


def instance_of(snapshot: Snapshot, selected: list[QueuedJob], *, clamp: bool, ewt_of: Callable[[Job], int],
                weights: np.ndarray | None, postpone_rest: bool) -> Instance:
    """The selected jobs with the running ones, times relative to now; durations and remaining
    times clamped to >= 1 unless `clamp` is off (the versions 1); with `postpone_rest` (HCP base)
    the rest of the queue too, to be fixed at the end of the horizon."""
    now = snapshot.time

    def at_least_one(x: int) -> int:
        return max(1, x) if clamp else x

    def cp_job(q: QueuedJob) -> CpJob:
        return CpJob(q.job.id, q.job.units, q.job.req, at_least_one(q.predicted), now - q.job.submit,
                     ewt_of(q.job), q.job.queue, q.job.one_per_node, q.weight)

    jobs = tuple(cp_job(q) for q in selected)
    chosen = {j.id for j in jobs}
    postponed = tuple(cp_job(q) for q in snapshot.queued if q.job.id not in chosen) if postpone_rest else ()
    running = tuple(
        CpRunning(r.job.id, r.job.units, r.job.req, at_least_one(r.predicted_end - now), r.alloc, now - r.start)
        for r in snapshot.running
    )
    horizon = max(1, sum(r.remaining for r in running) + sum(j.duration for j in jobs + postponed))
    return Instance(now, snapshot.system, jobs, running, snapshot.free, horizon, weights, postponed)
