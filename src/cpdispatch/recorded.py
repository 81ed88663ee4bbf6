"""The `recorded` baseline: the schedule the real system's scheduler produced, from the trace.

The papers compare their dispatchers with what the centre's own scheduler (PBS, Slurm, ...) did,
i.e. with the waiting times recorded in the trace (SWF field 3), not with a simulated priority
rule. `replay_recorded` starts every job at submit + recorded wait and keeps it for its run time
(cut at its walltime with `kill_at_walltime`), so its metrics are the trace's own.

Placement: the trace records when, not where. Each start takes nodes by best fit over what the
replay has left free. Our system description may not match the machine that ran the trace
(nodes down, reservations, a cleaned trace), so a recorded start may not fit: it is then placed
anyway (the room left first, the rest spread over the nodes able to host a unit), and counted as over capacity
in `notes["recorded"]` (reported, not refused: the recorded schedule is what it is). Jobs
without a recorded wait (-1), or that cannot fit on the empty system, are rejected with a reason.
"""

from __future__ import annotations

import heapq
import resource
import time

import numpy as np

from .allocators import best_fit
from .errors import CpdispatchError
from .records import JobRecord, SimulationResult
from .snapshot import Allocation
from .system import System, units_fitting
from .workloads.base import Workload

NAME = "recorded"
SUMMARY = ("the schedule the trace's own scheduler produced: every job at submit + recorded wait (SWF "
           "field 3), placed by best fit; starts that exceed this system are counted, not refused")


def _overcommit(free: np.ndarray, capacity: np.ndarray, req: tuple[int, ...], units: int) -> Allocation:
    """Nodes for `units` units that do not fit: first the room left on the nodes that can host a
    unit (most room first), then the rest spread evenly over those nodes, going over capacity."""
    hosts = np.flatnonzero(units_fitting(capacity, req) > 0)
    room = np.maximum(units_fitting(free[hosts], req), 0)
    order = np.argsort(-room, kind="stable")
    counts = np.zeros(hosts.size, dtype=np.int64)
    taken = np.minimum(room[order], np.maximum(0, units - (np.cumsum(room[order]) - room[order])))
    counts[order] = taken
    rest = units - int(taken.sum())
    counts += rest // hosts.size
    counts[order[: rest % hosts.size]] += 1
    used = np.flatnonzero(counts)
    free[hosts[used]] -= counts[used, None] * np.asarray(req)
    return Allocation(tuple(hosts[used].tolist()), tuple(counts[used].tolist()))


def replay_recorded(system: System, workload: Workload, kill_at_walltime: bool = False) -> SimulationResult:
    """The trace's recorded schedule on `system` (see the module docstring)."""
    t0 = time.perf_counter()
    if "load_factor" in workload.notes:
        raise CpdispatchError("the recorded schedule exists only for the trace's own arrivals (--load-factor 1)")
    records = [JobRecord(job) for job in workload.jobs]
    capacity = np.asarray(system.capacity, dtype=np.int64)
    free = capacity.copy()
    todo: list[tuple[int, int]] = []  # (recorded start, index)
    for i, rec in enumerate(records):
        job = rec.job
        if job.recorded_wait is None:
            rec.status, rec.reason = "rejected", "no recorded wait in the trace (SWF field 3 is -1)"
            continue
        fit = system.max_units(job.req, job.one_per_node)
        if job.units > fit:
            rec.status, rec.reason = "rejected", system.unfit_reason(job.units, job.req, fit, job.one_per_node)
            continue
        todo.append((job.submit + job.recorded_wait, i))
    todo.sort()
    ending: list[tuple[int, int]] = []  # (end, index)
    node_ints = tuple(range(system.n_nodes))
    over: list[str] = []
    for start, i in todo:
        while ending and ending[0][0] <= start:
            _, j = heapq.heappop(ending)
            done = records[j]
            free[list(done.alloc.nodes)] += np.outer(done.alloc.counts, done.job.req)
        rec = records[i]
        job = rec.job
        nodes = best_fit(free, capacity, job.req, job.units, one_per_node=job.one_per_node)
        if nodes is None:
            alloc = _overcommit(free, capacity, job.req, job.units)
            over.append(job.id)
        else:
            alloc = Allocation.of_units(nodes)
        # node indices as shared int objects (as the simulator keeps them): records live all run
        rec.alloc = Allocation(tuple(map(node_ints.__getitem__, alloc.nodes)), alloc.counts)
        rec.start, rec.end, rec.status = start, start + job.runtime, "completed"
        if kill_at_walltime and job.walltime is not None and job.runtime > job.walltime:
            rec.end, rec.status = start + job.walltime, "killed"
            rec.reason = f"killed at its walltime of {job.walltime} s (real run time {job.runtime} s)"
        heapq.heappush(ending, (rec.end, i))
    notes = dict(workload.notes)
    notes[NAME] = {
        "over_capacity_starts": len(over),
        "first_over_capacity": over[:10],
        "meaning": "starts at submit + recorded wait (SWF field 3); over-capacity starts are where the "
                   "recorded schedule does not fit this system description",
    }
    records += [JobRecord(r.job, status="rejected", reason=r.reason) for r in workload.rejected]
    return SimulationResult(
        system, NAME, "-", records, [], options={"kill_at_walltime": kill_at_walltime},
        skipped=list(workload.skipped), notes=notes, sim_wall_s=time.perf_counter() - t0,
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    )
