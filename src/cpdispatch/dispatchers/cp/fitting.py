"""What fits now, for the CP front end: the fit-now test of the selection, the fast path's
placement of the whole queue, and the checked extraction of the jobs a plan starts now."""

from __future__ import annotations

import numpy as np

from ...allocators import best_fit, take
from ...job import Job
from ...snapshot import QueuedJob, Snapshot, Start
from ...system import units_fitting
from .instance import Instance, Plan


def eligible(free: np.ndarray, jobs: list[Job]) -> list[bool]:
    """Fit-now test (notes 2.2 step 2): summed over nodes, the units fitting in the current free
    amounts reach the job's units. One numpy pass per distinct per-unit request."""
    totals = free.sum(axis=0).tolist()
    out = [False] * len(jobs)
    groups: dict[tuple[tuple[int, ...], bool], list[int]] = {}
    for i, j in enumerate(jobs):
        groups.setdefault((j.req, j.one_per_node), []).append(i)
    for (req, one), members in groups.items():
        most = min((t // a for a, t in zip(req, totals) if a > 0), default=None)  # units the totals hold
        if most is not None:
            members = [i for i in members if jobs[i].units <= most]
            if not members:
                continue
        units = np.array([jobs[i].units for i in members], dtype=np.int64)
        fit = np.sort(np.minimum(units_fitting(free, req, one), int(units.max())))
        cum = np.concatenate(([0], np.cumsum(fit)))
        below = np.searchsorted(fit, units, side="left")  # nodes where fewer than `units` fit
        room = cum[below] + units * (len(fit) - below)  # sum over nodes of min(fit, units)
        for i, r, u in zip(members, room.tolist(), units.tolist()):
            out[i] = r >= u
    return out


def fast_path(
    snapshot: Snapshot, ordered: list[QueuedJob], weights: np.ndarray | None = None
) -> tuple[Start, ...] | None:
    """Starts for the whole queue if every job fits now together (best fit in priority order,
    demand-aware with `weights`)."""
    need = [0] * len(snapshot.system.types)
    for q in ordered:
        for k, a in enumerate(q.job.req):
            need[k] += a * q.job.units
    if any(x > t for x, t in zip(need, snapshot.free.sum(axis=0).tolist())):
        return None
    work = np.array(snapshot.free, dtype=np.int64)
    cap = snapshot.system.capacity
    starts = []
    for q in ordered:
        nodes = best_fit(work, cap, q.job.req, q.job.units, weights, q.job.one_per_node)
        if nodes is None:
            return None
        starts.append(Start(q.job.id, nodes))
    return tuple(starts)


def extract_starts(
    snapshot: Snapshot, inst: Instance, plan: Plan, reallocate: bool = False
) -> tuple[tuple[Start, ...], int]:
    """Jobs planned at 0, in priority order: on the plan's nodes, checked against a working copy
    of the free amounts (invalid ones dropped and counted), or, when the plan has no nodes (HCP),
    placed by (demand-aware) best fit, skipping those that do not fit.

    `reallocate` (with scarcity weights): the model chose which jobs start now, but its objective
    is blind to where; if the demand-aware best fit places all of them, in priority order, its
    allocation is enacted instead of the model's."""
    cap = snapshot.system.capacity
    if reallocate and inst.weights is not None and plan.nodes:
        work = np.array(snapshot.free, dtype=np.int64)
        placed = []
        for job in inst.jobs:
            if plan.starts.get(job.id) == 0:
                got = best_fit(work, cap, job.req, job.units, inst.weights, job.one_per_node)
                if got is None:
                    break
                placed.append(Start(job.id, got))
        else:
            return tuple(placed), 0
    work = np.array(snapshot.free, dtype=np.int64)
    starts: list[Start] = []
    dropped = 0
    for job in inst.jobs:
        if plan.starts.get(job.id) != 0:
            continue
        nodes = plan.nodes.get(job.id)
        if nodes is None:
            got = best_fit(work, cap, job.req, job.units, inst.weights, job.one_per_node)
            if got is not None:
                starts.append(Start(job.id, got))
        elif take(work, tuple(nodes), job):
            starts.append(Start(job.id, tuple(int(n) for n in nodes)))
        else:
            dropped += 1
    return tuple(starts), dropped
