"""Eurora'14: pure and composite objectives = brute force on tiny instances; dispatcher behaviour."""

from __future__ import annotations

import numpy as np
import pytest
from ortools.sat.python import cp_model

from cpdispatch.dispatchers import all_names, make_dispatcher
from cpdispatch.dispatchers.cp import objectives
from cpdispatch.dispatchers.cp.instance import Plan
from cpdispatch.dispatchers.cp.models.eurora14 import OBJECTIVES, Eurora14, composite_bounds, tolerance_bound
from cpdispatch.errors import CpdispatchError
from cpdispatch.job import Job
from cpdispatch.snapshot import QueuedJob, RunningJob, Snapshot
from tests.test_pcp19 import INSTANCES, brute_force, check_plan, hand_plan, solve, valid_starts

from .helpers import on

PURE = ("makespan", "tardiness", "late_jobs")
COMPOSITES = ("mks-wt-nl", "wt-mks-nl", "nl-mks-wt")


def dispatcher(**options: object) -> Eurora14:
    disp = make_dispatcher("eurora14", {k: str(v) for k, v in options.items()})
    assert isinstance(disp, Eurora14)
    return disp


def exact_thetas(name: str, kinds: tuple[str, ...]) -> dict[str, int]:
    inst = INSTANCES[name]()
    out = {}
    for k in kinds[1:]:
        found = brute_force(inst, k, free_now=False)
        assert found is not None
        out[k] = found[0]
    return out


def test_tolerance_bound() -> None:
    assert tolerance_bound(10, 0.1) == 11
    assert tolerance_bound(10, 0.0) == 10
    assert tolerance_bound(0, 0.5) == 0
    assert tolerance_bound(833333, 0.1) == 916666
    assert composite_bounds(("makespan", "tardiness"), {"tardiness": 20}, 0.5) == {"tardiness": 30}


@pytest.mark.parametrize("kind", PURE)
@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_pure_models_equal_brute_force(name: str, kind: str) -> None:
    inst = INSTANCES[name]()
    expected = brute_force(inst, kind, free_now=False)
    assert expected is not None
    bm = dispatcher().model(inst, kind)
    solver, status = solve(bm)
    assert status == cp_model.OPTIMAL
    plan = bm.extract(solver)
    check_plan(inst, plan, free_now=False)
    assert objectives.objective(kind).value(inst, plan.starts) == expected[0]


@pytest.mark.parametrize("tolerance", [0.0, 0.5])
@pytest.mark.parametrize("objective", COMPOSITES)
@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_composite_model_equals_constrained_brute_force(name: str, objective: str, tolerance: float) -> None:
    """min primary s.t. each other objective <= (1 + delta) theta, theta = its pure optimum."""
    inst = INSTANCES[name]()
    kinds = OBJECTIVES[objective]
    bounds = composite_bounds(kinds, exact_thetas(name, kinds), tolerance)
    expected = brute_force(inst, kinds[0], free_now=False, bounds=bounds)
    bm = dispatcher().model(inst, kinds[0], bounds)
    solver, status = solve(bm)
    if expected is None:  # the two bounds contradict each other
        assert status == cp_model.INFEASIBLE
        return
    assert status == cp_model.OPTIMAL
    plan = bm.extract(solver)
    check_plan(inst, plan, free_now=False)
    assert objectives.objective(kinds[0]).value(inst, plan.starts) == expected[0]
    for k, b in bounds.items():
        assert objectives.objective(k).value(inst, plan.starts) <= b


@pytest.mark.parametrize("objective", COMPOSITES + PURE)
@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_dispatcher_optimise_respects_the_tolerance(name: str, objective: str) -> None:
    """The dispatcher's phases find the pure optima (tiny instances), then the composite optimum;
    every constrained objective of the kept plan is within (1 + delta) of its pure optimum."""
    inst = INSTANCES[name]()
    disp = dispatcher(objective=objective, tolerance=0.1, time_policy="paper")
    kinds = OBJECTIVES[objective]
    out = disp.optimise(disp.ready(inst))
    assert out.plan is not None
    check_plan(inst, out.plan, free_now=False)
    bounds = composite_bounds(kinds, exact_thetas(name, kinds), 0.1)
    expected = brute_force(inst, kinds[0], free_now=False, bounds=bounds)
    while expected is None:  # contradicting bounds: the last one is dropped
        bounds.pop(next(reversed(bounds)))
        expected = brute_force(inst, kinds[0], free_now=False, bounds=bounds)
    assert out.objective == expected[0]
    for k, b in bounds.items():
        assert objectives.objective(k).value(inst, out.plan.starts) <= b
    assert out.status == "optimal"


def test_contradicting_bounds_drop_the_last_one() -> None:
    """inst_spread, mks-wt-nl, delta = 0.1: tardiness <= 1.1 theta_WT and late jobs <= theta_NL
    cannot hold together; the dispatcher keeps the tardiness bound and drops the late-jobs one."""
    inst = INSTANCES["spread"]()
    bounds = composite_bounds(OBJECTIVES["mks-wt-nl"], exact_thetas("spread", OBJECTIVES["mks-wt-nl"]), 0.1)
    assert brute_force(inst, "makespan", free_now=False, bounds=bounds) is None
    disp = dispatcher(objective="mks-wt-nl", time_policy="paper")
    out = disp.optimise(disp.ready(inst))
    assert out.plan is not None and out.status == "optimal"
    assert objectives.objective("tardiness").value(inst, out.plan.starts) <= bounds["tardiness"]
    assert objectives.objective("late_jobs").value(inst, out.plan.starts) > bounds["late_jobs"]


def test_composite_trades_the_primary_for_the_constraint() -> None:
    """inst_spread: the tardiness optimum has 2 late jobs, the late-jobs optimum is 1. With delta = 0,
    `wt-mks-nl` keeps 1 late job (and the optimal makespan) and pays in tardiness."""
    inst = INSTANCES["spread"]()
    wt = brute_force(inst, "tardiness", free_now=False)
    nl = brute_force(inst, "late_jobs", free_now=False)
    mks = brute_force(inst, "makespan", free_now=False)
    assert wt is not None and nl is not None and mks is not None
    assert objectives.objective("late_jobs").value(inst, wt[1]) > nl[0]
    disp = dispatcher(objective="wt-mks-nl", tolerance=0.0, time_policy="paper")
    out = disp.optimise(disp.ready(inst))
    assert out.plan is not None and out.objective is not None and out.status == "optimal"
    assert objectives.objective("late_jobs").value(inst, out.plan.starts) == nl[0]
    assert objectives.objective("makespan").value(inst, out.plan.starts) == mks[0]
    assert out.objective > wt[0]
    expected = brute_force(inst, "tardiness", free_now=False, bounds={"makespan": mks[0], "late_jobs": nl[0]})
    assert expected is not None and out.objective == expected[0]


@pytest.mark.parametrize("objective", COMPOSITES)
def test_hint_with_bounds_is_feasible(objective: str) -> None:
    inst, plan = hand_plan()
    kinds = OBJECTIVES[objective]
    loose = {k: objectives.objective(k).value(inst, plan.starts) for k in kinds[1:]}
    bm = dispatcher().model(inst, kinds[0], loose)
    bm.add_hint(plan)
    solver, status = solve(bm, workers=1, fix_variables_to_their_hinted_value=True)
    assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    assert bm.extract(solver).starts == plan.starts


# -- dispatcher ----------------------------------------------------------------------------------


def eurora_snapshot() -> Snapshot:
    """Two GPU nodes and one MIC node, jobs of the three Eurora queues, one running job."""
    from cpdispatch.system import NodeGroup, System

    sys_ = System.build("t", [
        NodeGroup("gpu", 2, {"core": 16, "mem": 16384, "gpu": 2, "mic": 0}),
        NodeGroup("mic", 1, {"core": 16, "mem": 16384, "gpu": 0, "mic": 2}),
    ])
    run = RunningJob(Job("r", 0, 2, (8, 4096, 1, 0), 3600, 3600), 0, 3600, on(0, 1))
    queued = (
        QueuedJob(Job("long", 100, 2, (16, 8192, 0, 0), 20000, 20000, queue="longpar"), 20000),
        QueuedJob(Job("par", 200, 3, (8, 2048, 1, 0), 3000, 3000, queue="parallel"), 3000),
        QueuedJob(Job("dbg", 900, 1, (4, 1024, 0, 1), 600, 600, queue="debug"), 600),
        QueuedJob(Job("dbg2", 950, 1, (8, 1024, 0, 0), 300, 300, queue="debug"), 300),
    )
    free = sys_.capacity.copy()
    for k in run.alloc.per_unit():
        free[k] -= np.asarray(run.job.req)
    return Snapshot(1000, sys_, queued, (run,), free)


def test_registered_with_options() -> None:
    assert "eurora14" in all_names()
    disp = dispatcher()
    assert disp.objective == "mks-wt-nl" and disp.tolerance == 0.1 and disp.q_length == 100
    assert disp.ewt_of(Job("x", 0, 1, (1,), 1, 1, queue="debug")) == 60
    assert disp.ewt_of(Job("x", 0, 1, (1,), 1, 1, queue="longpar")) == 3600
    assert disp.ewt_of(Job("x", 0, 1, (1,), 1, 1, queue="other")) == 1800
    assert dispatcher(ewt="default=900").ewt_of(Job("x", 0, 1, (1,), 1, 1, queue="debug")) == 900
    with pytest.raises(CpdispatchError):
        dispatcher(objective="energy")
    with pytest.raises(CpdispatchError):
        dispatcher(tolerance=-1)


@pytest.mark.parametrize("objective", COMPOSITES + PURE)
def test_decide_valid_starts(objective: str) -> None:
    snap = eurora_snapshot()
    disp = dispatcher(objective=objective, fastpath=False, time_policy="paper")
    decision = disp.decide(snap)
    valid_starts(snap, decision)
    assert decision.variables and decision.variables > 0
    assert decision.status == "optimal"  # a small case: every phase proves its optimum
    # the two debug jobs (EWT 60 s) fit now and are late soonest: every objective starts them
    assert sorted(s.job_id for s in decision.starts) == ["dbg", "dbg2"]
    started = {s.job_id for s in decision.starts}
    assert started | set(decision.plan) == {q.job.id for q in snap.queued}


def test_queue_cap_keeps_the_oldest_jobs() -> None:
    snap = eurora_snapshot()
    disp = dispatcher(q_length=2, fastpath=False, time_policy="paper")
    decision = disp.decide(snap)
    planned = {s.job_id for s in decision.starts} | set(decision.plan)
    assert planned <= {"long", "par"}


def test_all_fit_now_needs_no_model() -> None:
    """The front end's skip, as for every CP dispatcher: the greedy plan starts every job now."""
    snap = eurora_snapshot()
    small = Snapshot(snap.time, snap.system, snap.queued[2:], snap.running, snap.free)
    decision = dispatcher(fastpath=False).decide(small)
    assert {s.job_id for s in decision.starts} == {"dbg", "dbg2"} and decision.status == "greedy"
    assert decision.variables is None  # no model was built



def test_the_plan_kept_says_where_it_came_from() -> None:
    """`keep`: the composite's plan on a tie, else the greedy plan (no solution, or better than the
    composite's), else a pure phase's; none at all; with `fallback=false` the composite's or nothing."""
    inst, plan = hand_plan()
    later = Plan(starts={j: s + 5 for j, s in plan.starts.items()}, nodes=plan.nodes)  # a worse makespan
    disp = dispatcher(objective="makespan")
    built = disp.model(inst, "makespan")

    def status(final: Plan | None, plans: list[Plan], greedy: Plan | None, fallback: bool = True) -> str:
        d = disp if fallback else dispatcher(objective="makespan", fallback=False)
        return d.keep(inst, built, False, final, list(plans), greedy, {}).status

    assert status(later, [later], later) == "feasible"
    assert status(None, [plan], plan) == "fallback:no-solution"
    assert status(later, [plan], plan) == "fallback:greedy-better"
    assert status(later, [later, plan], later) == "phase"
    assert status(None, [], None) == "none"
    assert status(None, [plan], plan, fallback=False) == "unsolved"
    assert status(later, [plan], plan, fallback=False) == "feasible"


def test_fast_conflicts_reach_every_phase(monkeypatch: pytest.MonkeyPatch) -> None:
    """eurora14's phases have no conflict limit by default (0), and take `fast_conflicts` when given."""
    seen: list[int] = []
    real = cp_model.CpSolver.solve

    def spy(self: cp_model.CpSolver, model: cp_model.CpModel, cb: object = None) -> object:
        seen.append(self.parameters.max_number_of_conflicts)
        return real(self, model, cb)

    monkeypatch.setattr(cp_model.CpSolver, "solve", spy)
    dispatcher(fastpath=False).decide(eurora_snapshot())
    default = cp_model.CpSolver().parameters.max_number_of_conflicts
    assert len(seen) >= 3 and set(seen) == {default}  # two pure phases, then the composite (maybe again)
    seen.clear()
    dispatcher(fastpath=False, fast_conflicts=50).decide(eurora_snapshot())
    assert len(seen) >= 3 and set(seen) == {50}
