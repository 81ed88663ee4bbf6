"""Fluid types after solving: the model gives a fluid job (units of 1 on a type whose queued units
all need 1 of it and nothing else) a start only; its nodes are chosen here, for the plan kept.

Also the greedy plan of an instance whose jobs are all fluid on one type, on that type's total
free amount (`total_plan`): no job starts later than in the per-node plan of `greedy`, and a 1-D
profile replaces the nodes x segments one.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

from .....allocators import waste as allocation_waste
from ...instance import Instance, Plan
from .axes import Axes
from .job_vars import JobShape
from .running import RunningUsage


def total_plan(
    jobs: Sequence[JobShape], axes: Axes, run: RunningUsage, fluid_types: frozenset[int]
) -> Plan | None:
    """The priority-list plan on the fluid type's total free amount: each job at the first time
    its units fit in the total over its whole interval (nodes not yet chosen). Only when every
    job is fluid on one type and the nodes differ in nothing but that type (HPC2N; CEA-Curie,
    whose only type is cores), else None: elsewhere where a job goes matters to others (a CPU
    job on a GPU node), and planning on the total can let GPU jobs starve."""
    if not jobs or len(fluid_types) != 1 or not all(jv.fluid for jv in jobs):
        return None
    (t,) = fluid_types
    others = np.delete(axes.capacity, t, axis=1)
    if (others != others[:1]).any():
        return None
    cap = axes.capacity[:, t]
    sel = (run.usage[:, t] > 0) & (cap[run.node] > 0)
    rem, use = run.remaining[sel], run.usage[sel, t]
    times, inverse = np.unique(np.concatenate(([0], rem)), return_inverse=True)
    released = np.bincount(inverse[1:], weights=use, minlength=len(times)).astype(np.int64)
    free = int(cap.sum()) - int(use.sum()) + np.cumsum(released)
    needs = np.fromiter((jv.job.units for jv in jobs), np.int64, len(jobs))
    durations = np.fromiter((max(1, jv.job.duration) for jv in jobs), np.int64, len(jobs))
    from .fluid_kernel import first_fits  # numba only for runs that plan on a total

    starts = first_fits(times.astype(np.int64), free, needs, durations)
    if (starts < 0).any():
        job = jobs[int(np.flatnonzero(starts < 0)[0])].job
        raise ValueError(f"job {job.id} fits at no time, not even once everything has ended")
    return Plan(starts=dict(zip((jv.job.id for jv in jobs), starts.tolist())))


def fluid_nodes(
    jobs: Sequence[JobShape], instance: Instance, axes: Axes, run: RunningUsage, fluid_types: frozenset[int],
    starts: dict[str, int], until: int | None = None,
) -> dict[str, tuple[int, ...]]:
    """Nodes of the fluid jobs' units for the given starts: per fluid type, jobs in start order
    (then priority order) take, by best fit, nodes with a free unit at their start, counting the
    running jobs still alive and the jobs placed before them still running. Such a node stays
    free for the whole job (running usage only decreases; later jobs are placed later), and
    some nodes always suffice when the starts satisfy the type's cumulative. With `until`, only
    the jobs starting at or before it (the same nodes: a job's place depends only on earlier ones)."""
    out: dict[str, tuple[int, ...]] = {}
    for t in sorted(fluid_types):
        waste = None  # demand-aware: the other types' free amounts now (what a start now would waste)
        if instance.weights is not None and (np.delete(instance.weights, t) > 0).any():
            w = instance.weights.copy()
            w[t] = 0
            waste = allocation_waste(instance.free, instance.capacity, w)
        order = sorted((starts[jv.job.id], i, jv.job) for i, jv in enumerate(jobs)
                       if jv.fluid and jv.geo.types[0] == t and (until is None or starts[jv.job.id] <= until))
        _place_type(t, [(s, job.id, job.units, job.duration) for s, _, job in order], axes, run, waste, out)
    return out


def _place_type(
    t: int, jobs: Sequence[tuple[int, str, int, int]], axes: Axes, run: RunningUsage, waste: np.ndarray | None,
    out: dict[str, tuple[int, ...]],
) -> None:
    """Place `jobs` (start, id, units, duration; in start order) on type `t`, into `out`."""
    n = axes.n_nodes
    cap = axes.capacity[:, t]
    used = np.zeros(n, dtype=np.int64)  # by the jobs placed so far that are still running
    ending: list[tuple[int, int, np.ndarray, np.ndarray]] = []  # heap of (end, i, nodes, counts)
    base = cap
    base_time = -1
    for i, (s, job_id, units, duration) in enumerate(jobs):
        if s != base_time:  # starts only grow: what ended before s stays ended
            alive = run.remaining > s
            base = cap - np.bincount(run.node[alive], weights=run.usage[alive, t], minlength=n).astype(np.int64)
            base_time = s
            while ending and ending[0][0] <= s:
                _, _, nodes, counts = heapq.heappop(ending)
                np.subtract.at(used, nodes, counts)
        nodes, counts = _best_fit_units(base - used, cap, units, waste)
        np.add.at(used, nodes, counts)
        heapq.heappush(ending, (s + max(1, duration), i, nodes, counts))
        out[job_id] = tuple(np.repeat(nodes, counts).tolist())


def _best_fit_units(
    free: np.ndarray, cap: np.ndarray, units: int, waste: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and unit counts for `units` units of 1 on one type: least `waste` first when given,
    then fullest node first (free/capacity, ties to the lower index, as `allocators.best_fit`),
    packing each node. If the free amounts do not suffice (starts that break the cumulative; not
    from the model), the rest goes round-robin on the nodes with capacity, for a complete but
    invalid plan that the front end then rejects."""
    cand = np.flatnonzero(free > 0)
    if waste is None:
        order = cand[np.argsort(free[cand] / cap[cand], kind="stable")]
    else:
        order = cand[np.lexsort((free[cand] / cap[cand], waste[cand]))]
    avail = free[order]
    before = np.cumsum(avail) - avail
    take = np.minimum(avail, np.maximum(0, units - before))
    keep = take > 0
    nodes, counts = order[keep], take[keep]
    short = units - int(counts.sum())
    if short > 0:
        extra = np.resize(np.flatnonzero(cap > 0), short)
        nodes, counts = np.concatenate((nodes, extra)), np.concatenate((counts, np.ones(short, dtype=np.int64)))
    return nodes, counts
