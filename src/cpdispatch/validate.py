"""Independent validity check of a finished run: trust no schedule that has not been checked.

Checks, from the records alone: every job accounted for (completed, killed or rejected with a
reason; an interrupted run also has jobs running at the stop, with the end they were going to
have); no start before submission; ends consistent with run times (and walltime kills); one
node per unit; and, per node and resource type, capacity never exceeded at any time (a job
ending at t frees its resources for a job starting at t).
"""

from __future__ import annotations

import numpy as np

from .records import SimulationResult


def schedule_errors(result: SimulationResult, kill_at_walltime: bool | None = None, limit: int = 20) -> list[str]:
    """Every violation found (at most `limit` messages); an empty list means the run is valid."""
    if kill_at_walltime is None:
        kill_at_walltime = bool(result.options.get("kill_at_walltime", False))
    errors: list[str] = []
    system = result.system
    n_types = len(system.types)
    node_ev: list[int] = []
    time_ev: list[int] = []
    sign_ev: list[int] = []
    amount_ev: list[tuple[int, ...]] = []
    seen: set[str] = set()
    for rec in result.records:
        job = rec.job
        if job.id in seen:
            errors.append(f"job {job.id}: appears twice")
        seen.add(job.id)
        if rec.status == "rejected":
            if not rec.reason:
                errors.append(f"job {job.id}: rejected without a reason")
            if rec.start is not None:
                errors.append(f"job {job.id}: rejected but started")
            continue
        if rec.status not in ("completed", "killed") and not (rec.status == "running" and result.interrupted):
            errors.append(f"job {job.id}: not accounted for (status {rec.status!r})")
            continue
        if rec.start is None or rec.end is None:
            errors.append(f"job {job.id}: {rec.status} without start/end")
            continue
        if rec.start < job.submit:
            errors.append(f"job {job.id}: starts at {rec.start} before its submission at {job.submit}")
        expected = job.runtime
        if rec.status == "killed":
            if not (kill_at_walltime and job.walltime is not None and job.runtime > job.walltime):
                errors.append(f"job {job.id}: killed but should not be")
            expected = job.walltime if job.walltime is not None else job.runtime
        elif kill_at_walltime and job.walltime is not None and job.runtime > job.walltime:
            errors.append(f"job {job.id}: outlived its walltime without being killed")
        if rec.end - rec.start != expected:
            errors.append(f"job {job.id}: ran {rec.end - rec.start} s, expected {expected} s")
        alloc = rec.alloc
        if alloc.units != job.units or len(alloc.nodes) != len(alloc.counts):
            errors.append(f"job {job.id}: {alloc.units} units placed for {job.units}")
            continue
        if (len(set(alloc.nodes)) != len(alloc.nodes) or min(alloc.counts, default=1) < 1
                or not all(0 <= n < result.system.n_nodes for n in alloc.nodes)):
            errors.append(f"job {job.id}: invalid allocation {alloc} (a node repeated, empty or unknown)")
            continue
        if job.one_per_node and max(alloc.counts, default=1) > 1:
            errors.append(f"job {job.id}: its units need distinct nodes, got {alloc}")
        if rec.end == rec.start:
            continue  # uses nothing over time
        for node, k in zip(alloc.nodes, alloc.counts):
            amount = tuple(k * a for a in job.req)
            node_ev += [node, node]
            time_ev += [rec.start, rec.end]
            sign_ev += [1, -1]
            amount_ev += [amount, amount]
        if len(errors) >= limit:
            return errors[:limit]
    if node_ev:
        errors += _capacity_errors(result, node_ev, time_ev, sign_ev, amount_ev, n_types, limit - len(errors))
    return errors[:limit]


def _capacity_errors(
    result: SimulationResult,
    node_ev: list[int],
    time_ev: list[int],
    sign_ev: list[int],
    amount_ev: list[tuple[int, ...]],
    n_types: int,
    limit: int,
) -> list[str]:
    node = np.asarray(node_ev, dtype=np.int64)
    when = np.asarray(time_ev, dtype=np.int64)
    sign = np.asarray(sign_ev, dtype=np.int64)
    amount = np.asarray(amount_ev, dtype=np.int64).reshape(-1, n_types) * sign[:, None]
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
