"""The papers' objectives as integer linear expressions over start variables (CP-SAT needs
integer coefficients), and the same objectives evaluated on a plan (for the greedy, tests and
the never-worse-than-greedy guarantee).

Scaling: the papers' slowdown sum_j (w_j + s_j + d_j) / d_j is minimised as sum_j c_j * s_j with
c_j proportional to 1 / d_j; the constant part does not change the argmin. The weights are exact
(c_j = L / d_j, L the least common multiple of the instance's durations) whenever L keeps the
objective within CP-SAT's integer range, and otherwise the largest scale S that does, rounded:
each weight is then within a relative d_j / (2 S) of exact (`inverse_weights`). A fixed scale
(the first version: round(10^6 / d)) was off by more than 10% for jobs longer than 2*10^5 s and
weighed every job longer than 6.7*10^5 s the same. EWT-weighted objectives use the same weights
over the EWTs: tardiness max(0, s + w - ewt) / ewt with a tardiness variable per job, and
HCP1/2's waiting weighted by max_ewt / ewt.

Job weights (`CpJob.weight`, 1 in the papers; Slurm's normalised priority under the driver's
`--priority slurm`) multiply each job's term of the slowdown, tardiness, EWT-waiting and late-jobs
objectives; the makespan has no per-job term. With every weight 1 the coefficients are exactly the
papers' (`inverse_weights`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache

from ortools.sat.python import cp_model

from .instance import CpJob, Instance

#: sum(weights) * span stays below this: CP-SAT rejects objectives that may reach about 2^62,
#: and leaves some room for its own sums.
WEIGHT_BUDGET = 2**59

#: Objective names: PCP3/HCP3/PCP'20 slowdown; PCP/PCP1/PCP2 weighted tardiness; HCP1/HCP2
#: EWT-weighted waiting; and the 2014 objectives.
KINDS = ("slowdown", "tardiness", "ewt_wait", "makespan", "late_jobs")


@lru_cache(maxsize=256)
def inverse_weights(values: tuple[int, ...], span: int) -> tuple[int, ...]:
    """Integer weights proportional to 1 / v (v clamped to >= 1) for variables in [0, span]:
    L / v with L = lcm(values) when that fits `WEIGHT_BUDGET`, else round(S / v) with the largest
    S that fits (never below 1)."""
    vs = [max(1, v) for v in values]
    if not vs:
        return ()
    # sum(round(S / v)) * span <= (S * sum(1 / v) + len / 2) * span; 1% slack for the floats
    room = int(0.99 * WEIGHT_BUDGET / (max(1, span) * sum(1 / v for v in vs))) - len(vs)
    lcm = 1
    for v in sorted(set(vs)):
        lcm = math.lcm(lcm, v)
        if lcm > room:
            break
    scale = lcm if lcm <= room else room
    return tuple(max(1, (2 * scale + v) // (2 * v)) for v in vs)


@lru_cache(maxsize=256)
def weighted_inverse_weights(values: tuple[int, ...], factors: tuple[float, ...], span: int) -> tuple[int, ...]:
    """Integer weights proportional to f / v (v clamped to >= 1): `inverse_weights` when every
    factor is 1, else round(S * f / v) with the largest S that fits `WEIGHT_BUDGET` (never below 1)."""
    if all(f == 1 for f in factors):
        return inverse_weights(values, span)
    ratios = [max(0.0, f) / max(1, v) for f, v in zip(factors, values)]
    room = int(0.99 * WEIGHT_BUDGET / (max(1, span) * max(sum(ratios), 1e-300))) - len(ratios)
    return tuple(max(1, round(room * r)) for r in ratios)


def _factors(instance: Instance) -> tuple[float, ...]:
    return tuple(j.weight for j in instance.jobs)


def slowdown_weights(instance: Instance) -> tuple[int, ...]:
    return weighted_inverse_weights(tuple(j.duration for j in instance.jobs), _factors(instance), instance.horizon)


def ewt_weights(instance: Instance) -> tuple[int, ...]:
    """Weights 1 / ewt for the tardiness (whose variables reach horizon + wait) and for HCP's
    EWT-weighted waiting (max_ewt / ewt: the same up to a constant factor)."""
    span = instance.horizon + max((max(0, j.wait) for j in instance.jobs), default=0)
    return weighted_inverse_weights(tuple(j.ewt for j in instance.jobs), _factors(instance), span)


#: Resolution of weighted late-job counts: a job of weight w counts round(w * LATE_SCALE).
LATE_SCALE = 1000


def late_weights(instance: Instance) -> tuple[int, ...]:
    """1 per late job (the 2014 objective), or the job's weight in thousandths when weights differ."""
    factors = _factors(instance)
    if all(f == 1 for f in factors):
        return (1,) * len(factors)
    return tuple(max(1, round(LATE_SCALE * f)) for f in factors)


def evaluate(kind: str, instance: Instance, starts: Mapping[str, int]) -> int:
    """The objective value (as the model computes it) of start times `starts` (relative)."""
    jobs = instance.jobs
    if kind == "slowdown":
        return sum(c * starts[j.id] for c, j in zip(slowdown_weights(instance), jobs))
    if kind == "tardiness":
        return sum(c * max(0, starts[j.id] + j.wait - j.ewt) for c, j in zip(ewt_weights(instance), jobs))
    if kind == "ewt_wait":
        return sum(c * starts[j.id] for c, j in zip(ewt_weights(instance), jobs))
    if kind == "makespan":
        ends = [starts[j.id] + j.duration for j in jobs] + [r.remaining for r in instance.running]
        return max(ends, default=0)
    if kind == "late_jobs":
        return sum(c for c, j in zip(late_weights(instance), jobs) if starts[j.id] + j.wait > j.ewt)
    raise ValueError(f"unknown objective {kind!r} (known: {', '.join(KINDS)})")


def expression(
    kind: str, model: cp_model.CpModel, instance: Instance, start_vars: Mapping[str, cp_model.IntVar],
    jobs: Sequence[CpJob] | None = None,
) -> cp_model.LinearExprT:
    """Post whatever auxiliary variables `kind` needs and return the expression to minimise, over
    `jobs` (default: all the instance's jobs) weighted as in the whole instance, so that bounds
    computed by `evaluate` on the instance keep their scale."""
    h = instance.horizon
    if kind in ("slowdown", "ewt_wait", "tardiness", "late_jobs"):
        weights = {"slowdown": slowdown_weights, "late_jobs": late_weights}.get(kind, ewt_weights)(instance)
        of = dict(zip((j.id for j in instance.jobs), weights))
    jobs = instance.jobs if jobs is None else jobs
    if kind in ("slowdown", "ewt_wait"):
        return cp_model.LinearExpr.weighted_sum([start_vars[j.id] for j in jobs], [of[j.id] for j in jobs])
    if kind == "tardiness":
        terms = []
        for j in jobs:
            t = model.new_int_var(0, max(0, h + j.wait), f"tard_{j.id}")
            model.add(t >= start_vars[j.id] + j.wait - j.ewt)
            terms.append(t)
        return cp_model.LinearExpr.weighted_sum(terms, [of[j.id] for j in jobs])
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
        coefs = [of[j.id] for j in jobs]
        if all(c == 1 for c in coefs):
            return cp_model.LinearExpr.sum(lates)
        return cp_model.LinearExpr.weighted_sum(lates, coefs)
    raise ValueError(f"unknown objective {kind!r} (known: {', '.join(KINDS)})")
