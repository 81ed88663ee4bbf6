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
    assert objectives.evaluate("slowdown", inst, best) < objectives.evaluate("slowdown", inst, other)


@pytest.mark.parametrize("name", ["pcp20", "pcp19", "hcp19"])
def test_each_model_finds_the_exact_argmin_with_long_jobs(name: str) -> None:
    inst, best = three_long_jobs()
    disp = make_dispatcher(name, {})
    assert isinstance(disp, CpDispatcher)
    built = disp.build(inst)
    solver, status = solve(built)
    assert status == cp_model.OPTIMAL
    assert built.extract(solver).starts == best
