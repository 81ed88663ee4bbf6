"""Builders shared by the CP model tests (tiny instances, a plain CP-SAT solve)."""

from __future__ import annotations

import numpy as np
from ortools.sat.python import cp_model

from cpdispatch.dispatchers.cp.instance import BuiltModel, CpJob, CpRunning, Instance
from cpdispatch.system import System


def make_instance(system: System, jobs: list[CpJob], running: list[CpRunning]) -> Instance:
    free = np.array(system.capacity, dtype=np.int64)
    for r in running:
        for k in r.nodes:
            free[k] -= np.asarray(r.req)
    assert (free >= 0).all()
    horizon = max(1, sum(r.remaining for r in running) + sum(j.duration for j in jobs))
    return Instance(0, system, tuple(jobs), tuple(running), free, horizon)


def solve(bm: BuiltModel, workers: int = 2, **params: object) -> tuple[cp_model.CpSolver, int]:
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = 1
    solver.parameters.max_time_in_seconds = 30
    for key, value in params.items():
        setattr(solver.parameters, key, value)
    return solver, solver.Solve(bm.model)
