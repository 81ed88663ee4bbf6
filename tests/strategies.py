"""Hypothesis strategies: random heterogeneous systems and workloads (shared by property tests)."""

from __future__ import annotations

from hypothesis import strategies as st

from cpdispatch.job import Job
from cpdispatch.system import NodeGroup, System
from cpdispatch.workloads.base import Workload

TYPES = ("core", "mem", "gpu")


@st.composite
def systems(draw: st.DrawFn, max_groups: int = 3, max_nodes: int = 4) -> System:
    groups = []
    for g in range(draw(st.integers(1, max_groups))):
        res = {
            "core": draw(st.integers(1, 8)),
            "mem": draw(st.sampled_from([0, 1024, 4096])),
            "gpu": draw(st.sampled_from([0, 0, 1, 2])),
        }
        groups.append(NodeGroup(f"g{g}", draw(st.integers(1, max_nodes)), res))
    return System.build("random", groups)


@st.composite
def workloads(draw: st.DrawFn, system: System, max_jobs: int = 25) -> Workload:
    n = draw(st.integers(1, max_jobs))
    jobs = []
    t = 0
    for i in range(n):
        t += draw(st.integers(0, 30))
        units = draw(st.integers(1, 4))
        req = (
            draw(st.integers(1, 4)),
            draw(st.sampled_from([0, 256, 1024, 2048])),
            draw(st.sampled_from([0, 0, 0, 1, 2])),
        )
        runtime = draw(st.integers(0, 120))
        walltime = draw(st.one_of(st.none(), st.integers(1, 200)))
        jobs.append(
            Job(
                id=str(i + 1), submit=t, units=units, req=tuple(req[TYPES.index(x)] for x in system.types),
                walltime=walltime, runtime=runtime, user=f"u{draw(st.integers(0, 3))}",
                name=draw(st.sampled_from(["a", "ab", "b"])), queue=draw(st.sampled_from(["q1", "q2"])),
                default_walltime=None if walltime is not None else 150,
                one_per_node=draw(st.sampled_from([False, False, True])),  # Slurm's -N: distinct nodes
            )
        )
    return Workload("random", jobs)
