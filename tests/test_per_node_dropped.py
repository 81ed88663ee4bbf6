"""PCP family: a selected job that cannot start now (a `blocked` one, or the base version's queue
order) under `free_now`, which leaves it no node with room now. It is planned as a future start
over the full capacity: no job of the model is missing from a plan, the decision fits the free
amounts, and `blocked` changes where the jobs starting now go (before: KeyError in the plan's
objective, the job being left out of the model but not of the greedy plan and the objective)."""

from __future__ import annotations

from typing import Any

import pytest
from ortools.sat.python import cp_model

from cpdispatch.dispatchers.base import make_dispatcher
from cpdispatch.dispatchers.cp import objectives
from cpdispatch.dispatchers.cp.instance import CpJob, CpRunning, Instance, Plan
from cpdispatch.dispatchers.cp.models.pcp19 import PerNodeDispatcher
from cpdispatch.dispatchers.cp.models.pcp19.model import PerNodeModel
from cpdispatch.dispatchers.cp.objectives import objective
from cpdispatch.snapshot import RunningJob, Snapshot
from cpdispatch.system import NodeGroup, System

from .cp_helpers import make_instance, solve, valid_starts
from .helpers import job, on, snapshot

NOW = 3000
THREE = System.build("three", [NodeGroup("n", 3, {"core": 4})])
#: (dispatcher, options) under which `b` (2 whole nodes, none free now) is in the model
CASES = [("pcp", {"free_now": "true"}), ("pcp", {"free_now": "true", "layout": "units"}),
         ("pcp1", {"blocked": "1"}), ("pcp2", {"blocked": "1"}), ("pcp3", {"blocked": "1"}),
         ("pcp3", {"blocked": "1", "layout": "units"})]


def blocked_snapshot() -> Snapshot:
    """Node 0 is full until now + 50, node 1 has 3 cores free for 6000 s, node 2 has 2 cores free
    until now + 50. `a` (2 cores, 1000 s) fits now on node 1 or 2; `b` (two whole nodes) fits on
    nodes 0 and 2 at now + 50 if `a` is not on node 2, else at now + 1000. Both waited beyond
    their EWT, so every second of delay counts under every objective."""
    running = (RunningJob(job("r0", 0, 100, 1, (4,)), NOW - 50, 100, on(0)),
               RunningJob(job("r1", 0, 9000, 1, (1,)), NOW - 3000, 9000, on(1)),
               RunningJob(job("r2", 0, 100, 1, (2,)), NOW - 50, 100, on(2)))
    queued = [(job("a", 0, 1000, 1, (2,)), 1000), (job("b", 1, 10, 2, (4,)), 10)]
    return snapshot(THREE, queued, running, now=NOW)


def selected(name: str, opts: dict[str, Any], snap: Snapshot) -> set[str]:
    disp = make_dispatcher(name, opts)
    return {q.job.id for q in disp.select(snap, disp.order(snap))}


@pytest.mark.parametrize(("name", "opts"), CASES)
def test_a_job_that_cannot_start_now_is_planned_later(name: str, opts: dict[str, Any]) -> None:
    snap = blocked_snapshot()
    assert selected(name, opts, snap) == {"a", "b"}
    decision = make_dispatcher(name, opts).decide(snap)
    valid_starts(snap, decision)
    started = {s.job_id for s in decision.starts}
    assert started | set(decision.plan) == {"a", "b"} and not started & set(decision.plan)  # no job lost
    assert started == {"a"} and decision.plan["b"] >= NOW + 50
    assert decision.status in ("optimal", "feasible")


@pytest.mark.parametrize("name", ["pcp1", "pcp2", "pcp3"])
def test_blocked_under_free_now_keeps_the_room_of_the_blocked_job(name: str) -> None:
    """`a` goes on node 1, not on node 2 where it would hold `b` back until now + 1000: the point
    of `blocked`, which under `free_now` could only crash (or do nothing) before."""
    snap = blocked_snapshot()
    decision = make_dispatcher(name, {"blocked": "1", "free_now": "true"}).decide(snap)
    assert [(s.job_id, s.nodes) for s in decision.starts] == [("a", (1,))]
    assert decision.plan == {"b": NOW + 50}


class Spy(PerNodeDispatcher):
    """pcp1 recording the jobs of every plan whose objective the front end computes (the greedy
    plan's, the solver's: the GREEDY_BETTER comparison)."""

    name = "pcp1-spy"

    def __init__(self, **values: Any) -> None:
        super().__init__(**values)
        self.valued: list[set[str]] = []

    def plan_value(self, inst: Instance, plan: Plan) -> int:
        self.valued.append(set(plan.starts))
        return super().plan_value(inst, plan)


@pytest.mark.parametrize("free_now", [True, False])
def test_greedy_and_solver_plans_are_valued_over_the_same_jobs(free_now: bool) -> None:
    snap = blocked_snapshot()
    disp = Spy(blocked=1, free_now=free_now)
    decision = disp.decide(snap)
    assert len(disp.valued) == 2 and all(jobs == {"a", "b"} for jobs in disp.valued)
    inst = disp.instance(snap, disp.select(snap, disp.order(snap)))
    starts = {"a": 0, "b": decision.plan["b"] - NOW}
    assert decision.objective == objectives.objective(disp.goal.kind).value(inst, starts) > 0


@pytest.mark.parametrize(("name", "opts"), CASES)
def test_the_greedy_fallback_plans_the_job_too(name: str, opts: dict[str, Any]) -> None:
    """The solver finds nothing in the budget: the greedy plan, enacted, has every job."""
    snap = blocked_snapshot()
    decision = make_dispatcher(name, {**opts, "hint": "false", "fast_budget": "1e-9"}).decide(snap)
    assert decision.status == "fallback:no-solution"
    valid_starts(snap, decision)
    assert {s.job_id for s in decision.starts} == {"a"} and decision.plan["b"] >= NOW + 50


# -- the model -----------------------------------------------------------------------------------


def blocked_instance() -> Instance:
    """Node 0 (4 cores) is full for 5 s, node 1 has 4 free: `b` (two whole nodes) cannot start now."""
    two = System.build("two", [NodeGroup("n", 2, {"core": 4})])
    return make_instance(two, [CpJob("a", 1, (1,), 3, 0), CpJob("b", 2, (4,), 2, 0)],
                         [CpRunning("r", 1, (4,), 5, on(0))])


@pytest.mark.parametrize("layout", ["counts", "units"])
def test_plan_blocked_keeps_the_job_over_the_full_capacity(layout: str) -> None:
    inst = blocked_instance()
    bm = PerNodeModel(inst, objective("slowdown"), free_now=True, plan_blocked=True, layout=layout)
    assert bm.dropped == [] and [j.id for j in bm.kept] == ["a", "b"]
    assert bm.caps["a"].tolist() == [0, 1] and bm.caps["b"].tolist() == [1, 1]  # a: room now only
    solver, status = solve(bm)
    assert status == cp_model.OPTIMAL
    plan = bm.extract(solver)  # a ends at 3, before b can have node 0
    assert plan.starts == {"a": 0, "b": 5} and plan.nodes["a"] == (1,) and sorted(plan.nodes["b"]) == [0, 1]
    original = PerNodeModel(inst, objective("slowdown"), free_now=True, layout=layout)
    assert original.dropped == ["b"]  # the original's model, kept as the default of the model alone


def test_plan_blocked_never_leaves_a_job_out() -> None:
    """A job that fits nowhere makes the model infeasible, as it makes the greedy plan fail,
    instead of a plan without it."""
    inst = blocked_instance()
    huge = make_instance(inst.system, [*inst.jobs, CpJob("c", 3, (4,), 1, 0)], list(inst.running))
    for free_now in (True, False):
        bm = PerNodeModel(huge, objective("slowdown"), free_now=free_now, plan_blocked=True)
        assert bm.dropped == []
        assert solve(bm)[1] == cp_model.INFEASIBLE
