"""The 2014 Eurora dispatcher (Bartolini, Borghesi, Bridi, Lombardi, Milano, CP 2014, Sect. 3).

*Rolling horizon.* At every call, a full schedule and unit-to-node mapping is built for the queued
jobs, and only the jobs planned at the dispatching time start; the others are re-planned at the
next call. Jobs are planned with the durations the dispatcher sees (the prediction: with the
`walltime` predictor this is the paper's worst-case duration D_i).

*Model (Sect. 3.2).* Job units on nodes with per-node cumulatives: `pcp19.PerNodeModel` over the
*full* node capacities (the paper's p_i = min(rn_i, min_r floor(cap_kr / rq_ir)) unit intervals
per node, eq. (6)). The paper's `alternative(tau_i, [v_ijk], rn_i)` (eq. (7)) is the count
formulation sum_k u_ik = rn_i with optional per-node intervals sharing the job's start, and its
`cumulative([v_ijk], ...)` per node and type (eq. (8)) is the per-node AddCumulative with demands
u_ik * rq_ir. Running jobs are fixed intervals [0, remaining) on their nodes.

*Objectives (Sect. 3.1, eqs. (9)-(11)).* `makespan` max_i e(tau_i) (running jobs' ends included),
`tardiness` sum_i max(0, (s_i - q_i - ewt_i) / ewt_i) (scaled to integers, see `objectives`) and
`late_jobs` sum_i [[s_i - q_i > ewt_i]]. The expected waiting time is per queue (option `ewt`,
default `eurora`: debug 60 s, parallel 600 s, longpar 3600 s, other queues 1800 s; use e.g.
`default=1800` for traces without the Eurora queues).

*Composites (eqs. (12)-(14)).* `mks-wt-nl` minimises the makespan subject to tardiness <= (1 +
delta) theta_WT and late jobs <= (1 + delta) theta_NL, where each theta is the value of the pure
model of that objective, solved first within the same time budget (the best value known: the
proven optimum when the solve finishes, else the best plan found, the greedy plan included); and
likewise `wt-mks-nl`, `nl-mks-wt`. Bounds are floor((1 + delta) * theta) in the model's integer
units. The paper writes delta * theta with delta a tuning parameter it does not report; here the
option `tolerance` is the relative slack delta >= 0 (default 0.1: at most 10 % worse than the pure
optimum), so 0 means "no worse than the pure optimum".

Every phase (each pure model, then the composite) gets one solve with the time policy's first
limit: `time_policy=fast` (default) the `fast_budget` deterministic seconds capped by
`initial_limit` wall seconds (quick-restart portfolio, as the front end's fast policy), otherwise
`initial_limit` wall seconds (or `deterministic_time` when set). A composite thus costs up to three
solves per decision. The paper used CP Optimizer's default search with a time limit and one solve per phase;
doubling and stop rules of the CP'19 policies do not apply here.

The bounds of two constrained objectives can contradict each other (each theta is reached by a
different plan). The paper does not say what happens then; here, when the solver proves the
composite infeasible, the bound of the last constrained objective is dropped and the model solved
again (e.g. `mks-wt-nl` becomes makespan s.t. tardiness only, then pure makespan).

The plan kept is the best of every plan seen (greedy, each phase's plan, the composite's), ranked
by (number of violated bounds, primary objective): never worse than the greedy plan unless the
greedy plan breaks a bound. Its status says where it came from: `optimal`/`feasible` (the
composite), `phase` (a pure phase), `fallback` (the greedy plan). With `fallback=false` (the
paper's) only the composite's own plan is enacted, and nothing when it has none (`unsolved`).

*Bounding the work.* The paper plans every queued job. A model has one count, literal and interval
per (job, candidate node) pair, so on huge queues the jobs planned are capped at `q_length`
(default 100) in queue (arrival) order; the others wait for a later call, as in the PCP'19 line
of work. Raise `q_length` for the paper's unbounded setting.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

from ortools.sat.python import cp_model

from ...errors import CpdispatchError
from ..base import Option, registered
from . import objectives
from .frontend import CpDispatcher, Outcome, cp_options
from .greedy import greedy_plan
from .instance import BuiltModel, Instance, Plan
from .pcp19 import LAYOUT, PerNodeModel, check_layout

#: objective option -> (primary, constrained...) objective kinds
OBJECTIVES: dict[str, tuple[str, ...]] = {
    "makespan": ("makespan",),
    "tardiness": ("tardiness",),
    "late_jobs": ("late_jobs",),
    "mks-wt-nl": ("makespan", "tardiness", "late_jobs"),
    "wt-mks-nl": ("tardiness", "makespan", "late_jobs"),
    "nl-mks-wt": ("late_jobs", "makespan", "tardiness"),
}


def tolerance_bound(theta: int, tolerance: float) -> int:
    """floor((1 + tolerance) * theta): the composites' bound on a constrained objective."""
    return math.floor((1.0 + tolerance) * theta + 1e-9)


def composite_bounds(kinds: tuple[str, ...], thetas: dict[str, int], tolerance: float) -> dict[str, int]:
    """The bounds of the constrained objectives `kinds[1:]` given their pure values `thetas`."""
    return {k: tolerance_bound(thetas[k], tolerance) for k in kinds[1:] if k in thetas}


def _rank(inst: Instance, primary: str, bounds: dict[str, int], plan: Plan) -> tuple[int, int]:
    """(bounds violated, primary value): how plans compare."""
    violated = sum(objectives.evaluate(k, inst, plan.starts) > b for k, b in bounds.items())
    return violated, objectives.evaluate(primary, inst, plan.starts)


@registered()
class Eurora14(CpDispatcher):
    name = "eurora14"
    summary = "Eurora'14: rolling-horizon job units on nodes, makespan/tardiness/late jobs and composites"
    selection = "queue"
    objective_kind = "makespan"
    paper_search = "portfolio"  # CP Optimizer's default search (Sect. 4)
    options = cp_options(q_length=100, clamp=True, priority="ewt", ewt="eurora") + (
        Option("objective", "mks-wt-nl", "makespan | tardiness | late_jobs | mks-wt-nl | wt-mks-nl | nl-mks-wt"),
        Option("tolerance", 0.1, "composites: constrained objectives <= (1 + tolerance) x their pure optimum"),
        Option("redundant", True, "add the per-type total cumulative (implied) to the per-node model"),
        LAYOUT,
    )
    objective: str
    tolerance: float
    redundant: bool
    layout: str

    def __init__(self, **values: Any) -> None:
        super().__init__(**values)
        if self.objective not in OBJECTIVES:
            raise CpdispatchError(f"dispatcher {self.name}: objective must be one of {', '.join(OBJECTIVES)}")
        check_layout(self.name, self.layout)
        if not self.tolerance >= 0:
            raise CpdispatchError(f"dispatcher {self.name}: tolerance must be >= 0")
        self.kinds = OBJECTIVES[self.objective]

    @property
    def weighs_jobs(self) -> bool:
        return self.kinds != ("makespan",)

    def build(self, instance: Instance) -> BuiltModel:
        return self.model(instance, self.kinds[0])

    def model(self, instance: Instance, kind: str, bounds: dict[str, int] | None = None) -> PerNodeModel:
        return PerNodeModel(instance, kind, free_now=False, redundant=self.redundant, bounds=bounds, layout=self.layout)

    def phase_limits(self) -> tuple[float, float]:
        """(wall, deterministic) limits of one phase's solve."""
        return self.fast_limits() if self.policy == "fast" else self.solve_limits(self.initial_limit)

    def optimise(self, inst: Instance) -> Outcome:
        """Pure phases for the constrained objectives (their theta), then the primary objective
        under the bounds; the best plan seen by (violated bounds, primary value). Exceptions other
        than an inconsistent instance in the greedy plan propagate (they are bugs)."""
        primary = self.kinds[0]

        def value(kind: str, plan: Plan) -> int:
            return objectives.evaluate(kind, inst, plan.starts)

        greedy: Plan | None = None
        if self.hint or self.shortcut or self.fallback:
            try:
                greedy = greedy_plan(inst)
            except ValueError:
                greedy = None
        if self.shortcut and greedy is not None and not any(greedy.starts.values()):  # optimal for all
            return Outcome(greedy, "optimal", value(primary, greedy), True)
        # the plans a hint and a theta come from; with `fallback`, also the plan enacted
        plans: list[Plan] = [greedy] if greedy is not None else []
        wall, dtime = self.phase_limits()
        quick = self.policy == "fast"  # the front end's fast policy: quick-restart portfolio
        thetas: dict[str, int] = {}
        bounds: dict[str, int] = {}
        built: PerNodeModel | None = None
        final: Plan | None = None
        optimal = False
        for kind in self.kinds[1:]:
            pure = self.model(inst, kind)
            hint = min(plans, key=partial(value, kind)) if plans and self.hint else None
            _, plan = self.solve_once(pure, hint, wall, dtime, quick=quick)
            if plan is not None:
                plans.append(plan)
            if plans:
                thetas[kind] = min(value(kind, p) for p in plans)
        bounds = composite_bounds(self.kinds, thetas, self.tolerance)
        while True:
            built = self.model(inst, primary, bounds)
            hint = min(plans, key=partial(_rank, inst, primary, bounds)) if plans and self.hint else None
            status, final = self.solve_once(built, hint, wall, dtime, quick=quick)
            if status != cp_model.INFEASIBLE or not bounds:
                break
            bounds.pop(next(reversed(bounds)))  # proven infeasible: drop the last bound
        optimal = status == cp_model.OPTIMAL
        if not self.fallback:  # the paper's: the composite's own plan, or nothing
            if final is None:
                return Outcome(None, "unsolved", None, False, built)
            return Outcome(final, "optimal" if optimal else "feasible", value(primary, final), True, built)
        if final is not None:
            plans.append(final)
        if not plans:
            return Outcome(None, "fallback", None, False, built)
        best = min(plans, key=partial(_rank, inst, primary, bounds))
        if final is not None and value(primary, best) == value(primary, final):
            status_text = "optimal" if optimal else "feasible"
            best = final
        else:
            status_text = "fallback" if best is greedy else "phase"  # greedy, or a pure phase's plan
        return Outcome(best, status_text, value(primary, best), final is not None, built)
