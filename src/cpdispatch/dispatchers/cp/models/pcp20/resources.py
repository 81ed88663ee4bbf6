"""The resource constraints of PCP'20's model, one type at a time (the data: `running.TypeLoad`).

*"diffn([s], [d], [y], [req/rn])" for each r*: one ``AddNoOverlap2D`` per type over the queued
units' boxes and the running jobs' fixed boxes. *Implied cumulative "cumulative([s], [d],
[req/rn], Tcap_r)"*: one ``AddCumulative`` per type over the job intervals with demand ``units *
a`` plus the running jobs (grouped by remaining time), with the capacity of the nodes some queued
job may use for that type (a valid relaxation of the NoOverlap2D); on a fluid type it is the
only constraint, and exact. The paper's second implied cumulative ("cumulative([y], [req/rn], [s],
eoh)") is not posted: CP-SAT's NoOverlap2D already reasons on energy in both dimensions, and its
bound ``eoh`` is too weak to prune. Types that no queued job requests are skipped entirely (they
cannot conflict).
"""

from __future__ import annotations

from collections.abc import Sequence

from ortools.sat.python import cp_model

from .job_vars import JobVars
from .running import TypeLoad


def add_no_overlap_2d(
    m: cp_model.CpModel, xs: list[cp_model.IntervalVar], ys: list[cp_model.IntervalVar], fixed_boxes: bool,
    axis_length: int,
) -> cp_model.IntVar | None:
    """`AddNoOverlap2D`, plus, when some boxes are fixed (running jobs), a zero-area box whose
    bounding rectangle crosses all of them; returns its position variable (to hint at -1).

    Why: CP-SAT re-presolves the fixed boxes of a NoOverlap2D whenever its search is back at
    decision level 0, unless some box of the constraint has zero area, and each such pass drops
    the boxes whose bounding rectangle overlaps no other; with a few hundred running boxes that
    took far longer than any time limit (docs/pcp20-notes.md). Hence a box of width 0 at time 1
    and height 1 at position -1 or ``axis_length``: either way off the axis, so it constrains
    nothing (a zero-width box *inside* another one's time span does conflict with it in CP-SAT),
    while its bounding rectangle spans the axis and meets every running box that lasts >= 2.
    `hint_conflict_limit` = 0 (`Pcp20Model.solver_parameters`) also avoids the hint-following
    phase's return to level 0 after each conflict."""
    if not fixed_boxes:
        m.add_no_overlap_2d(xs, ys)
        return None
    y = m.new_int_var_from_domain(cp_model.Domain.from_values([-1, axis_length]), "zero_area_y")
    m.add_no_overlap_2d([*xs, m.new_fixed_size_interval_var(1, 0, "zero_area_x")],
                        [*ys, m.new_fixed_size_interval_var(y, 1, "zero_area_y")])
    return y


class Resources:
    """Posts the constraints of every type, sharing one fixed interval ``[0, remaining)`` per
    distinct remaining time among them; `walls` are the zero-area boxes' positions."""

    def __init__(self, m: cp_model.CpModel) -> None:
        self.m = m
        self.walls: list[cp_model.IntVar] = []
        self.running_x: dict[int, cp_model.IntervalVar] = {}

    def running_interval(self, rem: int) -> cp_model.IntervalVar:
        if rem not in self.running_x:
            self.running_x[rem] = self.m.new_fixed_size_interval_var(0, rem, f"run_{rem}")
        return self.running_x[rem]

    def post(self, t: int, users: Sequence[JobVars], load: TypeLoad, implied_cumulative: bool) -> None:
        """Type `t`'s NoOverlap2D (unless fluid) and cumulative (if implied, or fluid), over the
        queued jobs asking for it (`users`) and the running `load`."""
        if not load.fluid:
            self.no_overlap_2d(t, users, load)
        if implied_cumulative or load.fluid:
            self.cumulative(t, users, load)

    def no_overlap_2d(self, t: int, users: Sequence[JobVars], load: TypeLoad) -> None:
        m = self.m
        xs: list[cp_model.IntervalVar] = []
        ys: list[cp_model.IntervalVar] = []
        for jv in users:
            n = jv.geo.types.index(t)
            for i, unit in enumerate(jv.positions):
                xs.append(jv.interval)
                ys.append(m.new_fixed_size_interval_var(unit[n], jv.geo.amounts[n], f"b_{jv.job.id}_{i}_{t}"))
        for y0, height, rem in load.boxes:
            xs.append(self.running_interval(rem))
            ys.append(m.new_fixed_size_interval_var(y0, height, ""))
        wall = add_no_overlap_2d(m, xs, ys, len(load.boxes) > 0, load.axis_length)
        if wall is not None:
            self.walls.append(wall)

    def cumulative(self, t: int, users: Sequence[JobVars], load: TypeLoad) -> None:
        intervals = [jv.interval for jv in users]
        demands = [jv.job.units * jv.geo.amounts[jv.geo.types.index(t)] for jv in users]
        for rem, demand in load.demands:
            intervals.append(self.running_interval(rem))
            demands.append(demand)
        self.m.add_cumulative(intervals, demands, load.capacity)
