"""HCP'19's model (CP 2019 paper, Sect. 2.2-3; reference notes 2.6): the scheduling half of the
hybrid. One cumulative per resource type on the system total, node boundaries ignored; the jobs it
plans at 0 are placed afterwards (`dispatcher`)."""

from __future__ import annotations

from ortools.sat.python import cp_model

from ...built import BuiltModel
from ...instance import Instance, Plan
from ...objectives import Objective


class HcpModel(BuiltModel):
    """One interval per job; running jobs fixed at [0, remaining) and postponed jobs at
    [horizon - d, horizon); a cumulative per requested type on the system total. A running job
    whose remaining time is <= 0 (no clamp) holds nothing."""

    def __init__(self, instance: Instance, goal: Objective) -> None:
        super().__init__(instance, goal)
        m, h = self.model, instance.horizon
        totals = instance.system.totals
        kinds = [k for k in range(len(totals)) if any(j.req[k] > 0 for j in instance.jobs + instance.postponed)]
        demands: dict[int, list[int]] = {k: [] for k in kinds}
        intervals: list[cp_model.IntervalVar] = []
        for r in instance.running:
            if r.remaining > 0 and any(r.req[k] > 0 for k in kinds):
                intervals.append(m.new_fixed_size_interval_var(0, r.remaining, f"run_{r.id}"))
                for k in kinds:
                    demands[k].append(r.units * r.req[k])
        for p in instance.postponed:
            if p.duration > 0:
                intervals.append(m.new_fixed_size_interval_var(h - p.duration, p.duration, f"postponed_{p.id}"))
                for k in kinds:
                    demands[k].append(p.units * p.req[k])
        for j in instance.jobs:
            s = m.new_int_var(0, h, f"s_{j.id}")
            self.start_vars[j.id] = s
            intervals.append(m.new_fixed_size_interval_var(s, max(0, j.duration), f"job_{j.id}"))
            for k in kinds:
                demands[k].append(j.units * j.req[k])
        for k in kinds:
            pairs = [(iv, d) for iv, d in zip(intervals, demands[k]) if d > 0]
            m.add_cumulative([iv for iv, _ in pairs], [d for _, d in pairs], totals[k])
        m.minimize(goal.post(m, instance, self.start_vars).expression)

    def add_hint(self, plan: Plan) -> None:
        h = self.instance.horizon
        for job_id, var in self.start_vars.items():
            if job_id in plan.starts:
                self.model.add_hint(var, min(max(0, plan.starts[job_id]), h))

    def extract(self, solver: object) -> Plan:
        value = solver.value  # type: ignore[attr-defined]
        return Plan(starts={j: int(value(v)) for j, v in self.start_vars.items()})

    def add_search(self) -> None:
        """The custom search of the CP'19 code: earliest start first, ties by priority order."""
        self.model.add_decision_strategy(
            [self.start_vars[j.id] for j in self.instance.jobs],
            cp_model.CHOOSE_LOWEST_MIN,
            cp_model.SELECT_MIN_VALUE,
        )
