"""A second starting point for pcp20's first stage: HCP'19's relaxation, shifted onto the nodes.

Why: on GPU-heavy work the exact model's search, hinted with the greedy plan, returns that plan
or none within its budget, and an instance over the size guard gets the greedy plan unsolved,
while the relaxation (one cumulative per type on the system totals, `hcp.model.HcpModel`) finds better
orders of the same jobs at any size. Shifted left onto the nodes in its order, hcp19's plan was
better than pcp20's under pcp20's own objective in most GPU-contended decisions, whatever the
budget (docs/heterogeneous.md). Starting from the better of the two plans, the first stage is
never worse than hcp19's order under its own objective.

The relaxation is a lower bound of the exact model (every valid placement respects the totals;
the exact reductions and symmetry breaking keep an optimum), so a proven optimum of the
relaxation that keeps its value once shifted is an optimum of the exact model: no exact solve
is needed.
"""

from __future__ import annotations

from typing import NamedTuple

from ortools.sat.python import cp_model

from ...greedy import left_shifted
from ...instance import Instance, Plan
from ...objectives import Objective
from ...policies import SolveLimits, Solver
from ..hcp.model import HcpModel


class RelaxedStart(NamedTuple):
    """The relaxation's plan shifted onto the nodes, its objective, and whether it is proven
    optimal for the exact model."""

    plan: Plan
    value: int
    proven: bool


def relaxed_start(
    solver: Solver, inst: Instance, goal: Objective, hint: Plan | None, limits: SolveLimits
) -> RelaxedStart | None:
    """Solve the relaxation of `inst` from `hint` within `limits`; None when it finds no plan or
    its order fits at no time on the nodes."""
    relaxed = HcpModel(inst, goal)
    status, plan = solver.solve_once(relaxed, hint, *limits)
    if plan is None:
        return None
    shifted = left_shifted(inst, plan)
    if shifted is None:
        return None
    value = solver.plan_value(inst, shifted)
    proven = status == cp_model.OPTIMAL and value == solver.plan_value(inst, plan)
    return RelaxedStart(shifted, value, proven)
