"""Job weights (`QueuedJob.weight`, set by the Slurm driver's `--priority slurm`): every weighted
objective multiplies each job's term by its weight, weights of 1 give exactly the papers'
coefficients, and a dispatcher whose objective has no per-job term says so."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from cpdispatch.dispatchers import all_names, make_dispatcher
from cpdispatch.dispatchers.cp import objectives
from cpdispatch.dispatchers.cp.frontend import CpDispatcher
from cpdispatch.dispatchers.cp.instance import CpJob
from cpdispatch.snapshot import QueuedJob, Snapshot
from cpdispatch.system import NodeGroup, System

from .cp_helpers import make_instance, solve
from .helpers import job, snapshot

ONE = System.build("one", [NodeGroup("n", 1, {"core": 1})])


@given(st.lists(st.integers(1, 3_000_000), min_size=1, max_size=50), st.integers(1, 50_000_000))
def test_unit_weights_are_the_papers_coefficients(durations: list[int], span: int) -> None:
    ones = (1.0,) * len(durations)
    assert objectives.weighted_inverse_weights(tuple(durations), ones, span) == \
        objectives.inverse_weights(tuple(durations), span)


@given(st.lists(st.tuples(st.integers(1, 3_000_000), st.floats(0.001, 1.0)), min_size=2, max_size=50),
       st.integers(1, 50_000_000))
def test_weights_are_proportional_to_weight_over_duration(jobs: list[tuple[int, float]], span: int) -> None:
    durations, factors = (tuple(x) for x in zip(*jobs))
    if all(f == 1 for f in factors):
        return
    coefs = objectives.weighted_inverse_weights(durations, factors, span)  # type: ignore[arg-type]
    assert sum(coefs) * span <= objectives.WEIGHT_BUDGET and min(coefs) >= 1
    top = max(range(len(jobs)), key=lambda i: factors[i] / durations[i])
    scale = Fraction(coefs[top]) / Fraction(factors[top] / durations[top])
    for d, f, c in zip(durations, factors, coefs):
        exact = scale * Fraction(f / d)
        assert abs(c - exact) <= Fraction(1, 2) + exact * Fraction(1, 10**6) or c == 1


def _two_identical(weights: tuple[float, float], ewt: int = 1800) -> list[CpJob]:
    """A and B each need the only core for 100 s: one of them waits 100 s."""
    return [CpJob(n, 1, (1,), 100, 0, ewt, weight=w) for n, w in zip("AB", weights)]


@pytest.mark.parametrize("kind", ["slowdown", "tardiness", "ewt_wait", "late_jobs"])
def test_each_weighted_objective_prefers_the_heavier_job_first(kind: str) -> None:
    inst = make_instance(ONE, _two_identical((0.2, 1.0), ewt=50), [])
    a_first, b_first = {"A": 0, "B": 100}, {"A": 100, "B": 0}
    assert objectives.objective(kind).value(inst, b_first) < objectives.objective(kind).value(inst, a_first)
    equal = make_instance(ONE, _two_identical((1.0, 1.0), ewt=50), [])
    assert objectives.objective(kind).value(equal, b_first) == objectives.objective(kind).value(equal, a_first)


def _weighted_dispatchers() -> list[str]:
    return sorted(n for n in set(all_names()) if make_dispatcher(n, {}).weighs_jobs)


def test_the_weighted_dispatchers_are_the_cp_ones_with_a_per_job_objective() -> None:
    names = _weighted_dispatchers()
    assert {"pcp20", "pcp19", "hcp19", "eurora14"} <= set(names)
    assert not {"easy", "fifo", "pbs"} & set(names)
    assert not make_dispatcher("eurora14", {"objective": "makespan"}).weighs_jobs


def _queue(weights: tuple[float, float]) -> Snapshot:
    """A (submitted first) and B, identical, compete for the only core."""
    snap = snapshot(ONE, [(job("A", 0, 100), 100), (job("B", 1, 100), 100)], now=2)
    return Snapshot(snap.time, snap.system, tuple(QueuedJob(q.job, q.predicted, w)
                                                  for q, w in zip(snap.queued, weights)), (), snap.free)


@pytest.mark.parametrize("name", _weighted_dispatchers())
def test_the_heavier_job_starts_first_and_equal_weights_keep_queue_order(name: str) -> None:
    options = {"ewt": "default=50"}  # the second job is late under the EWT objectives too
    disp = make_dispatcher(name, options)
    started = [s.job_id for s in disp.decide(_queue((1.0, 1.0))).starts]
    assert started == ["A"], f"{name}: equal weights started {started}"
    disp = make_dispatcher(name, options)
    started = [s.job_id for s in disp.decide(_queue((0.2, 1.0))).starts]
    assert started == ["B"], f"{name}: weights (0.2, 1) started {started}"


@pytest.mark.parametrize("name", ["pcp20", "pcp19", "hcp19", "hcp1"])
def test_each_model_puts_the_heavier_job_first_against_the_order(name: str) -> None:
    """A comes first in the model's job order (its search and hints), B weighs more: the optimum
    starts B."""
    disp = make_dispatcher(name, {})
    assert isinstance(disp, CpDispatcher)
    built = disp.build(make_instance(ONE, _two_identical((0.2, 1.0)), []))
    solver, status = solve(built)
    assert status == cp_model.OPTIMAL
    assert built.extract(solver).starts == {"A": 100, "B": 0}
