"""The variables of one queued job in PCP'20's model, and the constraints among them.

*Scheduling (PCP'19, Section 2.2).* A start ``s_j`` in ``[0, eoh]`` and a fixed-size interval of
the expected duration ``d_j`` (>= 1 even with the clamp off: a job planned at 0 must really fit).

*"The allocation of a unit j of a job i on a resource type r is represented as a box"* with origin
``(s(tau_i), y_{i,r,j})`` and size ``(d_i, req_{i,r}/rn_i)``: one position variable ``y`` per
(unit, requested type); the box's x side is the job's interval, shared by all its boxes. One node
variable ``v`` per unit when it requests several types or an amount > 1, linked to its positions
through the pieces of its `UnitGeometry` (one Boolean per piece when there are several,
``AddExactlyOne``). A fluid job (units of 1 on a fluid type) has no allocation variables.

*"all different([y_{i,r,j}])"* over the units of a job. Default: the stronger symmetry breaking
``y_{i,r,j} + a <= y_{i,r,j+1}`` per type (and ``v_j <= v_{j+1}``), also as domain bounds: the
units of a job are identical and share their interval, so within a node their boxes can be
permuted per type. Several units may share a node. ``all_different`` posts the paper's
``AddAllDifferent`` instead.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from ortools.sat.python import cp_model

from ...instance import CpJob
from ...objectives import Objective
from .axes import UnitGeometry, spread


@dataclass(frozen=True)
class JobShape:
    """A queued job with the geometry of its units, before any variable: what the greedy plan
    and the fluid placement need. `fluid`: units of 1 on a fluid type (no allocation variables)."""

    job: CpJob
    geo: UnitGeometry
    fluid: bool


@dataclass
class JobVars:
    job: CpJob
    geo: UnitGeometry
    start: cp_model.IntVar
    interval: cp_model.IntervalVar
    positions: list[list[cp_model.IntVar]]  # [unit][requested type] (empty for a fluid job)
    nodes: list[cp_model.IntVar]  # [unit] (empty when the node is decoded from the position)
    pieces: list[list[cp_model.IntVar]]  # [unit][piece] (empty with a single piece)
    fluid: bool = False  # units of 1 on a fluid type: no positions, nodes found after solving


def post_job(
    m: cp_model.CpModel, job: CpJob, geo: UnitGeometry, horizon: int, fluid: bool, *,
    all_different: bool, sparse_domains: bool,
) -> JobVars:
    """The job's start and interval and, unless it is `fluid`, its units' positions, node
    variables and piece literals, linked and ordered."""
    s = m.new_int_var(0, horizon, f"s_{job.id}")
    x = m.new_fixed_size_interval_var(s, max(1, job.duration), f"x_{job.id}")
    jv = JobVars(job, geo, s, x, [], [], [], fluid=fluid)
    if fluid:
        return jv
    ordered = not all_different and job.units > 1
    domains = geo.sparse_domains if sparse_domains else geo.position_domains
    node_var = geo.node_var or spread(job)  # distinct nodes are said on node variables
    for i in range(job.units):
        ys = []
        for t, a, dom in zip(geo.types, geo.amounts, domains):
            if ordered:  # y_0 + i*a <= y_i <= y_last - (units-1-i)*a, posted up front
                dom = dom.intersection_with(cp_model.Domain(dom.min() + i * a, dom.max() - (job.units - 1 - i) * a))
            ys.append(m.new_int_var_from_domain(dom, f"y_{job.id}_{i}_{t}"))
        jv.positions.append(ys)
        if node_var:
            v = m.new_int_var_from_domain(geo.node_domain, f"v_{job.id}_{i}")
            jv.nodes.append(v)
            jv.pieces.append(_link(m, geo, v, ys, f"{job.id}_{i}"))
    _order_units(m, jv, all_different)
    return jv


def _link(
    m: cp_model.CpModel, geo: UnitGeometry, v: cp_model.IntVar, ys: list[cp_model.IntVar], name: str
) -> list[cp_model.IntVar]:
    """first_r(v) <= y_r <= last_r(v) - a_r + 1 for every requested type (same node, no
    straddling); the piece literals when there are several pieces."""
    if len(geo.pieces) == 1:
        p = geo.pieces[0]
        for n, y in enumerate(ys):
            m.add_linear_constraint(y - p.slope[n] * v, p.lo[n], p.hi[n])
        return []
    lits = [m.new_bool_var(f"p_{name}_{k}") for k in range(len(geo.pieces))]
    m.add_exactly_one(lits)
    for p, lit in zip(geo.pieces, lits):
        m.add_linear_constraint(v, p.start, p.end).only_enforce_if(lit)
        for n, y in enumerate(ys):
            m.add_linear_constraint(y - p.slope[n] * v, p.lo[n], p.hi[n]).only_enforce_if(lit)
    return lits


def _order_units(m: cp_model.CpModel, jv: JobVars, all_different: bool) -> None:
    """Ordered units (or the paper's all-different); distinct nodes for a spread job."""
    if jv.job.units < 2:
        return
    for n, a in enumerate(jv.geo.amounts):
        column = [ys[n] for ys in jv.positions]
        if all_different:
            m.add_all_different(column)
        else:
            for y1, y2 in itertools.pairwise(column):
                m.add(y1 + a <= y2)
    if spread(jv.job):  # one unit per node (Slurm's -N): v_j < v_{j+1}, or all different
        if all_different:
            m.add_all_different(jv.nodes)
        else:
            for v1, v2 in itertools.pairwise(jv.nodes):
                m.add(v1 + 1 <= v2)
    elif not all_different:
        for v1, v2 in itertools.pairwise(jv.nodes):
            m.add(v1 <= v2)


def break_job_symmetry(m: cp_model.CpModel, jobs: list[JobVars], goal: Objective) -> None:
    """Identical queued jobs (same units, request, duration, weight and, unless the objective is
    the slowdown, same wait and EWT) are interchangeable: start them in priority order, so that
    CP-SAT's own symmetry breaking does not pick another order than the hint's (the greedy plan,
    which always starts identical jobs in priority order)."""
    last: dict[tuple[object, ...], cp_model.IntVar] = {}
    for jv in jobs:
        j = jv.job
        key: tuple[object, ...] = (j.units, j.req, max(1, j.duration), j.one_per_node, j.weight)
        if goal.kind != "slowdown":
            key += (j.wait, j.ewt)
        if key in last:
            m.add(last[key] <= jv.start)
        last[key] = jv.start
