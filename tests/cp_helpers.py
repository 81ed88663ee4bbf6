"""Builders shared by the CP model tests (tiny instances, a plain CP-SAT solve)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
from ortools.sat.python import cp_model

from cpdispatch.dispatchers.cp.built import BuiltModel
from cpdispatch.dispatchers.cp.instance import CpJob, CpRunning, Instance
from cpdispatch.dispatchers.cp.models.pcp20.model import Pcp20Model
from cpdispatch.dispatchers.cp.models.pcp20.options import Pcp20Options
from cpdispatch.dispatchers.cp.objectives import objective
from cpdispatch.dispatchers.cp.options import declared
from cpdispatch.snapshot import Decision, Snapshot
from cpdispatch.system import System


def make_instance(system: System, jobs: list[CpJob], running: list[CpRunning]) -> Instance:
    free = np.array(system.capacity, dtype=np.int64)
    for r in running:
        for k in r.alloc.per_unit():
            free[k] -= np.asarray(r.req)
    assert (free >= 0).all()
    horizon = max(1, sum(r.remaining for r in running) + sum(j.duration for j in jobs))
    return Instance(0, system, tuple(jobs), tuple(running), free, horizon)


def pcp20_model(inst: Instance, kind: str = "slowdown", post: bool = True, **options: object) -> Pcp20Model:
    """PCP'20's model of `inst` with `options` changed from the declared ones (no size guard unless
    given)."""
    return Pcp20Model(inst, objective(kind), declared(Pcp20Options, **{"max_units": 0, **options}), post=post)


def solve(bm: BuiltModel, workers: int = 2, **params: object) -> tuple[cp_model.CpSolver, int]:
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = 1
    solver.parameters.max_time_in_seconds = 30
    for key, value in params.items():
        setattr(solver.parameters, key, value)
    return solver, solver.Solve(bm.model)


# -- brute force: unit-to-node allocations checked by hand ------------------------------------------


def allocations(units: int, caps: list[int]) -> Iterator[tuple[int, ...]]:
    """Every per-node count vector with 0 <= u_k <= caps[k] and sum = units."""
    for combo in itertools.product(*[range(c + 1) for c in caps]):
        if sum(combo) == units:
            yield combo


def load_ok(inst: Instance, starts: list[int], allocs: list[tuple[int, ...]]) -> bool:
    """Per node and type, running + queued load within capacity at every start time (load only
    rises at starts)."""
    jobs = inst.jobs[: len(allocs)]
    for t in set(starts[: len(allocs)]):
        load = np.zeros_like(inst.capacity)
        for r in inst.running:
            if t < r.remaining:
                for k in r.alloc.per_unit():
                    load[k] += np.asarray(r.req)
        for j, s, alloc in zip(jobs, starts, allocs):
            if s <= t < s + j.duration:
                load += np.outer(alloc, j.req)
        if (load > inst.capacity).any():
            return False
    return True


def feasible_allocation(
    inst: Instance, starts: list[int], options: list[list[tuple[int, ...]]]
) -> list[tuple[int, ...]] | None:
    chosen: list[tuple[int, ...]] = []

    def rec(i: int) -> bool:
        if i == len(options):
            return True
        for alloc in options[i]:
            chosen.append(alloc)
            if load_ok(inst, starts, chosen) and rec(i + 1):
                return True
            chosen.pop()
        return False

    return chosen if rec(0) else None


def valid_starts(snap: Snapshot, decision: Decision) -> None:
    """Every start has its units, on nodes that hold them all now (with the other starts)."""
    free = np.array(snap.free, dtype=np.int64)
    jobs = {q.job.id: q.job for q in snap.queued}
    for start in decision.starts:
        job = jobs[start.job_id]
        assert len(start.nodes) == job.units
        for k in start.nodes:
            free[k] -= np.asarray(job.req)
    assert (free >= 0).all(), decision.starts
