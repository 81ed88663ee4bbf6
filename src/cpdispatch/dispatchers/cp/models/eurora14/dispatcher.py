"""The 2014 Eurora dispatcher (Bartolini, Borghesi, Bridi, Lombardi, Milano, CP 2014, Sect. 3).

*Rolling horizon.* At every call, a full schedule and unit-to-node mapping is built for the queued
jobs, and only the jobs planned at the dispatching time start; the others are re-planned at the
next call. Jobs are planned with the durations the dispatcher sees (the prediction: with the
`walltime` predictor this is the paper's worst-case duration D_i).

*Model (Sect. 3.2).* Job units on nodes with per-node cumulatives: `pcp19.model.PerNodeModel` over the
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
limits (`policies`): `time_policy=fast` (default) the `fast_budget` deterministic seconds capped by
`initial_limit` wall seconds (quick-restart portfolio, as the front end's fast policy; no conflict
limit unless `fast_conflicts` is set), `time_policy=paper` `initial_limit` wall seconds (or
`deterministic_time` when set). A composite thus costs up to three solves per decision. The paper
used CP Optimizer's default search with a time limit and one solve per phase; the front end's other
policies (doubling, stop rules, retries) do not apply here, so their options are not eurora14's.

The bounds of two constrained objectives can contradict each other (each theta is reached by a
different plan). The paper does not say what happens then; here, when the solver proves the
composite infeasible, the bound of the last constrained objective is dropped and the model solved
again (e.g. `mks-wt-nl` becomes makespan s.t. tardiness only, then pure makespan).

The plan kept is the best of every plan seen (greedy, each phase's plan, the composite's), ranked
by (number of violated bounds, primary objective): never worse than the greedy plan unless the
greedy plan breaks a bound. Its status says where it came from: `optimal`/`feasible` (the
composite), `phase` (a pure phase), `fallback:no-solution` or `fallback:greedy-better` (the greedy
plan). With `fallback=false` (the paper's) only the composite's own plan is enacted, and nothing
when it has none (`unsolved`). The front end decides the skips before any phase, as for every CP
dispatcher: a greedy plan that starts every job now is enacted with status `greedy`.

*Bounding the work.* The paper plans every queued job. A model has one count, literal and interval
per (job, candidate node) pair, so on huge queues the jobs planned are capped at `q_length`
(default 100) in queue (arrival) order; the others wait for a later call, as in the PCP'19 line
of work. Raise `q_length` for the paper's unbounded setting.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import partial
from typing import Any

from ortools.sat.python import cp_model

from ....base import Paper, registered
from ...built import BuiltModel
from ...frontend import CpDispatcher
from ...instance import Instance, Plan
from ...objectives import objective
from ...option_sets import cp_options
from ...options import PerNode, family, option, options_of, with_help
from ...outcome import Outcome, Ready
from ...status import Status
from ..pcp19.model import PerNodeModel

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
    violated = sum(objective(k).value(inst, plan) > b for k, b in bounds.items())
    return violated, objective(primary).value(inst, plan)


@family
class EuroraOptions:
    """The 2014 dispatcher's own: which objective, and the composites' slack."""

    # the 2014 paper's factor (one model per objective) and a value it does not report
    objective: str = option("mks-wt-nl", "makespan | tardiness | late_jobs | mks-wt-nl | wt-mks-nl | nl-mks-wt",
                            paper=Paper.FREE, choices=tuple(OBJECTIVES))
    tolerance: float = option(0.1, "composites: constrained objectives <= (1 + tolerance) x their pure optimum",
                              paper=Paper.FREE)


@registered()
class Eurora14(CpDispatcher, EuroraOptions, PerNode):
    name = "eurora14"
    summary = "Eurora'14: rolling-horizon job units on nodes, makespan/tardiness/late jobs and composites"
    selection = "queue"
    #: CP Optimizer's default search (Sect. 4); the 2014 dispatcher plans every queued job
    options = with_help(
        cp_options(fit_now=False, policies=("fast",), paper_policy="one-solve", q_length=100, clamp=True,
                   priority="ewt", ewt="eurora", fast_conflicts=0,
                   paper={"search": "portfolio", "q_length": 1_000_000_000}),
        time_policy="fast | paper: one solve per phase, of the fast policy's budget or of initial_limit seconds",
    ) + options_of(EuroraOptions) + options_of(PerNode, without=("free_now",))

    def __init__(self, **values: Any) -> None:
        super().__init__(**values)
        self.kinds = OBJECTIVES[self.objective]
        self.goal = objective(self.kinds[0])

    def check(self, v: Mapping[str, Any]) -> str | None:
        problem = super().check(v)
        if problem:
            return problem
        return None if v["tolerance"] >= 0 else "tolerance must be >= 0"

    @property
    def weighs_jobs(self) -> bool:
        return self.kinds != ("makespan",)

    def build(self, instance: Instance) -> BuiltModel:
        return self.model(instance, self.kinds[0])

    def prepare(self, instance: Instance) -> None:
        """None: `optimise` builds one model per phase."""
        return None

    def model(self, instance: Instance, kind: str, bounds: dict[str, int] | None = None) -> PerNodeModel:
        return PerNodeModel(instance, objective(kind), free_now=False, redundant=self.redundant, bounds=bounds,
                            layout=self.layout)

    def optimise(self, ready: Ready) -> Outcome:
        """Pure phases for the constrained objectives (their theta), then the primary objective
        under the bounds, each one solve of the time policy's first limits; the best plan seen by
        (violated bounds, primary value)."""
        inst, greedy = ready.inst, ready.greedy
        # the plans a hint and a theta come from; with `fallback`, also the plan enacted
        plans: list[Plan] = [greedy] if greedy is not None else []
        thetas: dict[str, int] = {}
        for kind in self.kinds[1:]:
            hint = min(plans, key=partial(objective(kind).value, inst)) if plans and self.hint else None
            _, plan = self.solve_once(self.model(inst, kind), hint, *self.timing.first_solve())
            if plan is not None:
                plans.append(plan)
            if plans:
                thetas[kind] = min(objective(kind).value(inst, p) for p in plans)
        built, status, final, bounds = self.composite(inst, plans, composite_bounds(self.kinds, thetas, self.tolerance))
        return self.keep(inst, built, status == cp_model.OPTIMAL, final, plans, greedy, bounds)

    def composite(
        self, inst: Instance, plans: list[Plan], bounds: dict[str, int]
    ) -> tuple[PerNodeModel, Any, Plan | None, dict[str, int]]:
        """The primary objective under `bounds`, dropping the last bound while the solver proves
        them contradictory: (model, status, plan, bounds kept)."""
        primary = self.kinds[0]
        while True:
            built = self.model(inst, primary, bounds)
            hint = min(plans, key=partial(_rank, inst, primary, bounds)) if plans and self.hint else None
            status, final = self.solve_once(built, hint, *self.timing.first_solve())
            if status != cp_model.INFEASIBLE or not bounds:
                return built, status, final, bounds
            bounds.pop(next(reversed(bounds)))  # proven infeasible: drop the last bound

    def keep(
        self, inst: Instance, built: PerNodeModel, optimal: bool, final: Plan | None, plans: list[Plan],
        greedy: Plan | None, bounds: dict[str, int],
    ) -> Outcome:
        """The plan enacted: with `fallback=false` (the paper's) the composite's own or nothing,
        else the best of every plan seen, the composite's on a tie."""
        solved_status = Status.OPTIMAL if optimal else Status.FEASIBLE
        primary = self.kinds[0]
        if not self.fallback:
            if final is None:
                return Outcome(None, Status.UNSOLVED, None, False, built, inst)
            return Outcome(final, solved_status, objective(primary).value(inst, final), True, built, inst)
        if final is not None:
            plans.append(final)
        if not plans:
            return Outcome(None, Status.NO_PLAN, None, False, built, inst)
        best = min(plans, key=partial(_rank, inst, primary, bounds))
        if final is not None and objective(primary).value(inst, best) == objective(primary).value(inst, final):
            status, best = solved_status, final
        elif best is greedy:
            status = Status.NO_SOLUTION if final is None else Status.GREEDY_BETTER
        else:
            status = Status.PHASE
        return Outcome(best, status, objective(primary).value(inst, best), final is not None, built, inst)
