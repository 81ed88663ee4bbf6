"""PCP'19 (CP 2019 paper, Sect. 2.2-4; reference notes 2.1-2.5, 2.9) and its ablation PCP, PCP1-3:
scheduling and per-node allocation in one CP-SAT model. `PerNodeModel` is also the model of the
2014 Eurora dispatcher (`eurora14`).

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
  the PCP base version and the 2014 model do); sum_k u_jk = n_j (the alternative's "exactly n_j");
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

Dispatchers (only these differ, reference notes 2.1):

* `pcp` — every queued job (queue order, `q_length` huge), full node capacity, EWT tardiness, no
  clamp; `time_policy=paper`: 60 s, and 120 s more when the best plan starts nothing now.
* `pcp1` — fit-now selection of up to 100 jobs, EWT priority and tardiness objective, no clamp;
  `time_policy=paper`: 1 -> 16 s doubling, stop on optimum or k = 2 equal values.
* `pcp2` — pcp1 plus the underestimation fix (durations and remaining times >= 1).
* `pcp3` = `pcp19` — slowdown priority and objective.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from ortools.sat.python import cp_model

from ...allocators import best_fit
from ...errors import CpdispatchError
from ...system import units_fitting
from ..base import Option, registered
from . import objectives
from .frontend import CpDispatcher, cp_options
from .greedy import _Profile, profile_kinds
from .instance import BuiltModel, CpJob, Instance, Plan

#: PCP base time policy (notes 2.4): a first solve, then one with a doubled limit when the best
#: plan starts nothing now (the original's bound was 125 s).
PCP_BASE_LIMITS = (60.0, 120.0)

#: `PerNodeModel` layouts (module doc): unit counts per node, or the paper's unit intervals.
LAYOUTS = ("counts", "units")

#: what a node's cumulative gets from one interval: (interval, demand multiplier, request, most units)
_Entry = tuple[cp_model.IntervalVar, Any, tuple[int, ...], int]


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


class PerNodeModel(BuiltModel):
    """Scheduling + per-node allocation for every queued job of `instance` (see the module doc).

    `free_now`: candidate nodes and per-node caps from the current free amounts (PCP1-3) instead of
    the full capacity (PCP base, Eurora'14). `redundant`: add the per-type total cumulative.
    `layout`: "counts" (unit counts per node) or "units" (the paper's unit intervals).
    `bounds`: extra constraints `objective(kind) <= value` (the 2014 composite objectives).
    `objective_kind=None` posts no objective (feasibility only).

    Jobs that cannot get n_j units from their candidate nodes (possible only with `free_now` when
    the front end did not filter them) are left out of the model, listed in `dropped`, and never
    appear in the extracted plan, as in the original ("dropped from the model and not dispatched").
    """

    def __init__(
        self,
        instance: Instance,
        objective_kind: str | None,
        *,
        free_now: bool = True,
        redundant: bool = True,
        bounds: Mapping[str, int] | None = None,
        layout: str = "counts",
    ) -> None:
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, not {layout!r}")
        super().__init__(instance, objective_kind or "")
        m = self.model
        horizon = max(0, instance.horizon)
        base = instance.free if free_now else instance.capacity
        capacity = instance.capacity
        n_nodes, n_types = capacity.shape
        self.free_now = free_now
        self.layout = layout
        on_node_vars = _units_on_node if layout == "units" else _counts_on_node

        #: per job: its candidate nodes (node order) with their variables
        self.node_units: dict[str, list[NodeUnits]] = {}
        #: optional intervals of queued jobs: one per candidate node (counts) or per unit (units)
        self.optional_intervals = 0
        #: per job: the most units each node may take (0 = not a candidate), over all nodes
        self.caps: dict[str, np.ndarray] = {}
        self.dropped: list[str] = []
        self._repaired: Plan | None = None

        on_node: dict[int, list[_Entry]] = {}
        fit_cache: dict[tuple[tuple[int, ...], bool], np.ndarray] = {}
        kept: list[CpJob] = []
        for job in instance.jobs:
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
            caps = np.minimum(fit, job.units)
            nodes = np.flatnonzero(caps)
            if int(caps[nodes].sum()) < job.units:
                self.dropped.append(job.id)
                continue
            kept.append(job)
            self.caps[job.id] = caps
            start = m.new_int_var(0, horizon, f"s_{job.id}")
            self.start_vars[job.id] = start
            length = max(1, job.duration)
            per_node: list[NodeUnits] = []
            for k, cap in zip(nodes.tolist(), caps[nodes].tolist()):
                units, entries = on_node_vars(m, job, k, cap, start, length)
                on_node.setdefault(k, []).extend(entries)
                self.optional_intervals += len(entries)
                per_node.append(units)
            m.add(cp_model.LinearExpr.sum([t for units in per_node for t in units.terms]) == job.units)
            self.node_units[job.id] = per_node
        self.kept: tuple[CpJob, ...] = tuple(kept)

        # running jobs: one fixed interval [0, max(1, remaining)) each, with their units per node
        running: list[tuple[cp_model.IntervalVar, tuple[int, ...], int]] = []
        for r in instance.running:
            if not r.alloc.nodes:
                continue
            iv = m.new_fixed_size_interval_var(0, max(1, r.remaining), f"run_{r.id}")
            running.append((iv, r.req, r.units))
            for k, c in zip(r.alloc.nodes, r.alloc.counts):
                if k in on_node:
                    on_node[k].append((iv, c, r.req, c))

        # per node and type: a cumulative, unless the largest possible load fits anyway
        self.cumulatives = 0
        for k, entries in on_node.items():
            for t in range(n_types):
                users = [(iv, d, req[t], mx) for iv, d, req, mx in entries if req[t] > 0]
                cap_kt = int(capacity[k, t])
                if sum(a * mx for _, _, a, mx in users) <= cap_kt:
                    continue
                m.add_cumulative([iv for iv, _, _, _ in users], [d * a for _, d, a, _ in users], cap_kt)
                self.cumulatives += 1

        # redundant per-type cumulative over the whole system
        if redundant and kept:
            job_ivs = [m.new_fixed_size_interval_var(self.start_vars[j.id], max(1, j.duration), "") for j in kept]
            totals = capacity.sum(axis=0)
            for t in range(n_types):
                ivs = [iv for iv, j in zip(job_ivs, kept) if j.req[t] > 0]
                dem = [j.units * j.req[t] for j in kept if j.req[t] > 0]
                ivs += [iv for iv, req, _ in running if req[t] > 0]
                dem += [units * req[t] for _, req, units in running if req[t] > 0]
                if ivs and sum(dem) > int(totals[t]):
                    m.add_cumulative(ivs, dem, int(totals[t]))
                    self.cumulatives += 1

        # objective (and the composite bounds) over the jobs in the model
        first_aux = len(m.proto.variables)
        self.sub_instance = instance if not self.dropped else _with_jobs(instance, self.kept)
        self.objective: cp_model.LinearExprT | None = None
        if objective_kind:
            self.objective = objectives.expression(objective_kind, m, instance, self.start_vars, self.kept)
            m.minimize(self.objective)
        for kind, value in (bounds or {}).items():
            m.add(objectives.expression(kind, m, instance, self.start_vars, self.kept) <= value)
        self._aux = list(range(first_aux, len(m.proto.variables)))

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
            self._hint_aux(plan.starts)

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

    def _hint_aux(self, starts: Mapping[str, int]) -> None:
        """Hint the objective's auxiliary variables (named by `objectives.expression`)."""
        by_id = {j.id: j for j in self.kept}
        makespan = objectives.evaluate("makespan", self.sub_instance, starts)
        for index in self._aux:
            var = self.model.get_int_var_from_proto_index(index)
            name = var.name
            if name == "makespan":
                self.model.add_hint(var, makespan)
            elif name.startswith("tard_") and name[5:] in by_id:
                j = by_id[name[5:]]
                self.model.add_hint(var, max(0, starts[j.id] + j.wait - j.ewt))
            elif name.startswith("late_") and name[5:] in by_id:
                j = by_id[name[5:]]
                self.model.add_hint(var, int(starts[j.id] + j.wait > j.ewt))

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
    inst = built.instance
    kinds = profile_kinds(inst, built.kept)
    weights = None if inst.weights is None else inst.weights[kinds]
    prof = _Profile(inst, kinds)
    plan = Plan()
    for job in built.kept:
        req = tuple(job.req[k] for k in kinds)
        vec = np.asarray(req, dtype=np.int64)
        d = max(1, job.duration)
        caps = built.caps[job.id]
        for i, cand, low in prof.windows(req, job.units, d, job.one_per_node):
            if prof.times[i] > inst.horizon:
                return None
            allowed = caps[cand]
            keep = allowed > 0
            cand, low, allowed = cand[keep], low[keep], allowed[keep]
            low = np.where(vec > 0, np.minimum(low, allowed[:, None] * vec), low)  # at most `cap` units
            picked = best_fit(low, prof.capacity[cand], req, job.units, weights, job.one_per_node)
            if picked is None:
                continue
            nodes = tuple(cand[list(picked)].tolist()) if picked else ()
            # materialise the segment at the job's end first: `_Profile.occupy` only subtracts from
            # existing segments, and a later one derived lazily would inherit the job's usage
            prof.array(min(bisect_left(prof.times, prof.times[i] + d), len(prof.times) - 1))
            prof.occupy(prof.times[i], d, nodes, req)
            plan.starts[job.id] = prof.times[i]
            plan.nodes[job.id] = nodes
            break
        else:
            return None
    return plan


def _with_jobs(instance: Instance, jobs: tuple[CpJob, ...]) -> Instance:
    return replace(instance, jobs=jobs)


# -- dispatchers ---------------------------------------------------------------------------------

_REDUNDANT = Option("redundant", True, "add the per-type total cumulative (implied) to the per-node model")
_FREE_NOW = Option("free_now", True, "queued jobs only on nodes with room now (the original's restriction)")
_FULL_CAPACITY = Option("free_now", False, "queued jobs only on nodes with room now (PCP1-3's restriction)")
def check_layout(dispatcher: str, layout: str) -> None:
    """A dispatcher's `layout` option, checked when it is built (not at its first model)."""
    if layout not in LAYOUTS:
        raise CpdispatchError(f"dispatcher {dispatcher}: layout must be one of {', '.join(LAYOUTS)}")


LAYOUT = Option("layout", "counts", "counts (unit counts per node) | units (the CP'19 paper's layout: one "
                                     "optional interval per unit that fits on each node; size grows with "
                                     "units x nodes)")


class PerNodeDispatcher(CpDispatcher):
    """CP'19 PCP family: the front end with `PerNodeModel`. `free_now` (option) restricts queued
    jobs to the nodes with room now (PCP1-3, the original); false lets plans use every node.
    `layout=units` builds the paper's model instead of the counts (same plans, larger model)."""

    objective_kind = "tardiness"
    options = cp_options(clamp=False, priority="ewt") + (_FREE_NOW, _REDUNDANT, LAYOUT)
    free_now: bool
    redundant: bool
    layout: str

    def __init__(self, **values: Any) -> None:
        super().__init__(**values)
        check_layout(self.name, self.layout)

    def build(self, instance: Instance) -> BuiltModel:
        return PerNodeModel(instance, self.objective_kind, free_now=self.free_now, redundant=self.redundant,
                            layout=self.layout)


@registered()
class Pcp(PerNodeDispatcher):
    name = "pcp"
    summary = "PCP base (CP'19 ablation): every queued job, full node capacity, EWT tardiness, no clamp"
    selection = "queue"
    paper_policy = "pcp-base"
    paper_search = "portfolio"
    options = cp_options(q_length=1_000_000_000, clamp=False, priority="ewt") + (_FULL_CAPACITY, _REDUNDANT, LAYOUT)

    def run_policy(self, built: BuiltModel, greedy: Plan | None) -> tuple[Plan | None, bool, bool]:
        """`time_policy=paper`: 60 s; when the best plan starts nothing now, 120 s more (notes 2.4).
        The retry is skipped when the first solve proved optimality or infeasibility (it would
        return the same plan). `limit_scale` and deterministic-time limits apply as elsewhere."""
        if self.policy != "pcp-base":
            return super().run_policy(built, greedy)
        best: Plan | None = None
        best_obj: int | None = None
        optimal = False
        for seconds in PCP_BASE_LIMITS:
            hint = (best or greedy) if self.hint else None
            status, plan = self.solve_once(built, hint, *self.solve_limits(seconds))
            if plan is not None:
                obj = objectives.evaluate(self.objective_kind, built.instance, plan.starts)
                if best_obj is None or obj < best_obj:
                    best, best_obj = plan, obj
            optimal = status == cp_model.OPTIMAL
            if optimal or status in (cp_model.INFEASIBLE, cp_model.MODEL_INVALID):
                break
            if best is not None and 0 in best.starts.values():
                break
        solved = best is not None and 0 in best.starts.values()
        return best, optimal, solved


@registered()
class Pcp1(PerNodeDispatcher):
    name = "pcp1"
    summary = "PCP1: fit-now selection (q_length 100), EWT priority and tardiness, no clamp"
    paper_search = "portfolio"


@registered()
class Pcp2(PerNodeDispatcher):
    name = "pcp2"
    summary = "PCP2: PCP1 plus the underestimation fix (durations and remaining times >= 1)"
    paper_search = "portfolio"
    options = cp_options(clamp=True, priority="ewt") + (_FREE_NOW, _REDUNDANT, LAYOUT)


@registered("pcp19")
class Pcp3(PerNodeDispatcher):
    name = "pcp3"
    summary = "PCP'19 (= PCP3): slowdown priority and objective, per-node allocation in CP"
    objective_kind = "slowdown"
    options = cp_options(clamp=True, priority="slowdown") + (_FREE_NOW, _REDUNDANT, LAYOUT)

