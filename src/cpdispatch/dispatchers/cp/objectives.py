"""The papers' objectives as integer linear expressions over start variables (CP-SAT needs
integer coefficients), and the same objectives evaluated on a plan (for the greedy, tests and
the never-worse-than-greedy guarantee).

Scaling: the papers' slowdown sum_j (w_j + s_j + d_j) / d_j is minimised as sum_j c_j * s_j with
c_j = round(SCALE / d_j); the constant part does not change the argmin. Tardiness
max(0, (s + w - ewt) / ewt) uses a tardiness variable per job weighted by round(SCALE / ewt).
"""

from __future__ import annotations

from collections.abc import Mapping

from ortools.sat.python import cp_model

from .instance import CpJob, Instance

SCALE = 1_000_000

#: Objective names: PCP3/HCP3/PCP'20 slowdown; PCP/PCP1/PCP2 weighted tardiness; HCP1/HCP2
#: EWT-weighted waiting; and the 2014 objectives.
KINDS = ("slowdown", "tardiness", "ewt_wait", "makespan", "late_jobs")


def slowdown_weight(job: CpJob) -> int:
    return max(1, round(SCALE / max(1, job.duration)))


def ewt_weight(job: CpJob) -> int:
    return max(1, round(SCALE / max(1, job.ewt)))


def max_ewt_weight(job: CpJob, max_ewt: int) -> int:
    return max(1, round(SCALE * max_ewt / max(1, job.ewt)))


def evaluate(kind: str, instance: Instance, starts: Mapping[str, int]) -> int:
    """The objective value (as the model computes it) of start times `starts` (relative)."""
    jobs = instance.jobs
    if kind == "slowdown":
        return sum(slowdown_weight(j) * starts[j.id] for j in jobs)
    if kind == "tardiness":
        return sum(ewt_weight(j) * max(0, starts[j.id] + j.wait - j.ewt) for j in jobs)
    if kind == "ewt_wait":
        m = max((j.ewt for j in jobs), default=1)
        return sum(max_ewt_weight(j, m) * starts[j.id] for j in jobs)
    if kind == "makespan":
        ends = [starts[j.id] + j.duration for j in jobs] + [r.remaining for r in instance.running]
        return max(ends, default=0)
    if kind == "late_jobs":
        return sum(1 for j in jobs if starts[j.id] + j.wait > j.ewt)
    raise ValueError(f"unknown objective {kind!r} (known: {', '.join(KINDS)})")


def expression(
    kind: str, model: cp_model.CpModel, instance: Instance, start_vars: Mapping[str, cp_model.IntVar]
) -> cp_model.LinearExprT:
    """Post whatever auxiliary variables `kind` needs and return the expression to minimise."""
    jobs = instance.jobs
    h = instance.horizon
    if kind == "slowdown":
        return cp_model.LinearExpr.weighted_sum(
            [start_vars[j.id] for j in jobs], [slowdown_weight(j) for j in jobs]
        )
    if kind == "ewt_wait":
        m = max((j.ewt for j in jobs), default=1)
        return cp_model.LinearExpr.weighted_sum(
            [start_vars[j.id] for j in jobs], [max_ewt_weight(j, m) for j in jobs]
        )
    if kind == "tardiness":
        terms, weights = [], []
        for j in jobs:
            t = model.new_int_var(0, max(0, h + j.wait), f"tard_{j.id}")
            model.add(t >= start_vars[j.id] + j.wait - j.ewt)
            terms.append(t)
            weights.append(ewt_weight(j))
        return cp_model.LinearExpr.weighted_sum(terms, weights)
    if kind == "makespan":
        lower = max((r.remaining for r in instance.running), default=0)
        mk = model.new_int_var(lower, h + max((j.duration for j in jobs), default=0), "makespan")
        for j in jobs:
            model.add(mk >= start_vars[j.id] + j.duration)
        return mk
    if kind == "late_jobs":
        lates = []
        for j in jobs:
            late = model.new_bool_var(f"late_{j.id}")
            # late <=> s + w > ewt; only the direction that the minimisation needs is posted
            model.add(start_vars[j.id] + j.wait <= j.ewt).only_enforce_if(~late)
            lates.append(late)
        return cp_model.LinearExpr.sum(lates)
    raise ValueError(f"unknown objective {kind!r} (known: {', '.join(KINDS)})")
