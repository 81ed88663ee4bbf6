"""Small builders for hand-checked tests."""

from __future__ import annotations

import numpy as np

from cpdispatch.job import Job
from cpdispatch.snapshot import Allocation, QueuedJob, RunningJob, Snapshot
from cpdispatch.system import NodeGroup, System
from cpdispatch.workloads.base import Workload


def system(*groups: tuple[str, int, dict[str, int]]) -> System:
    return System.build("test", [NodeGroup(g, n, res) for g, n, res in groups])


def job(
    jid: str, submit: int, runtime: int, units: int = 1, req: tuple[int, ...] = (1,),
    walltime: int | None = None, **kw: object,
) -> Job:
    return Job(jid, submit, units, req, walltime if walltime is not None else runtime, runtime, **kw)  # type: ignore[arg-type]


def workload(*jobs: Job) -> Workload:
    return Workload("test", sorted(jobs, key=lambda j: j.submit))


def snapshot(
    system: System, queued: list[tuple[Job, int]], running: tuple[RunningJob, ...] = (), now: int = 100
) -> Snapshot:
    """A snapshot of `queued` (job, predicted duration) pairs, free = capacity - running usage."""
    free = np.array(system.capacity, dtype=np.int64)
    for r in running:
        for k in r.alloc.per_unit():
            free[k] -= np.asarray(r.job.req)
    assert (free >= 0).all()
    free.setflags(write=False)
    return Snapshot(now, system, tuple(QueuedJob(j, p) for j, p in queued), tuple(running), free)


def on(*per_unit: int) -> Allocation:
    """The allocation of units on `per_unit[i]` (tests write allocations unit by unit)."""
    return Allocation.of_units(per_unit)
