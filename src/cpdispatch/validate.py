"""Independent validity check of a finished run: trust no schedule that has not been checked.

Checks, from the records alone: every job accounted for (completed, killed or rejected with a
reason; an interrupted run also has jobs running at the stop, with the end they were going to
have); no start before submission; ends consistent with run times (and walltime kills); one
node per unit; and, per node and resource type, capacity never exceeded at any time (a job
ending at t frees its resources for a job starting at t).
"""

from __future__ import annotations

import numpy as np

from .records import JobRecord, SimulationResult


def schedule_errors(result: SimulationResult, kill_at_walltime: bool | None = None, limit: int = 20) -> list[str]:
    """Every violation found (at most `limit` messages); an empty list means the run is valid."""
    if kill_at_walltime is None:
        kill_at_walltime = bool(result.options.get("kill_at_walltime", False))
    errors: list[str] = []
    usage = _UsageEvents()
    seen: set[str] = set()
    for rec in result.records:
        if rec.job.id in seen:
            errors.append(f"job {rec.job.id}: appears twice")
        seen.add(rec.job.id)
        found, ran = _record_errors(rec, result, kill_at_walltime)
        errors += found
        if ran is None or ran[0] == ran[1]:
            continue  # nothing to check against capacity (a zero-length run uses nothing over time)
        usage.add(rec, *ran)
        if len(errors) >= limit:
            return errors[:limit]
    if usage.node:
        errors += _capacity_errors(result, usage, limit - len(errors))
    return errors[:limit]


class _UsageEvents:
    """Per node, the acquisitions (+1) and releases (-1) of the started jobs, in record order."""

    def __init__(self) -> None:
        self.node: list[int] = []
        self.time: list[int] = []
        self.sign: list[int] = []
        self.amount: list[tuple[int, ...]] = []

    def add(self, rec: JobRecord, start: int, end: int) -> None:
        for node, k in zip(rec.alloc.nodes, rec.alloc.counts):
            amount = tuple(k * a for a in rec.job.req)
            self.node += [node, node]
            self.time += [start, end]
            self.sign += [1, -1]
            self.amount += [amount, amount]


def _record_errors(
    rec: JobRecord, result: SimulationResult, kill_at_walltime: bool
) -> tuple[list[str], tuple[int, int] | None]:
    """One record's violations, and its (start, end) when it ran on a valid allocation (so its
    usage counts against capacity)."""
    job = rec.job
    if rec.status == "rejected":
        errors = [] if rec.reason else [f"job {job.id}: rejected without a reason"]
        if rec.start is not None:
            errors.append(f"job {job.id}: rejected but started")
        return errors, None
    if rec.status not in ("completed", "killed") and not (rec.status == "running" and result.interrupted):
        return [f"job {job.id}: not accounted for (status {rec.status!r})"], None
    if rec.start is None or rec.end is None:
        return [f"job {job.id}: {rec.status} without start/end"], None
    errors = _timing_errors(rec, rec.start, rec.end, kill_at_walltime)
    alloc = rec.alloc
    if alloc.units != job.units or len(alloc.nodes) != len(alloc.counts):
        return [*errors, f"job {job.id}: {alloc.units} units placed for {job.units}"], None
    if (len(set(alloc.nodes)) != len(alloc.nodes) or min(alloc.counts, default=1) < 1
            or not all(0 <= n < result.system.n_nodes for n in alloc.nodes)):
        return [*errors, f"job {job.id}: invalid allocation {alloc} (a node repeated, empty or unknown)"], None
    if job.one_per_node and max(alloc.counts, default=1) > 1:
        errors.append(f"job {job.id}: its units need distinct nodes, got {alloc}")
    return errors, (rec.start, rec.end)


def _timing_errors(rec: JobRecord, start: int, end: int, kill_at_walltime: bool) -> list[str]:
    """A started record's start against its submission, and its length against its run time (or
    walltime, when killed there)."""
    job = rec.job
    errors: list[str] = []
    if start < job.submit:
        errors.append(f"job {job.id}: starts at {start} before its submission at {job.submit}")
    expected = job.runtime
    outlived = kill_at_walltime and job.walltime is not None and job.runtime > job.walltime
    if rec.status == "killed":
        if not outlived:
            errors.append(f"job {job.id}: killed but should not be")
        expected = job.walltime if job.walltime is not None else job.runtime
    elif outlived:
        errors.append(f"job {job.id}: outlived its walltime without being killed")
    if end - start != expected:
        errors.append(f"job {job.id}: ran {end - start} s, expected {expected} s")
    return errors


def _capacity_errors(result: SimulationResult, events: _UsageEvents, limit: int) -> list[str]:
    n_types = len(result.system.types)
    node = np.asarray(events.node, dtype=np.int64)
    when = np.asarray(events.time, dtype=np.int64)
    sign = np.asarray(events.sign, dtype=np.int64)
    amount = np.asarray(events.amount, dtype=np.int64).reshape(-1, n_types) * sign[:, None]
    # per node, in time order, releases before acquisitions at equal times
    order = np.lexsort((sign, when, node))
    node, when, amount = node[order], when[order], amount[order]
    usage = np.cumsum(amount, axis=0)
    # cumulative sums run across nodes: subtract the total of the nodes before each segment
    new_node = np.r_[True, node[1:] != node[:-1]]
    first = np.flatnonzero(new_node)
    seg_offset = np.zeros((len(first), n_types), dtype=np.int64)
    seg_offset[1:] = usage[first[1:] - 1]
    used = usage - seg_offset[np.cumsum(new_node) - 1]
    cap = result.system.capacity[node]
    over = np.argwhere(used > cap)
    errors = []
    for i, t in over[:limit]:
        errors.append(
            f"node {result.system.node_names[node[i]]}: {result.system.types[t]} used {used[i, t]} > "
            f"capacity {cap[i, t]} at t={when[i]}"
        )
    return errors
