"""Small builders for hand-checked tests."""

from __future__ import annotations

from cpdispatch.job import Job
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
