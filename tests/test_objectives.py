"""The objectives' integer weights: exact where the durations allow it, and never so coarse that
the argmin changes (the papers' slowdown is sum (s - q + d) / d over real numbers)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from cpdispatch.dispatchers import make_dispatcher
from cpdispatch.dispatchers.cp import objectives
from cpdispatch.dispatchers.cp.frontend import CpDispatcher
from cpdispatch.dispatchers.cp.instance import CpJob, Instance
from cpdispatch.system import NodeGroup, System

from .cp_helpers import make_instance, solve


def test_weights_are_exact_when_the_lcm_fits() -> None:
    assert objectives.inverse_weights((2, 3, 4), 100) == (6, 4, 3)
    assert objectives.inverse_weights((0, 1), 10) == (1, 1)  # clamped to >= 1


@given(st.lists(st.integers(1, 3_000_000), min_size=1, max_size=100), st.integers(1, 50_000_000))
def test_weights_stay_in_range_and_close_to_exact(durations: list[int], span: int) -> None:
    weights = objectives.inverse_weights(tuple(durations), span)
    assert sum(weights) * span <= objectives.WEIGHT_BUDGET
    # relative to the shortest job, every weight is 1/d up to the rounding of the largest scale
    scale = Fraction(weights[durations.index(min(durations))] * min(durations))
    for d, w in zip(durations, weights):
        exact = scale / d
        assert abs(w - exact) <= Fraction(1, 2) + exact * Fraction(1, 10**6)
        assert w >= 1


def three_long_jobs() -> tuple[Instance, dict[str, int]]:
    """One node of 2 cores; A takes both for 1.2e6 s, B and C one each for 2e6 and 1.5e6 s.
    A first: B and C wait 1.2e6 s, slowdown sum 1.2/2 + 1.2/1.5 = 1.4; B and C first: A waits
    2e6 s, 2/1.2 = 1.67. The first version's weights round(1e6 / d) were 1 for all three and
    preferred the second (sum of starts 2e6 against 2.4e6)."""
    sys_ = System.build("one", [NodeGroup("n", 1, {"core": 2})])
    jobs = [CpJob("A", 2, (1,), 1_200_000, 0), CpJob("B", 1, (1,), 2_000_000, 0),
            CpJob("C", 1, (1,), 1_500_000, 0)]
    return make_instance(sys_, jobs, []), {"A": 0, "B": 1_200_000, "C": 1_200_000}


def test_long_jobs_keep_their_order_in_the_objective() -> None:
    inst, best = three_long_jobs()
    other = {"A": 2_000_000, "B": 0, "C": 0}
    assert objectives.objective("slowdown").value(inst, best) < objectives.objective("slowdown").value(inst, other)


@pytest.mark.parametrize("name", ["pcp20", "pcp19", "hcp19"])
def test_each_model_finds_the_exact_argmin_with_long_jobs(name: str) -> None:
    inst, best = three_long_jobs()
    disp = make_dispatcher(name, {})
    assert isinstance(disp, CpDispatcher)
    built = disp.build(inst)
    solver, status = solve(built)
    assert status == cp_model.OPTIMAL
    assert built.extract(solver).starts == best


# -- objectives as objects: expression, value and the hint of their helper variables --------------


def late_and_tardy() -> Instance:
    """One core, three jobs of different EWTs and weights, one already waiting past its EWT: every
    objective has helper variables or per-job terms that differ."""
    sys_ = System.build("one", [NodeGroup("n", 1, {"core": 1})])
    jobs = [CpJob("a", 1, (1,), 3, 5, 4, weight=2.0), CpJob("b", 1, (1,), 2, 0, 3),
            CpJob("c", 1, (1,), 4, 1, 2, weight=0.5)]
    return make_instance(sys_, jobs, [])


@pytest.mark.parametrize("kind", objectives.KINDS)
def test_an_objective_hints_every_helper_to_its_value_on_the_plan(kind: str) -> None:
    """Fixed to the hint (starts and the helpers' hint), the model's objective is `value` of the
    plan: a helper left unhinted, or hinted wrong, makes the fixed model infeasible or off."""
    inst = late_and_tardy()
    starts = {"a": 6, "b": 0, "c": 2}
    m = cp_model.CpModel()
    start_vars = {j.id: m.new_int_var(0, inst.horizon, f"s_{j.id}") for j in inst.jobs}
    goal = objectives.objective(kind)
    posted = goal.post(m, inst, start_vars)
    expr = posted.expression
    m.minimize(expr)
    for j, var in start_vars.items():
        m.add_hint(var, starts[j])
    posted.hint(m, inst, starts)
    assert len(m.proto.solution_hint.vars) == len(m.proto.variables)
    solver = cp_model.CpSolver()
    solver.parameters.fix_variables_to_their_hinted_value = True
    solver.parameters.num_workers = 1
    assert solver.solve(m) == cp_model.OPTIMAL
    assert solver.value(expr) == goal.value(inst, starts)


def test_an_objective_over_some_jobs_weighs_them_as_in_the_instance() -> None:
    """Posted over a subset, each job keeps its instance-wide coefficient and only the subset's
    helpers are posted and hinted."""
    inst = late_and_tardy()
    m = cp_model.CpModel()
    start_vars = {j.id: m.new_int_var(0, inst.horizon, f"s_{j.id}") for j in inst.jobs}
    goal = objectives.objective("tardiness")
    posted = goal.post(m, inst, start_vars, inst.jobs[1:])
    expr = posted.expression
    assert [job.id for _, job in posted.helpers] == ["b", "c"]
    whole = dict(zip((j.id for j in inst.jobs), goal.weights(inst)))
    m.add(start_vars["b"] == 0)
    m.add(start_vars["c"] == 5)
    m.minimize(expr)
    solver, status = solve_model(m)
    assert status == cp_model.OPTIMAL
    assert solver.value(expr) == whole["c"] * (5 + 1 - 2)  # b is on time


def solve_model(m: cp_model.CpModel) -> tuple[cp_model.CpSolver, int]:
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    return solver, solver.solve(m)


def test_unknown_objective_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown objective 'speed'"):
        objectives.objective("speed")
