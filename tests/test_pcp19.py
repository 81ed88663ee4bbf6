"""PCP'19 per-node model: optimum = brute force on tiny instances, valid plans, hints, size growth."""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import numpy as np
import pytest
from ortools.sat.python import cp_model

from cpdispatch.dispatchers import all_names, make_dispatcher
from cpdispatch.dispatchers.base import dispatcher_class
from cpdispatch.dispatchers.cp import objectives
from cpdispatch.dispatchers.cp.frontend import CpDispatcher
from cpdispatch.dispatchers.cp.instance import CpJob, CpRunning, Instance, Plan
from cpdispatch.dispatchers.cp.models.pcp19.model import PerNodeModel, restricted_greedy
from cpdispatch.dispatchers.cp.objectives import objective
from cpdispatch.job import Job
from cpdispatch.snapshot import QueuedJob, RunningJob, Snapshot
from cpdispatch.system import NodeGroup, System, units_fitting

from .cp_helpers import allocations, feasible_allocation, load_ok, solve, valid_starts
from .helpers import on

KINDS = ("slowdown", "tardiness", "makespan", "late_jobs")


# -- tiny instances ------------------------------------------------------------------------------


def make_instance(system: System, jobs: list[CpJob], running: list[CpRunning]) -> Instance:
    free = system.capacity.copy()
    for r in running:
        for k in r.alloc.per_unit():
            free[k] -= np.asarray(r.req)
    horizon = sum(max(0, r.remaining) for r in running) + sum(j.duration for j in jobs)
    return Instance(0, system, tuple(jobs), tuple(running), free, horizon)


def inst_gpu() -> Instance:
    """3 heterogeneous nodes (one with a GPU), a running job on two nodes, a 3-unit job."""
    sys_ = System.build("t", [NodeGroup("g", 1, {"core": 4, "gpu": 1}), NodeGroup("c", 2, {"core": 2, "gpu": 0})])
    running = [CpRunning("r1", 2, (1, 0), 3, on(0, 1))]
    jobs = [
        CpJob("j1", 3, (1, 0), 2, 5, 4),
        CpJob("j2", 1, (2, 1), 3, 0, 4),
        CpJob("j3", 2, (2, 0), 1, 1, 2),
    ]
    return make_instance(sys_, jobs, running)


def inst_mem() -> Instance:
    """2 nodes with cores and memory, 4 jobs (one 2-unit, one already late), a running job."""
    sys_ = System.build("t", [NodeGroup("big", 1, {"core": 4, "mem": 8}), NodeGroup("small", 1, {"core": 2, "mem": 8})])
    running = [CpRunning("r1", 1, (2, 2), 2, on(1))]
    jobs = [
        CpJob("a", 2, (2, 4), 2, 3, 2),
        CpJob("b", 1, (1, 2), 1, 0, 1),
        CpJob("c", 1, (2, 1), 2, 6, 3),
        CpJob("d", 1, (1, 6), 1, 0, 5),
    ]
    return make_instance(sys_, jobs, running)


def inst_spread() -> Instance:
    """3 nodes, a 4-unit job that must span nodes and units sharing a node, two running jobs."""
    sys_ = System.build("t", [NodeGroup("n", 2, {"core": 2}), NodeGroup("m", 1, {"core": 3})])
    running = [CpRunning("r1", 1, (2,), 2, on(0)), CpRunning("r2", 1, (1,), 1, on(2))]
    jobs = [
        CpJob("x", 4, (1,), 2, 2, 2),
        CpJob("y", 1, (2,), 1, 0, 3),
        CpJob("z", 2, (1,), 1, 4, 3),
    ]
    return make_instance(sys_, jobs, running)


INSTANCES = {"gpu": inst_gpu, "mem": inst_mem, "spread": inst_spread}


# -- brute force ---------------------------------------------------------------------------------


def unit_caps(inst: Instance, job: CpJob, free_now: bool) -> list[int]:
    base = inst.free if free_now else inst.capacity
    return [int(min(x, job.units)) for x in units_fitting(base, job.req)]


def brute_force(
    inst: Instance, kind: str, free_now: bool, bounds: Mapping[str, int] | None = None
) -> tuple[int, dict[str, int]] | None:
    """Optimum of `kind` over every integer start in [0, H] and every unit-to-node allocation
    respecting per-node, per-type capacity over time (subject to `bounds`)."""
    options = [list(allocations(j.units, unit_caps(inst, j, free_now))) for j in inst.jobs]
    ids = [j.id for j in inst.jobs]
    scored = []
    for combo in itertools.product(range(inst.horizon + 1), repeat=len(ids)):
        starts = dict(zip(ids, combo))
        if bounds and any(objectives.objective(k).value(inst, starts) > v for k, v in bounds.items()):
            continue
        scored.append((objectives.objective(kind).value(inst, starts), combo))
    scored.sort()
    for value, combo in scored:
        if feasible_allocation(inst, list(combo), options) is not None:
            return value, dict(zip(ids, combo))
    return None


# -- plan checks ---------------------------------------------------------------------------------


def check_plan(inst: Instance, plan: Plan, free_now: bool) -> None:
    n = inst.capacity.shape[0]
    allocs = []
    for j in inst.jobs:
        assert 0 <= plan.starts[j.id] <= inst.horizon
        nodes = plan.nodes[j.id]
        assert len(nodes) == j.units
        counts = np.bincount(np.asarray(nodes, dtype=np.int64), minlength=n)
        assert (counts <= np.asarray(unit_caps(inst, j, free_now))).all(), (j.id, nodes)
        allocs.append(tuple(int(c) for c in counts))
    assert load_ok(inst, [plan.starts[j.id] for j in inst.jobs], allocs)




# -- tests ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("free_now", [True, False])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_optimum_equals_brute_force(name: str, kind: str, free_now: bool) -> None:
    inst = INSTANCES[name]()
    expected = brute_force(inst, kind, free_now)
    assert expected is not None
    bm = PerNodeModel(inst, objective(kind), free_now=free_now)
    solver, status = solve(bm)
    assert status == cp_model.OPTIMAL
    plan = bm.extract(solver)
    check_plan(inst, plan, free_now)
    assert objectives.objective(kind).value(inst, plan.starts) == expected[0]
    assert round(solver.ObjectiveValue()) == expected[0]


@pytest.mark.parametrize("redundant", [True, False])
def test_redundant_cumulative_does_not_change_the_optimum(redundant: bool) -> None:
    inst = inst_spread()
    expected = brute_force(inst, "slowdown", True)
    assert expected is not None
    bm = PerNodeModel(inst, objective("slowdown"), redundant=redundant)
    solver, status = solve(bm)
    assert status == cp_model.OPTIMAL
    assert round(solver.ObjectiveValue()) == expected[0]


def hand_plan() -> tuple[Instance, Plan]:
    """inst_gpu with a hand-made complete plan (start + node per unit) that respects capacity."""
    inst = inst_gpu()
    plan = Plan(
        starts={"j1": 0, "j2": 0, "j3": 3},
        nodes={"j1": (0, 1, 2), "j2": (0,), "j3": (0, 0)},
    )
    check_plan(inst, plan, free_now=False)
    return inst, plan


@pytest.mark.parametrize("kind", KINDS)
def test_hint_from_complete_plan_is_feasible(kind: str) -> None:
    inst, plan = hand_plan()
    bm = PerNodeModel(inst, objective(kind), free_now=False)
    bm.add_hint(plan)
    solver, status = solve(bm, workers=1, fix_variables_to_their_hinted_value=True)
    assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    got = bm.extract(solver)
    assert got.starts == plan.starts
    assert {j: sorted(n) for j, n in got.nodes.items()} == {j: sorted(n) for j, n in plan.nodes.items()}
    assert round(solver.ObjectiveValue()) == objectives.objective(kind).value(inst, plan.starts)


def test_hint_covers_every_variable() -> None:
    inst, plan = hand_plan()
    for kind in KINDS:
        bm = PerNodeModel(inst, objective(kind), free_now=False)
        bm.add_hint(plan)
        proto = bm.model.Proto()
        hinted = set(proto.solution_hint.vars)
        # every variable except the constants CP-SAT creates for fixed interval sizes/starts
        free_vars = {i for i, v in enumerate(proto.variables) if v.domain[0] != v.domain[-1]}
        assert free_vars <= hinted, kind


def test_fixed_search_finds_a_valid_plan() -> None:
    inst = inst_mem()
    bm = PerNodeModel(inst, objective("slowdown"))
    bm.add_search()
    solver, status = solve(bm, workers=1, search_branching=cp_model.FIXED_SEARCH)
    assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    check_plan(inst, bm.extract(solver), free_now=True)


def test_free_now_restricts_candidate_nodes() -> None:
    inst = inst_spread()  # node 0 is full now: with free_now no queued job may use it
    bm = PerNodeModel(inst, objective("makespan"), free_now=True)
    assert all(k != 0 for pairs in bm.counts.values() for k, _ in pairs)
    bm_full = PerNodeModel(inst, objective("makespan"), free_now=False)
    assert any(k == 0 for pairs in bm_full.counts.values() for k, _ in pairs)
    # using node 0 later makes a shorter schedule possible
    s1, _ = solve(bm)
    s2, _ = solve(bm_full)
    assert s2.ObjectiveValue() <= s1.ObjectiveValue()


def test_jobs_without_room_now_are_dropped() -> None:
    sys_ = System.build("t", [NodeGroup("n", 2, {"core": 2})])
    running = [CpRunning("r", 2, (2,), 5, on(0, 1))]
    inst = make_instance(sys_, [CpJob("a", 1, (1,), 2, 0)], running)
    bm = PerNodeModel(inst, objective("slowdown"), free_now=True)
    assert bm.dropped == ["a"] and not bm.start_vars
    solver, status = solve(bm)
    assert status == cp_model.OPTIMAL and bm.extract(solver).starts == {}
    full = PerNodeModel(inst, objective("slowdown"), free_now=False)
    solver, status = solve(full)
    assert status == cp_model.OPTIMAL and full.extract(solver).starts == {"a": 5}


def test_unclamped_running_job_holds_its_nodes_now_but_shrinks_the_horizon() -> None:
    """Without the clamp an underestimated running job has remaining <= 0: it still holds its nodes
    now (length >= 1, so a job planned at 0 really fits), but the horizon shrinks (the paper's
    effect): with two queued jobs that must run one after the other, the instance is infeasible."""
    sys_ = System.build("t", [NodeGroup("n", 1, {"core": 2})])
    run = CpRunning("r", 1, (2,), -4, on(0))
    one = Instance(0, sys_, (CpJob("a", 1, (2,), 3, 0),), (run,), np.zeros((1, 1), dtype=np.int64), 1)
    bm = PerNodeModel(one, objective("slowdown"), free_now=False)
    solver, status = solve(bm)
    assert status == cp_model.OPTIMAL and bm.extract(solver).starts == {"a": 1}
    jobs = (CpJob("a", 1, (2,), 3, 0), CpJob("b", 1, (2,), 3, 0))
    two = Instance(0, sys_, jobs, (run,), np.zeros((1, 1), dtype=np.int64), max(1, -4 + 6))
    solver, status = solve(PerNodeModel(two, objective("slowdown"), free_now=False))
    assert status == cp_model.INFEASIBLE


def test_hint_repair_for_plans_outside_the_candidate_nodes() -> None:
    """With free_now, a plan using a node that has no room now (as the front end's greedy may do for
    later starts) is replaced by the restricted list schedule, which the model accepts."""
    inst = inst_spread()  # node 0 is full now
    plan = Plan(starts={"x": 2, "y": 0, "z": 1}, nodes={"x": (0, 0, 1, 2), "y": (1,), "z": (2, 2)})
    bm = PerNodeModel(inst, objective("slowdown"), free_now=True)
    assert not bm.consistent(plan)
    repaired = restricted_greedy(bm)
    assert repaired is not None and bm.consistent(repaired)
    check_plan(inst, repaired, free_now=True)
    bm.add_hint(plan)
    solver, status = solve(bm, workers=1, fix_variables_to_their_hinted_value=True)
    assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    assert bm.extract(solver).starts == repaired.starts


@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_restricted_greedy_is_valid(name: str) -> None:
    inst = INSTANCES[name]()
    for free_now in (True, False):
        bm = PerNodeModel(inst, objective("slowdown"), free_now=free_now)
        plan = restricted_greedy(bm)
        assert plan is not None
        check_plan(inst, plan, free_now)


def _size(n_nodes: int) -> tuple[int, int]:
    sys_ = System.build("t", [NodeGroup("n", n_nodes, {"core": 16, "mem": 16384})])
    jobs = [CpJob(f"j{i}", 1 + i % 4, (4, 1024), 100 + 10 * i, 0) for i in range(10)]
    bm = PerNodeModel(make_instance(sys_, jobs, []), objective("slowdown"))
    return bm.variables, bm.constraints


def test_variable_count_grows_with_the_number_of_nodes() -> None:
    v64, c64 = _size(64)
    v1024, c1024 = _size(1024)
    assert v1024 > 10 * v64
    assert c1024 > 10 * c64


@pytest.mark.parametrize("seed", range(6))
def test_restricted_greedy_random_instances(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sys_ = System.build("t", [NodeGroup("a", 2, {"core": 4, "gpu": 1}), NodeGroup("b", 3, {"core": 2, "gpu": 0})])
    running = [CpRunning("r0", 2, (1, 0), int(rng.integers(1, 6)), on(0, 2)),
               CpRunning("r1", 1, (2, 1), int(rng.integers(1, 6)), on(1))]
    jobs = [
        CpJob(f"j{i}", int(rng.integers(1, 4)), (int(rng.integers(1, 3)), int(rng.random() < 0.3)),
              int(rng.integers(1, 5)), int(rng.integers(0, 5)), 3)
        for i in range(7)
    ]
    inst = make_instance(sys_, jobs, running)
    for free_now in (True, False):
        bm = PerNodeModel(inst, objective("slowdown"), free_now=free_now)
        plan = restricted_greedy(bm)
        assert plan is not None
        sub = Instance(0, sys_, bm.kept, inst.running, inst.free, inst.horizon)
        check_plan(sub, plan, free_now)
        bm.add_hint(plan)
        solver, status = solve(bm, workers=1, fix_variables_to_their_hinted_value=True)
        assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE)


# -- dispatchers ---------------------------------------------------------------------------------


def snapshot_congested() -> Snapshot:
    """3 nodes, two running jobs, four queued jobs that do not all fit now."""
    sys_ = System.build("t", [NodeGroup("g", 1, {"core": 4, "gpu": 1}), NodeGroup("c", 2, {"core": 2, "gpu": 0})])
    r1 = Job("r1", 0, 2, (1, 0), 100, 100)
    r2 = Job("r2", 0, 1, (2, 1), 100, 100)
    running = (RunningJob(r1, 0, 100, on(0, 1)), RunningJob(r2, 10, 50, on(0)))
    queued = (
        QueuedJob(Job("q1", 20, 3, (1, 0), 60, 60, queue="debug"), 60),
        QueuedJob(Job("q2", 30, 1, (2, 1), 300, 300, queue="parallel"), 300),
        QueuedJob(Job("q3", 40, 2, (2, 0), 30, 30), 30),
        QueuedJob(Job("q4", 45, 1, (2, 0), 10, 10), 10),
    )
    free = sys_.capacity.copy()
    for r in running:
        for k in r.alloc.per_unit():
            free[k] -= np.asarray(r.job.req)
    return Snapshot(50, sys_, queued, running, free)


def test_registered_versions_and_switches() -> None:
    names = set(all_names())
    assert {"pcp", "pcp1", "pcp2", "pcp3", "pcp19"} <= names
    assert dispatcher_class("pcp19") is dispatcher_class("pcp3")
    d = {n: make_dispatcher(n) for n in ("pcp", "pcp1", "pcp2", "pcp3")}
    assert [d[n].clamp for n in d] == [False, False, True, True]  # type: ignore[attr-defined]
    assert [d[n].priority for n in d] == ["ewt", "ewt", "ewt", "slowdown"]  # type: ignore[attr-defined]
    assert [d[n].goal.kind for n in d] == ["tardiness", "tardiness", "tardiness", "slowdown"]  # type: ignore[attr-defined]
    assert [d[n].free_now for n in d] == [False, True, True, True]  # type: ignore[attr-defined]
    assert [d[n].selection for n in d] == ["queue", "fit-now", "fit-now", "fit-now"]  # type: ignore[attr-defined]
    assert d["pcp"].q_length >= 10**6 and d["pcp1"].q_length == 100  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["pcp", "pcp1", "pcp2", "pcp3"])
@pytest.mark.parametrize("policy", ["fast", "paper"])
def test_dispatchers_decide_valid_starts(name: str, policy: str) -> None:
    snap = snapshot_congested()
    disp = make_dispatcher(name, {"time_policy": policy, "fastpath": "false"})
    assert isinstance(disp, CpDispatcher)
    inst = disp.instance(snap, disp.select(snap, disp.order(snap)))
    decision = disp.decide(snap)
    valid_starts(snap, decision)
    assert decision.status == "optimal", decision.status
    assert decision.variables and decision.variables > 0  # q1 and q4 fit now, not together: a model
    if name == "pcp":  # every queued job in the model: too many for the brute force; 0 is a bound
        assert decision.objective == 0 and decision.starts
        return
    expected = brute_force(inst, disp.goal.kind, free_now=True)
    assert expected is not None and decision.objective == expected[0]
    if name == "pcp3":  # the slowdown's unique optimum: the 10-s job first (q1 first costs 60/10)
        assert [s.job_id for s in decision.starts] == ["q4"]


def test_fixed_search_dispatcher() -> None:
    snap = snapshot_congested()
    decision = make_dispatcher("pcp3", {"search": "fixed", "fastpath": "false"}).decide(snap)
    valid_starts(snap, decision)
    assert decision.status == "optimal" and [s.job_id for s in decision.starts] == ["q4"]


def test_pcp_base_nothing_can_start_now() -> None:
    """Every node full now: the base version plans everything later, dispatches nothing, and the
    run does not count as solved (nothing can start), so the queue length is halved."""
    snap = snapshot_congested()
    filler = RunningJob(Job("r3", 0, 4, (1, 0), 100, 100), 0, 70, on(0, 1, 2, 2))
    blocked = Snapshot(snap.time, snap.system, snap.queued, (*snap.running, filler), np.zeros_like(snap.free))
    disp = make_dispatcher("pcp", {"time_policy": "paper"})
    decision = disp.decide(blocked)
    assert decision.starts == () and decision.status == "optimal", decision
    assert decision.plan and min(decision.plan.values()) > blocked.time
    assert disp.cur_q_length == disp.q_length // 2  # type: ignore[attr-defined]
