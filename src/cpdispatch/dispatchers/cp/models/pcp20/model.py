"""PCP'20 (Galleguillos, Kiziltan, Soto, 2020), Section 3: scheduling and allocation in one CP model
whose number of variables does not depend on the number of nodes. Times are relative to the
dispatching time (0 = now).

The model reads as the paper's section, one part per module: the geometry of units on the ordered
list of each resource type (`axes`); what the running jobs hold, as fixed boxes and demands per
type (`running`); the variables of each queued job (`job_vars`); one NoOverlap2D and one implied
cumulative per type (`resources`); the objective and the search (here). Ours, one separate step
before it (`reductions`, off under `profile=paper`): the exact reductions, which take types out of
the model or give them a cumulative alone.

*Objective and priorities (Section 2.2).* Total slowdown (`objectives.Slowdown`); the
priority is the slowdown at dispatching time (the front end orders the jobs).

*Search.* "Select the job whose priority is highest and that can start first; assign its start
its earliest time; then among its allocation variables select the one with the minimum domain and
assign its maximum value (best fit)." The authors' code interleaves job by job in priority order;
CP-SAT applies decision strategies in sequence, so `add_search` posts, per job in priority order,
its start (SELECT_MIN_VALUE), then its positions (CHOOSE_MIN_DOMAIN_SIZE, SELECT_MAX_VALUE), then
its node variables and piece literals. Not expressible: the dynamic choice of the job "that can
start first" (the order is static, as the priorities are) and the code's ``sched_bt`` flag
(allocation choices not re-opened on backtracking).

*Size.* ``|Q| + sum_j units_j * (|R_j| + [v needed] + [pieces_j if > 1])`` variables over
non-fluid jobs, ``R_j`` the modelled requested types: the paper's ``|Q| + sum_i rn_i * |R|``,
plus the node variable that replaces the element expressions; no term depends on the number of
nodes. `max_units` and `max_running_boxes` raise `ModelTooLarge` beyond a size where CP-SAT does
not beat the greedy plan in a decision's time (the front end then enacts that plan).
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
from ortools.sat.python import cp_model

from ... import objectives
from ...built import BuiltModel, ModelTooLarge
from ...instance import CpJob, Instance, Plan
from ...options import declared
from .axes import UnitGeometry, axes_of
from .dive import first_dive
from .fluid import fluid_nodes, total_plan
from .hints import hint_plan
from .job_vars import JobShape, JobVars, break_job_symmetry, post_job
from .options import Pcp20Options
from .reductions import Fold, Reductions, reductions_for
from .resources import Resources
from .running import running_usage, type_load


class _Values(Protocol):
    def value(self, expression: Any) -> int: ...


class Pcp20Model(BuiltModel):
    """The PCP'20 model of `instance` (module docstring), as `options` say (default: as declared).
    Our exact reductions are one step, computed from the data (`reductions.reductions_for`,
    unless given: `reductions`) before the paper's model, which reads only the value. The data
    come first and the variables at `post` (at once unless `post=False`: the front end first asks
    for the greedy plan, which needs only the data, and often starts every job now)."""

    goal: objectives.Objective  # never None here: the model always minimises one

    def __init__(
        self,
        instance: Instance,
        goal: objectives.Objective = objectives.SLOWDOWN,
        options: Pcp20Options | None = None,
        *,
        reductions: Reductions | None = None,
        post: bool = True,
    ) -> None:
        super().__init__(instance, goal)
        self.options = opts = options if options is not None else declared(Pcp20Options)
        self.axes = axes_of(instance.system)
        self.hint_complete = False
        # ours: which types need constraints of their own (none left out in the paper's model)
        self.reductions = red = reductions if reductions is not None else reductions_for(
            self.axes, instance.jobs, [r.req for r in instance.running if r.alloc.nodes], opts.reductions)
        # the paper's data: running usage, unit geometries, load per type
        if opts.max_units > 0:
            _check_size(instance.jobs, red, opts.max_units)
        self.running = running_usage(instance, self.axes, red.folds)
        self.shapes = [JobShape(job, geo, bool(geo.types) and geo.types[0] in red.fluid)
                       for job, geo in zip(instance.jobs, map(self._geometry, instance.jobs))]
        self.loads = {t: type_load(t, [sh.geo for sh in self.shapes if t in sh.geo.types], self.running, self.axes,
                                   t in red.fluid)
                      for t in sorted({t for sh in self.shapes for t in sh.geo.types})}
        self.running_boxes = sum(len(load.boxes) for load in self.loads.values())
        if 0 < opts.max_running_boxes < self.running_boxes:
            raise ModelTooLarge(f"{self.running_boxes} running boxes (max_running_boxes={opts.max_running_boxes})")
        self.jobs: list[JobVars] = []
        self._posted = False
        if post:
            self.post()

    def post(self) -> None:
        """The variables of each job in priority order, one NoOverlap2D and cumulative per
        requested type, and the objective (once)."""
        if self._posted:
            return
        self._posted = True
        m, inst = self.model, self.instance
        self.jobs = [post_job(m, sh.job, sh.geo, inst.horizon, sh.fluid, all_different=self.options.all_different,
                              sparse_domains=self.options.sparse_domains) for sh in self.shapes]
        self.start_vars.update((jv.job.id, jv.start) for jv in self.jobs)
        break_job_symmetry(m, self.jobs, self.goal)
        resources = Resources(m)
        for t, load in self.loads.items():
            resources.post(t, [jv for jv in self.jobs if t in jv.geo.types], load, self.options.implied_cumulative)
        self.walls = resources.walls  # see `resources.add_no_overlap_2d`
        self.running_intervals = len(resources.running_x)  # fixed [0, remaining): one constraint each
        self.posted = self.goal.post(m, inst, self.start_vars)
        m.minimize(self.posted.expression)

    @property
    def places_units(self) -> bool:
        """Whether some job's units get positions (the model decides where, not only when)."""
        return any(not sh.fluid and sh.geo.types for sh in self.shapes)

    @property
    def dropped_types(self) -> frozenset[int]:
        return self.reductions.dropped

    @property
    def folds(self) -> tuple[Fold, ...]:
        return self.reductions.folds

    @property
    def fluid_types(self) -> frozenset[int]:
        return self.reductions.fluid

    def _geometry(self, job: CpJob) -> UnitGeometry:
        geo = self.axes.geometry(self.reductions.request(job.req))
        if geo is None:
            raise ValueError(f"job {job.id}: no node of {self.instance.system.name} can host one unit {job.req}")
        return geo

    # -- hooks used by the front end -------------------------------------------------------------

    def add_search(self) -> None:
        m = self.model
        for jv in self.jobs:  # priority order: one strategy per job and stage interleaves them
            m.add_decision_strategy([jv.start], cp_model.CHOOSE_FIRST, cp_model.SELECT_MIN_VALUE)
            positions = [y for unit in jv.positions for y in unit]
            if positions:
                m.add_decision_strategy(positions, cp_model.CHOOSE_MIN_DOMAIN_SIZE, cp_model.SELECT_MAX_VALUE)
            rest = [*jv.nodes, *(b for u in jv.pieces for b in u)]
            if rest:
                m.add_decision_strategy(rest, cp_model.CHOOSE_FIRST, cp_model.SELECT_MAX_VALUE)

    def first_dive(self) -> Plan | None:
        """The authors' search's first solution (`dive`), positions included; None on fluid types."""
        dive = first_dive(self.shapes, self.running, self.axes, self.instance.horizon)
        return None if dive is None else dive.plan(self.shapes, self.axes)

    def add_hint(self, plan: Plan) -> None:
        """Hint every variable from a complete plan (start and node of every unit of every job;
        `hints`); `hint_complete` says whether every position was placed."""
        self.hint_complete = hint_plan(self.model, self.jobs, self.running, self.axes, self.walls, plan)
        self.posted.hint(self.model, self.instance, plan.starts)

    def extract(self, solver: object) -> Plan:
        """The plan of the solver's (or solution callback's) current solution."""
        sol: _Values = solver  # type: ignore[assignment]
        plan = Plan()
        for jv in self.jobs:
            job = jv.job
            plan.starts[job.id] = int(sol.value(jv.start))
            if jv.fluid:
                continue
            if jv.nodes:
                plan.nodes[job.id] = tuple(int(sol.value(v)) for v in jv.nodes)
            elif jv.geo.types:
                ys = np.array([int(sol.value(unit[0])) for unit in jv.positions], dtype=np.int64)
                plan.nodes[job.id] = tuple(int(k) for k in self.axes.node_of(jv.geo.types[0], ys))
            else:
                plan.nodes[job.id] = (0,) * job.units
        return plan

    def complete(self, plan: Plan, until: int | None = None) -> Plan:
        plan.nodes.update(self.fluid_nodes(plan.starts, until))
        return plan

    def greedy_plan(self, until: int | None = None) -> Plan:
        """The 1-D plan on the fluid type's total when every job is fluid on one type and the
        nodes differ in nothing else (`fluid.total_plan`), nodes by `fluid_nodes`; otherwise the
        shared greedy plan, which places every job by the demand-aware best fit over time."""
        plan = total_plan(self.shapes, self.axes, self.running, self.fluid_types)
        if plan is None:
            return super().greedy_plan(until)
        plan.nodes.update(self.fluid_nodes(plan.starts, until))
        return plan

    def fluid_nodes(self, starts: dict[str, int], until: int | None = None) -> dict[str, tuple[int, ...]]:
        """Nodes of the fluid jobs' units for the given starts (`fluid.fluid_nodes`)."""
        return fluid_nodes(self.shapes, self.instance, self.axes, self.running, self.fluid_types, starts, until)

    @property
    def solver_parameters(self) -> dict[str, object]:
        """CP-SAT parameters this model solves best with (the front end applies them); none
        changes which solutions exist. Always: no transitive closure of the precedences (no
        propagator of these models reads it). With boxes: no presolve, no hint-following phase
        (`resources.add_no_overlap_2d`), no `Precedences2DPropagator` (it works outside the
        deterministic time). With fluid types only: no linear relaxation, presolve or symmetry
        detection (`break_job_symmetry` orders the only symmetric jobs), and no hint-following
        phase without `hint_replay` (the complete hint already is the first solution). Why each,
        measured: docs/pcp20-notes.md."""
        common = {"transitive_precedences_work_limit": 0, "cp_model_presolve": False}
        if not any(jv.positions for jv in self.jobs):
            replay = {} if self.options.hint_replay else {"hint_conflict_limit": 0}
            return {**common, "linearization_level": 0, "symmetry_level": 0, **replay}
        return {**common, "hint_conflict_limit": 0, "use_linear3_for_no_overlap_2d_precedences": False}

    def size(self) -> dict[str, int]:
        """Model size figures for logs and benchmarks."""
        return {
            "variables": self.variables,
            "constraints": self.constraints,
            "boxes": sum(len(u) for jv in self.jobs for u in jv.positions),
            "running_boxes": self.running_boxes,
            "running_intervals": self.running_intervals,
        }


def _check_size(jobs: tuple[CpJob, ...], red: Reductions, max_units: int) -> None:
    """Raise `ModelTooLarge` if more than `max_units` units would get positions."""
    units = 0
    for job in jobs:
        req = red.request(job.req)
        types = [t for t, a in enumerate(req) if a > 0]
        if types and not (len(types) == 1 and types[0] in red.fluid):
            units += job.units
    if units > max_units:
        raise ModelTooLarge(f"{units} units with positions (max_units={max_units})")
