"""PCP'20's second stage: where the jobs starting now go, decided with the queued jobs in view.

The first stage (the model, the greedy short-circuit or the fallback) decides *which* jobs start
now (S0) and the front end places them (scarce-fit by default). Its objective cannot see where a
job goes unless a queued job is in the model, so a placement that keeps a queued GPU job waiting
(its node's cores taken by CPU jobs) costs nothing there. This stage solves PCP'20's own model
(positions, node links, one NoOverlap2D per type) over S0 plus the first K queued jobs that do not
start now (priority order), with S0's starts fixed at 0 and the queued jobs' starts free. Its
objective is the first stage's; S0's terms are constants, so only the queued jobs' part counts.

One decision, at most three small solves:
1. *Cheap exits.* Nothing queued beyond S0; or every unit fluid (a type whose units need 1 and
   nothing else: the cumulative is exact, placement cannot matter: HPC2N, CEA-Curie); or no job of
   S0 both sits on a node some queued job could use and has another node with room; or the
   greedy plan of the queued jobs is the same with S0 placed as without S0 at all (S0 delays no
   queued job, so no placement of it can).
2. *Free solve*, hinted with the current placement and the queued jobs' greedy plan under it. The
   jobs of S0 that step 1 found unable to move stay where they are, as if running.
3. If it found a better objective, a *fixed solve*: the same model with S0's nodes fixed to the
   current placement, hinted alike. The first solve's gain may come from ordering the queued jobs
   better; only what the fixed solve cannot match is the placement's.
4. Only when the free solve is strictly better than the fixed one: a last solve keeps that value
   for the queued jobs while moving as few units as possible (the first stage's demand-aware
   placement also keeps room for jobs not yet submitted), and its placement is enacted.

It never changes which jobs start now, so it cannot pay the reservation cost that the front end's
`blocked` option pays (a job held back for a queued one). The model has the size of PCP'20's:
independent of the number of nodes. A `PlacementReport` says what happened, for decisions.csv.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from .....snapshot import Allocation, PlacementReport, QueuedJob, Snapshot, Start
from .....system import units_fitting
from ...built import BuiltModel, ModelTooLarge
from ...fitting import take
from ...greedy import greedy_plan
from ...instance import CpJob, CpRunning, Instance, Plan
from ...objectives import Objective
from ...policies import SolveLimits
from .axes import axes_of
from .model import Pcp20Model
from .reductions import reductions_for

#: statuses, from cheapest to dearest: nothing queued beyond the starts / placement cannot matter /
#: the starts delay no queued job / the model is over the size guard / no better objective /
#: better only by the queued jobs' order / moved (enacted: the placement lets a queued job start
#: earlier)
STATUSES = ("none", "fluid", "no-room", "too-large", "kept", "order", "moved")


class SecondStage:
    """The second stage over the first `queued` queued jobs that do not start now, each solve
    within `limits`, with the model's exact `reductions` on or off. Its collaborators are the
    first stage's: how it makes an instance of chosen jobs (`instance`), builds a PCP'20 model
    (`build`), solves it once from a hint (`solve`), and its objective."""

    def __init__(
        self, queued: int, limits: SolveLimits, reductions: bool, goal: Objective, *,
        instance: Callable[[Snapshot, list[QueuedJob]], Instance], build: Callable[[Instance], BuiltModel],
        solve: Callable[..., tuple[Any, Plan | None]],
    ) -> None:
        self.queued = queued
        self.limits = limits
        self.reductions = reductions
        self.goal = goal
        self.instance = instance
        self.build = build
        self.solve = solve

    def __call__(
        self, snapshot: Snapshot, ordered: Sequence[QueuedJob], starts: tuple[Start, ...]
    ) -> tuple[tuple[Start, ...], PlacementReport]:
        """The starts to enact (the same jobs, possibly on other nodes) and what happened."""
        t0 = time.perf_counter()
        starts, status, variables, gained = self._run(snapshot, ordered, starts)
        return starts, PlacementReport(status, (time.perf_counter() - t0) * 1e3, variables, gained)

    def _run(
        self, snapshot: Snapshot, ordered: Sequence[QueuedJob], starts: tuple[Start, ...]
    ) -> tuple[tuple[Start, ...], str, int | None, int]:
        now = {s.job_id for s in starts}
        rest = [q for q in ordered if q.job.id not in now][: self.queued]
        if not starts or not rest:
            return starts, "none", None, 0
        by_id = {q.job.id: q for q in ordered}
        s0 = [by_id[s.job_id] for s in starts]
        jobs = [q.job for q in s0 + rest]
        red = reductions_for(axes_of(snapshot.system), jobs, [r.job.req for r in snapshot.running if r.alloc.nodes],
                             self.reductions)
        if red.placement_free([j.req for j in jobs]):
            return starts, "fluid", None, 0
        inst = self.instance(snapshot, s0 + rest)
        queued = inst.jobs[len(s0):]
        placed = {s.job_id: s.nodes for s in starts}
        cap = inst.system.capacity
        usable = np.logical_or.reduce([units_fitting(cap, job.req) > 0 for job in queued])
        movable = {job.id: placed[job.id] for job in inst.jobs[:len(s0)]
                   if usable[list(placed[job.id])].any() and _elsewhere(snapshot.free, job.req, placed[job.id])}
        if not movable:
            return starts, "no-room", None, 0
        without = Instance(inst.time, inst.system, queued, inst.running, inst.free, inst.horizon, inst.weights)
        try:
            current = greedy_plan(_with_started(inst, queued, placed))
            if current.starts == greedy_plan(without).starts:
                return starts, "no-room", None, 0
        except ValueError:  # a queued job fits at no time (an inconsistent snapshot): leave it
            return starts, "none", None, 0
        fixed = {j: nodes for j, nodes in placed.items() if j not in movable}
        sub = _with_started(inst, [j for j in inst.jobs if j.id not in fixed], fixed)
        hint = Plan({**{j: 0 for j in movable}, **current.starts}, {**movable, **current.nodes})
        return self._replace(snapshot, starts, sub, movable, hint)

    def _replace(
        self, snapshot: Snapshot, starts: tuple[Start, ...], sub: Instance, movable: dict[str, tuple[int, ...]],
        hint: Plan,
    ) -> tuple[tuple[Start, ...], str, int | None, int]:
        """The solves (module docstring, steps 2-4) over `sub`: the jobs of `movable` at start 0,
        where they are in `hint`, and the queued jobs, as the hint plans them."""
        try:
            model = self.build(sub)
        except ModelTooLarge:
            return starts, "too-large", None, 0
        assert isinstance(model, Pcp20Model)
        for jv in model.jobs:
            if jv.job.id in movable:
                model.model.add(jv.start == 0)
        stay = _stay_literals(model, movable)
        goal = self.goal
        free = self._solve(model, hint)
        if free is None or goal.value(sub, free) >= goal.value(sub, hint):
            return starts, "kept", model.variables, 0
        model.model.add_assumptions(stay)  # every unit where it is
        kept = self._solve(model, hint) or hint
        model.model.clear_assumptions()
        value = goal.value(sub, free)
        if value >= goal.value(sub, kept):
            return starts, "order", model.variables, 0
        # as good for the queued jobs, moving as few units as possible: the first stage's placement
        # (demand-aware) also keeps room for jobs not yet submitted, which this model does not see
        model.model.add(goal.post(model.model, sub, model.start_vars).expression <= value)
        model.model.maximize(sum(stay))
        best = (self._solve(model, free) if stay else None) or free
        moved = _enactable(snapshot, model, starts, best)
        if moved is None:  # cannot happen with a valid model; keep the first stage's placement
            return starts, "kept", model.variables, 0
        gained = sum(1 for j in sub.jobs if j.id not in movable and best.starts[j.id] < kept.starts[j.id])
        return moved, "moved", model.variables, gained

    def _solve(self, model: Pcp20Model, hint: Plan) -> Plan | None:
        _, plan = self.solve(model, hint, *self.limits)
        return plan


def _with_started(inst: Instance, jobs: Sequence[CpJob], started: dict[str, tuple[int, ...]]) -> Instance:
    """`jobs` planned with the jobs of `inst` in `started` running on the given nodes."""
    free = np.array(inst.free, dtype=np.int64)
    running = list(inst.running)
    for job in inst.jobs:
        if job.id in started:
            alloc = Allocation.of_units(started[job.id])
            free[list(alloc.nodes)] -= np.outer(alloc.counts, job.req)
            running.append(CpRunning(job.id, job.units, job.req, max(1, job.duration), alloc))
    assert (free >= 0).all(), "the starts must fit in the free amounts"
    return Instance(inst.time, inst.system, tuple(jobs), tuple(running), free, inst.horizon, inst.weights)


def _elsewhere(free: np.ndarray, req: tuple[int, ...], nodes: tuple[int, ...]) -> bool:
    """Whether a unit asking `req` could go on a node other than `nodes`, in the amounts free
    before any start (a necessary condition for another placement)."""
    others = np.ones(free.shape[0], dtype=bool)
    others[list(nodes)] = False
    return bool((units_fitting(free[others], req) > 0).any())


def _stay_literals(model: Pcp20Model, placed: dict[str, tuple[int, ...]]) -> list[cp_model.IntVar]:
    """One literal per unit of the jobs of `placed` with positions: true forces the unit onto its
    current node (units sorted by node, as the model orders them)."""
    axes, m = model.axes, model.model
    out = []
    for jv in model.jobs:
        if jv.job.id not in placed or jv.fluid or not jv.positions:
            continue
        for i, k in enumerate(sorted(placed[jv.job.id])):
            lit = m.new_bool_var(f"stay_{jv.job.id}_{i}")
            if jv.nodes:
                m.add(jv.nodes[i] == k).only_enforce_if(lit)
            else:  # one type, no node variable: the position within node k
                t, a = jv.geo.types[0], jv.geo.amounts[0]
                first = int(axes.first[k, t])
                m.add_linear_constraint(jv.positions[i][0], first, first + int(axes.capacity[k, t]) - a
                                        ).only_enforce_if(lit)
            out.append(lit)
    return out


def _enactable(
    snapshot: Snapshot, model: Pcp20Model, starts: tuple[Start, ...], plan: Plan
) -> tuple[Start, ...] | None:
    """The starts with the plan's nodes (a job the model did not place keeps its own: fixed, or
    fluid, where it goes cannot matter), checked in order against the free amounts; None if one
    does not fit."""
    placed = {jv.job.id for jv in model.jobs if not jv.fluid and jv.positions}
    units = {q.job.id: q.job for q in snapshot.queued}
    work = np.array(snapshot.free, dtype=np.int64)
    out = []
    for s in starts:
        nodes = tuple(int(k) for k in plan.nodes[s.job_id]) if s.job_id in placed else s.nodes
        job = units[s.job_id]
        if len(nodes) != job.units or not take(work, nodes, job):
            return None
        out.append(Start(s.job_id, nodes))
    return tuple(out)
