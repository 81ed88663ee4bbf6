"""PCP'19's model (CP 2019 paper, Sect. 2.2-4; reference notes 2.1-2.5, 2.9): scheduling and
per-node allocation in one CP-SAT model, built by the PCP family (`pcp19`) and by the 2014 Eurora
dispatcher (`eurora14`).

The original (OR-Tools' legacy CP solver) gives each queued job one interval and, per node, as
many optional *unit* intervals as units fit there, tied by a k-of-n `Alternative` (exactly n_j unit
intervals present, all synchronised with the job), and one cumulative per (node, type). CP-SAT has
no k-of-n alternative. Two layouts (`layout`) express it:

``counts`` (default): the unit intervals of one job on one node are interchangeable, so the model
counts them (reference notes, "Mapping to OR-Tools CP-SAT", PCP'19 paragraph):

* per queued job j: a start s_j in [0, H] (H = the instance's end of horizon);
* per candidate node k of j: a unit count u_jk in [0, min(fit_jk, n_j)], where fit_jk is the number
  of units of j that fit in node k's *current free* amounts (the original's restriction: a queued
  job may only use nodes with room now; `free_now=False` uses the node's full capacity instead, as
  the PCP base version and the 2014 model do; a job that cannot start now, left out by the
  original, is planned over the full capacity with `plan_blocked`); sum_k u_jk = n_j (the
  alternative's "exactly n_j");
* a presence literal b_jk <=> u_jk >= 1 (posted as u_jk <= cap * b_jk and u_jk >= b_jk; when the cap
  is 1 the count is itself the literal) and an optional fixed-size interval [s_j, s_j + d_j) present
  iff b_jk (the alternative's synchronisation: every unit interval shares the job's start);
* per node k and type r: AddCumulative over the optional intervals on k with affine demands
  u_jk * a_jr (the constant a_jr when at most one unit fits: an absent interval demands nothing),
  plus the running jobs' fixed intervals [0, remaining) with their usage on k, capacity cap_kr.
  A cumulative whose largest possible load fits anyway is not posted (the original drops those of
  types nobody requests; this also drops e.g. memory on nodes where it never binds);
* optionally (`redundant=True`) one cumulative per type over mandatory job intervals with demand
  n_j * a_jr and the system total as capacity: implied by the per-node ones, it gives propagation
  and the fixed search the aggregated (HCP) view before the counts are fixed.

``units`` (the paper's, for model-size and solve-time comparisons with it): per candidate node k
of j, cap_jk = min(fit_jk, n_j) Boolean presences p_jki, each with its own optional fixed-size
interval [s_j, s_j + d_j) (synchronised with the job through the shared start), sum_{k,i} p_jki =
n_j (the k-of-n alternative), and each unit interval demands the constant a_jr in its node's
cumulatives. The running jobs, the skip rule, the redundant cumulative and the objective are the
counts layout's. As in the paper, nothing breaks the symmetry between the interchangeable unit
intervals of one node: any u of them present is the same allocation, which the search may visit
many times; that cost is part of what the layout is kept to measure.

Interval lengths are taken >= 1 even when the front end's clamp is off (as in `greedy` and PCP'20):
a running job holds its nodes now whatever its prediction, so a job planned at 0 really fits now.
The ablation's documented effect of no clamp remains: the horizon (sum of remaining times and
durations) shrinks with underestimated running jobs and can make the instance infeasible.

The model's size grows with the number of candidate nodes per job (with the units that fit on
them in the units layout): that is the point of the comparison with PCP'20, whose size does not
depend on the system size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from .....system import units_fitting
from ... import objectives
from ...built import BuiltModel
from ...greedy import NoStart, greedy_plan
from ...instance import CpJob, Instance, Plan

#: `PerNodeModel` layouts (module doc): unit counts per node, or the paper's unit intervals.
LAYOUTS = ("counts", "units")

#: what a node's cumulative gets from one interval: (interval, demand multiplier, request, most units)
_Entry = tuple[cp_model.IntervalVar, Any, tuple[int, ...], int]
#: a running job's fixed interval with its request and units (for the per-type total cumulative)
_Running = tuple[cp_model.IntervalVar, tuple[int, ...], int]


@dataclass(frozen=True, slots=True)
class NodeUnits:
    """One queued job's units on one candidate node, in either layout, so that the hint, the
    extraction and the search need not know which.

    `terms` sum to the number of units there: (u_jk,) or (b_jk,) (counts), or the unit presences
    (units). `lits[i]` is hinted true iff more than i units are there: b_jk (counts), p_jk(i+1)
    (units: any u present unit intervals are the same allocation, a hint takes the first u).
    `count` is u_jk when the counts layout needs an integer beside b_jk (cap > 1)."""

    node: int
    lits: tuple[cp_model.IntVar, ...]
    count: cp_model.IntVar | None = None

    @property
    def terms(self) -> tuple[cp_model.IntVar, ...]:
        return self.lits if self.count is None else (self.count,)

    def hint(self, model: cp_model.CpModel, used: int) -> None:
        if self.count is not None:
            model.add_hint(self.count, used)
        for i, lit in enumerate(self.lits):
            model.add_hint(lit, int(used > i))


def _counts_on_node(
    m: cp_model.CpModel, job: CpJob, k: int, cap: int, start: cp_model.IntVar, length: int
) -> tuple[NodeUnits, list[_Entry]]:
    """u_jk, b_jk and one optional interval demanding u_jk * a_jr."""
    demand: int | cp_model.IntVar
    if cap == 1:  # the literal is the count; an absent interval demands nothing: constant demand
        b = m.new_bool_var("")
        units, demand = NodeUnits(k, (b,)), 1
    else:
        u = m.new_int_var(0, cap, "")
        b = m.new_bool_var("")
        m.add(u <= cap * b)  # b = 0 -> no unit on k
        m.add(u >= b)  # b = 1 -> at least one unit on k
        units, demand = NodeUnits(k, (b,), u), u
    iv = m.new_optional_fixed_size_interval_var(start, length, b, "")
    return units, [(iv, demand, job.req, cap)]


def _units_on_node(
    m: cp_model.CpModel, job: CpJob, k: int, cap: int, start: cp_model.IntVar, length: int
) -> tuple[NodeUnits, list[_Entry]]:
    """The paper's: `cap` presences, each with its own optional unit interval of constant demand."""
    lits = tuple(m.new_bool_var("") for _ in range(cap))
    ivs = [m.new_optional_fixed_size_interval_var(start, length, p, "") for p in lits]
    return NodeUnits(k, lits), [(iv, 1, job.req, 1) for iv in ivs]


def _unit_caps(base: np.ndarray, jobs: Sequence[CpJob]) -> dict[str, np.ndarray]:
    """Per job: the most units each node may take in the amounts `base` (free now or capacity),
    capped at the job's units (0 = not a candidate)."""
    n_nodes = base.shape[0]
    fit_cache: dict[tuple[tuple[int, ...], bool], np.ndarray] = {}
    out: dict[str, np.ndarray] = {}
    for job in jobs:
        key = (job.req, job.one_per_node)
        fit = fit_cache.get(key)
        if fit is None:
            if any(a > 0 for a in job.req):
                fit = units_fitting(base, *key)  # at most 1 per node for a job spread over nodes
            else:  # a job asking for nothing: any node(s) will do, keep the model small
                fit = np.zeros(n_nodes, dtype=np.int64)
                if job.one_per_node:
                    fit[:job.units] = 1
                else:
                    fit[0] = job.units
            fit_cache[key] = fit
        out[job.id] = np.minimum(fit, job.units)
    return out


def _enough(caps: np.ndarray, units: int) -> bool:
    return int(caps[np.flatnonzero(caps)].sum()) >= units


def candidate_caps(instance: Instance, free_now: bool, plan_blocked: bool = False) -> dict[str, np.ndarray]:
    """Per job that can get its units from its candidate nodes: the most units each node may take
    (0 = not a candidate), from the current free amounts (`free_now`) or the full capacity.

    `plan_blocked`: every job is kept. One that cannot get its units on the nodes with room now
    cannot start now, so `free_now` (which is about the nodes a job starting now can use) leaves it
    nothing to restrict: its candidates are every node at full capacity, as a future start. One
    that fits nowhere keeps its (too few) candidates: the model is then infeasible, as the greedy
    plan is, instead of silently planning fewer jobs."""
    caps = _unit_caps(instance.free if free_now else instance.capacity, instance.jobs)
    short = [j for j in instance.jobs if not _enough(caps[j.id], j.units)]
    if not plan_blocked:
        left_out = {j.id for j in short}
        return {j: c for j, c in caps.items() if j not in left_out}
    if free_now and short:
        caps.update(_unit_caps(instance.capacity, short))
    return caps


class PerNodeModel(BuiltModel):
    """Scheduling + per-node allocation for every queued job of `instance` (see the module doc).

    `free_now`: candidate nodes and per-node caps from the current free amounts (PCP1-3) instead of
    the full capacity (PCP base, Eurora'14). `redundant`: add the per-type total cumulative.
    `layout`: "counts" (unit counts per node) or "units" (the paper's unit intervals).
    `bounds`: extra constraints `objective(kind) <= value` (the 2014 composite objectives).
    `goal=None` posts no objective (feasibility only).

    Jobs that cannot get n_j units from their candidate nodes (with `free_now`: those that cannot
    start now, which PCP1-3's fit-now selection never passes) are left out of the model, listed in
    `dropped`, and never appear in the extracted plan, as in the original ("dropped from the model
    and not dispatched"). `plan_blocked` (the dispatchers', whose `blocked` jobs and queue-order
    selection pass such jobs) keeps them instead, over every node at full capacity, as future
    starts (`candidate_caps`): then every job has a start in the plan.
    """

    def __init__(
        self,
        instance: Instance,
        goal: objectives.Objective | None,
        *,
        free_now: bool = True,
        redundant: bool = True,
        bounds: Mapping[str, int] | None = None,
        layout: str = "counts",
        plan_blocked: bool = False,
    ) -> None:
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
        super().__init__(instance, goal)
        self.free_now = free_now
        self.layout = layout
        #: per job: the most units each node may take (0 = not a candidate), over all nodes
        self.caps = candidate_caps(instance, free_now, plan_blocked)
        self.kept: tuple[CpJob, ...] = tuple(j for j in instance.jobs if j.id in self.caps)
        self.dropped: list[str] = [j.id for j in instance.jobs if j.id not in self.caps]
        self.sub_instance = instance if not self.dropped else replace(instance, jobs=self.kept)
        #: per job: its candidate nodes (node order) with their variables
        self.node_units: dict[str, list[NodeUnits]] = {}
        #: optional intervals of queued jobs: one per candidate node (counts) or per unit (units)
        self.optional_intervals = 0
        self.cumulatives = 0
        self._repaired: Plan | None = None
        on_node: dict[int, list[_Entry]] = {}
        for job in self.kept:
            self._post_job(job, on_node)
        running = self._post_running(on_node)
        self._post_node_cumulatives(on_node)
        if redundant and self.kept:
            self._post_total_cumulatives(running)
        #: the objective minimised (None: feasibility only), then the bounded ones, as posted
        self.goals: list[objectives.Posted] = []
        if goal is not None:
            self.goals.append(goal.post(self.model, instance, self.start_vars, self.kept))
            self.model.minimize(self.goals[0].expression)
        for kind, value in (bounds or {}).items():
            bound = objectives.objective(kind).post(self.model, instance, self.start_vars, self.kept)
            self.model.add(bound.expression <= value)
            self.goals.append(bound)

    # -- the model, part by part ---------------------------------------------------------------------

    def _post_job(self, job: CpJob, on_node: dict[int, list[_Entry]]) -> None:
        """The start of `job`, its units on each candidate node (their intervals go to `on_node`)
        and the k-of-n alternative: as many units in all as the job has."""
        m = self.model
        start = m.new_int_var(0, max(0, self.instance.horizon), f"s_{job.id}")
        self.start_vars[job.id] = start
        on_node_vars = _units_on_node if self.layout == "units" else _counts_on_node
        caps = self.caps[job.id]
        nodes = np.flatnonzero(caps)
        per_node: list[NodeUnits] = []
        for k, cap in zip(nodes.tolist(), caps[nodes].tolist()):
            units, entries = on_node_vars(m, job, k, cap, start, max(1, job.duration))
            on_node.setdefault(k, []).extend(entries)
            self.optional_intervals += len(entries)
            per_node.append(units)
        m.add(cp_model.LinearExpr.sum([t for units in per_node for t in units.terms]) == job.units)
        self.node_units[job.id] = per_node

    def _post_running(self, on_node: dict[int, list[_Entry]]) -> list[_Running]:
        """One fixed interval [0, max(1, remaining)) per running job, with its units on the nodes
        some queued job may use."""
        running: list[_Running] = []
        for r in self.instance.running:
            if not r.alloc.nodes:
                continue
            iv = self.model.new_fixed_size_interval_var(0, max(1, r.remaining), f"run_{r.id}")
            running.append((iv, r.req, r.units))
            for k, c in zip(r.alloc.nodes, r.alloc.counts):
                if k in on_node:
                    on_node[k].append((iv, c, r.req, c))
        return running

    def _post_node_cumulatives(self, on_node: dict[int, list[_Entry]]) -> None:
        """Per node and type, a cumulative, unless the largest possible load fits anyway."""
        capacity = self.instance.capacity
        for k, entries in on_node.items():
            for t in range(capacity.shape[1]):
                users = [(iv, d, req[t], mx) for iv, d, req, mx in entries if req[t] > 0]
                cap_kt = int(capacity[k, t])
                if sum(a * mx for _, _, a, mx in users) <= cap_kt:
                    continue
                self.model.add_cumulative([iv for iv, _, _, _ in users], [d * a for _, d, a, _ in users], cap_kt)
                self.cumulatives += 1

    def _post_total_cumulatives(self, running: list[_Running]) -> None:
        """The redundant per-type cumulative over the whole system (implied by the per-node ones)."""
        m, kept = self.model, self.kept
        job_ivs = [m.new_fixed_size_interval_var(self.start_vars[j.id], max(1, j.duration), "") for j in kept]
        totals = self.instance.capacity.sum(axis=0)
        for t in range(len(totals)):
            ivs = [iv for iv, j in zip(job_ivs, kept) if j.req[t] > 0]
            dem = [j.units * j.req[t] for j in kept if j.req[t] > 0]
            ivs += [iv for iv, req, _ in running if req[t] > 0]
            dem += [units * req[t] for _, req, units in running if req[t] > 0]
            if ivs and sum(dem) > int(totals[t]):
                m.add_cumulative(ivs, dem, int(totals[t]))
                self.cumulatives += 1

    @property
    def counts(self) -> dict[str, list[tuple[int, cp_model.LinearExprT]]]:
        """Per job: its candidate nodes with the number of units there (a variable or a sum)."""
        return {j: [(n.node, cp_model.LinearExpr.sum(list(n.terms))) for n in per_node]
                for j, per_node in self.node_units.items()}

    # -- hooks ---------------------------------------------------------------------------------------

    def add_hint(self, plan: Plan) -> None:
        """Hint every variable from a complete plan (start and node of every unit of every job).

        A plan this model cannot express (with `free_now`, the front end's greedy may place a later
        start on a node that has no room now) is replaced by `restricted_greedy`'s plan, the
        original's first solution (a list schedule over the candidate nodes only)."""
        if not self.consistent(plan):
            if self._repaired is None:
                self._repaired = restricted_greedy(self)
            if self._repaired is not None:
                plan = self._repaired
        m = self.model
        m.clear_hints()
        n_nodes = self.instance.capacity.shape[0]
        for job in self.kept:
            s = plan.starts.get(job.id)
            if s is None:
                continue
            m.add_hint(self.start_vars[job.id], min(max(0, s), max(0, self.instance.horizon)))
            used = np.bincount(np.asarray(plan.nodes.get(job.id, ()), dtype=np.int64), minlength=n_nodes)
            for units in self.node_units[job.id]:
                units.hint(m, int(used[units.node]))
        if all(j.id in plan.starts for j in self.kept):
            for goal in self.goals:
                goal.hint(m, self.instance, plan.starts)

    def consistent(self, plan: Plan) -> bool:
        """Does `plan` give every job a start and at most its cap of units on each node?"""
        for job in self.kept:
            nodes = plan.nodes.get(job.id)
            if job.id not in plan.starts or nodes is None or len(nodes) != job.units:
                return False
            if nodes:
                caps = self.caps[job.id]
                uniq, counts = np.unique(np.asarray(nodes, dtype=np.int64), return_counts=True)
                if uniq[0] < 0 or uniq[-1] >= caps.size or (counts > caps[uniq]).any():
                    return False
        return True

    def extract(self, solver: object) -> Plan:
        """Start of every job in the model and its nodes (node k repeated as many times as it has
        units: u_jk, or the number of its unit intervals present)."""
        value = solver.Value  # type: ignore[attr-defined]
        plan = Plan()
        for job in self.kept:
            plan.starts[job.id] = int(value(self.start_vars[job.id]))
            nodes: list[int] = []
            for units in self.node_units[job.id]:
                nodes.extend([units.node] * sum(int(value(t)) for t in units.terms))
            plan.nodes[job.id] = tuple(nodes)
        return plan

    def add_search(self) -> None:
        """Starts in priority order (earliest possible start first, at its minimum), then the counts
        or unit presences (node order, as many units as possible): the original's list-scheduling
        dive."""
        m = self.model
        starts = [self.start_vars[j.id] for j in self.kept]
        if starts:
            m.add_decision_strategy(starts, cp_model.CHOOSE_LOWEST_MIN, cp_model.SELECT_MIN_VALUE)
        terms = [t for j in self.kept for units in self.node_units[j.id] for t in units.terms]
        if terms:
            m.add_decision_strategy(terms, cp_model.CHOOSE_FIRST, cp_model.SELECT_MAX_VALUE)


def restricted_greedy(built: PerNodeModel) -> Plan | None:
    """The front end's priority-list schedule (`greedy`), restricted to what `built` allows: each
    job at its earliest feasible start, by best fit over its candidate nodes, at most its cap of
    units per node. None if some job finds no start within the horizon."""
    try:
        return greedy_plan(built.instance, built.kept, limits=built.caps, latest=built.instance.horizon)
    except NoStart:
        return None
