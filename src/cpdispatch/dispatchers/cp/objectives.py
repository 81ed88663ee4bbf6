"""The papers' objectives as integer linear expressions over start variables (CP-SAT needs
integer coefficients), and the same objectives evaluated on a plan (for the greedy, tests and
the never-worse-than-greedy guarantee). Each is one `Objective` (`objective(kind)`), held by the
dispatchers that minimise it: it posts its expression and helper variables into a model (`Posted`,
which hints those helpers from a plan) and evaluates a plan.

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
from dataclasses import dataclass, field
from functools import lru_cache

from ortools.sat.python import cp_model

from .instance import CpJob, Instance, Plan

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


class Objective:
    """One objective: its expression over a model's start variables (`post`, with whatever helper
    variables it needs), its value on a plan (`value`), and the hint of its helpers from a plan
    (`Posted.hint`). Stateless: a dispatcher holds one, and each model keeps what `post` returns."""

    kind = ""

    def weights(self, instance: Instance) -> tuple[int, ...]:
        """Each job's integer coefficient (in `instance.jobs` order)."""
        raise NotImplementedError

    def post(
        self, model: cp_model.CpModel, instance: Instance, start_vars: Mapping[str, cp_model.IntVar],
        jobs: Sequence[CpJob] | None = None,
    ) -> Posted:
        """Post the helper variables and the expression to minimise over `jobs` (default: the
        instance's), weighted as in the whole instance so that bounds computed by `value` on the
        instance keep their scale."""
        posted = Posted(self, instance.jobs if jobs is None else tuple(jobs))
        posted.expression = self._post(model, instance, start_vars, posted)
        return posted

    def _post(
        self, model: cp_model.CpModel, instance: Instance, start_vars: Mapping[str, cp_model.IntVar], posted: Posted
    ) -> cp_model.LinearExprT:
        raise NotImplementedError

    def value(self, instance: Instance, plan: Mapping[str, int] | Plan) -> int:
        """The value (as the model computes it) of a plan, or of the start times (relative) of
        every job."""
        return self._value(instance, plan.starts if isinstance(plan, Plan) else plan)

    def _value(self, instance: Instance, starts: Mapping[str, int]) -> int:
        raise NotImplementedError

    def hint(self, posted: Posted, model: cp_model.CpModel, instance: Instance, starts: Mapping[str, int]) -> None:
        for var, job in posted.helpers:
            model.add_hint(var, self._helper_value(job, starts[job.id]))

    def _helper_value(self, job: CpJob, start: int) -> int:
        raise NotImplementedError

    def _coefficients(self, instance: Instance, jobs: Sequence[CpJob]) -> list[int]:
        of = dict(zip((j.id for j in instance.jobs), self.weights(instance)))
        return [of[j.id] for j in jobs]


@dataclass
class Posted:
    """An objective as posted into one model: its expression, the jobs it covers and its helper
    variables (named, e.g. ``tard_<id>``, for reading a model; nothing reads the names back)."""

    objective: Objective
    jobs: tuple[CpJob, ...]
    expression: cp_model.LinearExprT = 0
    helpers: list[tuple[cp_model.IntVar, CpJob]] = field(default_factory=list)
    var: cp_model.IntVar | None = None  # the makespan's one helper

    def hint(self, model: cp_model.CpModel, instance: Instance, starts: Mapping[str, int]) -> None:
        """Hint the helper variables from `starts` (a start for each posted job)."""
        self.objective.hint(self, model, instance, starts)


class _WeightedStarts(Objective):
    """sum_j c_j * s_j: no helper variable."""

    def _post(
        self, model: cp_model.CpModel, instance: Instance, start_vars: Mapping[str, cp_model.IntVar], posted: Posted
    ) -> cp_model.LinearExprT:
        return cp_model.LinearExpr.weighted_sum([start_vars[j.id] for j in posted.jobs],
                                                self._coefficients(instance, posted.jobs))

    def _value(self, instance: Instance, starts: Mapping[str, int]) -> int:
        return sum(c * starts[j.id] for c, j in zip(self.weights(instance), instance.jobs))


class Slowdown(_WeightedStarts):
    """PCP3/HCP3/PCP'20: the total slowdown, up to a constant."""

    kind = "slowdown"

    def weights(self, instance: Instance) -> tuple[int, ...]:
        return slowdown_weights(instance)


class EwtWait(_WeightedStarts):
    """HCP1/HCP2: the waiting weighted by 1 / ewt."""

    kind = "ewt_wait"

    def weights(self, instance: Instance) -> tuple[int, ...]:
        return ewt_weights(instance)


class Tardiness(Objective):
    """PCP/PCP1/PCP2: sum_j c_j * max(0, s_j + w_j - ewt_j), one helper t_j >= s_j + w_j - ewt_j each."""

    kind = "tardiness"

    def weights(self, instance: Instance) -> tuple[int, ...]:
        return ewt_weights(instance)

    def _post(
        self, model: cp_model.CpModel, instance: Instance, start_vars: Mapping[str, cp_model.IntVar], posted: Posted
    ) -> cp_model.LinearExprT:
        for j in posted.jobs:
            t = model.new_int_var(0, max(0, instance.horizon + j.wait), f"tard_{j.id}")
            model.add(t >= start_vars[j.id] + j.wait - j.ewt)
            posted.helpers.append((t, j))
        return cp_model.LinearExpr.weighted_sum([t for t, _ in posted.helpers],
                                                self._coefficients(instance, posted.jobs))

    def _value(self, instance: Instance, starts: Mapping[str, int]) -> int:
        return sum(c * self._helper_value(j, starts[j.id]) for c, j in zip(self.weights(instance), instance.jobs))

    def _helper_value(self, job: CpJob, start: int) -> int:
        return max(0, start + job.wait - job.ewt)


class LateJobs(Objective):
    """Eurora'14: the (weighted) number of jobs that start after their EWT, one literal each."""

    kind = "late_jobs"

    def weights(self, instance: Instance) -> tuple[int, ...]:
        return late_weights(instance)

    def _post(
        self, model: cp_model.CpModel, instance: Instance, start_vars: Mapping[str, cp_model.IntVar], posted: Posted
    ) -> cp_model.LinearExprT:
        for j in posted.jobs:
            late = model.new_bool_var(f"late_{j.id}")
            # late <=> s + w > ewt; only the direction that the minimisation needs is posted
            model.add(start_vars[j.id] + j.wait <= j.ewt).only_enforce_if(~late)
            posted.helpers.append((late, j))
        lates = [late for late, _ in posted.helpers]
        coefs = self._coefficients(instance, posted.jobs)
        if all(c == 1 for c in coefs):
            return cp_model.LinearExpr.sum(lates)
        return cp_model.LinearExpr.weighted_sum(lates, coefs)

    def _value(self, instance: Instance, starts: Mapping[str, int]) -> int:
        return sum(c for c, j in zip(self.weights(instance), instance.jobs) if self._helper_value(j, starts[j.id]))

    def _helper_value(self, job: CpJob, start: int) -> int:
        return int(start + job.wait > job.ewt)


class Makespan(Objective):
    """Eurora'14: the last end, running jobs included; one helper, no per-job weight."""

    kind = "makespan"

    def _post(
        self, model: cp_model.CpModel, instance: Instance, start_vars: Mapping[str, cp_model.IntVar], posted: Posted
    ) -> cp_model.LinearExprT:
        lower = max((r.remaining for r in instance.running), default=0)
        upper = instance.horizon + max((j.duration for j in posted.jobs), default=0)
        posted.var = mk = model.new_int_var(lower, upper, "makespan")
        for j in posted.jobs:
            model.add(mk >= start_vars[j.id] + j.duration)
        return mk

    def _value(self, instance: Instance, starts: Mapping[str, int]) -> int:
        return _last_end(instance.jobs, instance, starts)

    def hint(self, posted: Posted, model: cp_model.CpModel, instance: Instance, starts: Mapping[str, int]) -> None:
        if posted.var is not None:
            model.add_hint(posted.var, _last_end(posted.jobs, instance, starts))


def _last_end(jobs: Sequence[CpJob], instance: Instance, starts: Mapping[str, int]) -> int:
    ends = [starts[j.id] + j.duration for j in jobs] + [r.remaining for r in instance.running]
    return max(ends, default=0)


#: each objective, by `kind` (stateless: one object serves every model)
OBJECTIVES: dict[str, Objective] = {o.kind: o for o in (Slowdown(), Tardiness(), EwtWait(), Makespan(), LateJobs())}
SLOWDOWN, TARDINESS, EWT_WAIT, MAKESPAN = (OBJECTIVES[k] for k in ("slowdown", "tardiness", "ewt_wait", "makespan"))


def objective(kind: str) -> Objective:
    """The objective `kind` (one of `KINDS`)."""
    found = OBJECTIVES.get(kind)
    if found is None:
        raise ValueError(f"unknown objective {kind!r} (known: {', '.join(KINDS)})")
    return found
