"""One CP-SAT solve of a built model: from a hint, within limits, with the dispatcher's solver
settings."""

from __future__ import annotations

from typing import Any

from ortools.sat.python import cp_model

from ... import interrupt
from .built import BuiltModel
from .instance import Plan
from .policies import SolveLimits


class _Collector(cp_model.CpSolverSolutionCallback):
    """Keeps the latest (= best, when minimising) solution as a plan."""

    def __init__(self, built: BuiltModel) -> None:
        super().__init__()
        self.built = built
        self.plan: Plan | None = None

    def on_solution_callback(self) -> None:
        self.plan = self.built.extract(self)


def solve(
    built: BuiltModel, hint: Plan | None, limits: SolveLimits, *, workers: int, seed: int, det_wall_cap: float,
    fixed_search: bool,
) -> tuple[Any, Plan | None, bool]:
    """(status, best plan found, whether `det_wall_cap` stopped the solve). `limits.quick`: the
    portfolio search restarts quickly (within a tiny budget it finds nearly all the improvements
    over the hint that a solve of seconds finds; the default branching, lost in the huge start
    domains, finds few)."""
    built.model.clear_hints()
    if hint is not None:
        built.add_hint(hint)
    solver = cp_model.CpSolver()
    p = solver.parameters
    p.num_workers = workers
    p.random_seed = seed
    p.catch_sigint_signal = False  # Ctrl-C stops the run, not just this solve (see interrupt.py)
    if limits.wall > 0:
        p.max_time_in_seconds = limits.wall
    if interrupt.stopping():
        p.max_time_in_seconds = 0.0  # the run is stopping: return the hint at once
    dtime = limits.dtime
    cap = dtime * det_wall_cap if dtime > 0 else 0.0
    if dtime > 0:
        p.max_deterministic_time = dtime
        if cap > 0 and not interrupt.stopping():
            p.max_time_in_seconds = cap
    if limits.conflicts > 0:
        p.max_number_of_conflicts = limits.conflicts
    if hint is not None:
        # symmetry reductions in presolve may map the hinted point to an infeasible one
        # (identical nodes are interchangeable); keep the hint usable
        p.keep_symmetry_in_presolve = True
    for name, value in built.solver_parameters.items():
        setattr(p, name, value)
    if fixed_search:
        p.search_branching = cp_model.FIXED_SEARCH
    elif limits.quick:
        p.search_branching = cp_model.PORTFOLIO_WITH_QUICK_RESTART_SEARCH
    cb = _Collector(built)
    with interrupt.solving(solver):
        status = solver.solve(built.model, cb)
    capped = cap > 0 and solver.wall_time >= cap and solver.deterministic_time < dtime
    if cb.plan is None and status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        cb.plan = built.extract(solver)
    return status, None if cb.plan is None else built.complete(cb.plan, until=0), capped
