"""The priority-list schedule: complete, valid at every time on every node and type, and each job
at its earliest feasible start (checked by brute force on the integer grid)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cpdispatch.allocators import best_fit
from cpdispatch.dispatchers.cp.greedy import NoStart, greedy_plan
from cpdispatch.dispatchers.cp.instance import CpJob, CpRunning, Instance, Plan
from cpdispatch.dispatchers.cp.objectives import objective
from cpdispatch.system import NodeGroup, System, units_fitting

from .cp_helpers import make_instance
from .helpers import on
from .strategies import systems

# -- builders and brute-force checks ------------------------------------------------------------




def usage_at(inst: Instance, plan: Plan, t: int, upto: int | None = None) -> np.ndarray:
    """Per node and type, what running jobs and the first `upto` planned jobs use at time t."""
    use = np.zeros_like(inst.capacity)
    for r in inst.running:
        if t < max(1, r.remaining):
            for k in r.alloc.per_unit():
                use[k] += r.req
    for j in inst.jobs[:upto]:
        s = plan.starts[j.id]
        if s <= t < s + max(1, j.duration):
            for k in plan.nodes[j.id]:
                use[k] += j.req
    return use


def check_valid(inst: Instance, plan: Plan) -> None:
    assert set(plan.starts) == {j.id for j in inst.jobs} == set(plan.nodes)
    times = {0} | {max(1, r.remaining) for r in inst.running} | set(plan.starts.values())
    for j in inst.jobs:
        assert plan.starts[j.id] >= 0
        assert len(plan.nodes[j.id]) == j.units
    for t in sorted(times):
        over = usage_at(inst, plan, t) > inst.capacity
        assert not over.any(), f"capacity exceeded at t={t}: {np.argwhere(over).tolist()}"


def fits_at(inst: Instance, plan: Plan, i: int, t: int, limit: np.ndarray | None = None) -> bool:
    """Job i fits at t (through its whole interval) given the running jobs and jobs 0..i-1 (at
    most `limit[k]` units on node k)."""
    job = inst.jobs[i]
    low = np.min([inst.capacity - usage_at(inst, plan, x, i) for x in range(t, t + max(1, job.duration))], axis=0)
    fit = units_fitting(low, job.req)
    if limit is not None:
        fit = np.minimum(fit, limit)
    return int(np.minimum(fit, job.units).sum()) >= job.units


# -- random instances ----------------------------------------------------------------------------


@st.composite
def instances(draw: st.DrawFn) -> Instance:
    system = draw(systems(max_groups=3, max_nodes=3))
    cap = system.capacity
    free = np.array(cap, dtype=np.int64)
    n_types = len(system.types)

    def request() -> tuple[int, ...]:
        node = cap[draw(st.integers(0, system.n_nodes - 1))]  # fits on at least this node
        return tuple(draw(st.integers(1 if k == 0 else 0, int(node[k]))) if node[k] else 0 for k in range(n_types))

    running = []
    for i in range(draw(st.integers(0, 4))):
        req, units = request(), draw(st.integers(1, 3))
        nodes = best_fit(free, cap, req, units)
        if nodes is not None:
            running.append(CpRunning(f"r{i}", units, req, draw(st.integers(1, 8)), on(*nodes)))
    jobs = []
    for i in range(draw(st.integers(1, 6))):
        req = request()
        units = draw(st.integers(1, max(1, min(4, system.max_units(req)))))
        jobs.append(CpJob(f"j{i}", units, req, draw(st.integers(0, 6)), draw(st.integers(0, 50))))
    horizon = max(1, sum(r.remaining for r in running) + sum(j.duration for j in jobs))
    return Instance(0, system, tuple(jobs), tuple(running), free, horizon)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_greedy_plan_is_complete_valid_and_earliest(inst: Instance) -> None:
    plan = greedy_plan(inst)
    check_valid(inst, plan)
    for i, job in enumerate(inst.jobs):
        s = plan.starts[job.id]
        assert fits_at(inst, plan, i, s)
        assert not any(fits_at(inst, plan, i, t) for t in range(s)), f"{job.id} could start before {s}"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.data())
def test_greedy_plan_with_limits_is_valid_within_them_and_earliest(inst: Instance, data: st.DataObject) -> None:
    """PCP'19's candidate nodes (`limits`): each job at the earliest start its allowed nodes give."""
    limits = {j.id: np.array(data.draw(st.lists(st.integers(0, j.units), min_size=inst.system.n_nodes,
                                                max_size=inst.system.n_nodes)), dtype=np.int64) for j in inst.jobs}
    room = {j.id: int(np.minimum(np.minimum(units_fitting(inst.capacity, j.req), limits[j.id]), j.units).sum())
            for j in inst.jobs}
    assume(all(room[j.id] >= j.units for j in inst.jobs))  # else no start at all (NoStart)
    plan = greedy_plan(inst, limits=limits)
    check_valid(inst, plan)
    for i, job in enumerate(inst.jobs):
        s, nodes = plan.starts[job.id], np.bincount(plan.nodes[job.id], minlength=inst.system.n_nodes)
        assert (nodes <= limits[job.id]).all(), f"{job.id} beyond its limits"
        assert fits_at(inst, plan, i, s, limits[job.id])
        assert not any(fits_at(inst, plan, i, t, limits[job.id]) for t in range(s)), f"{job.id} could start before {s}"


# -- hand cases ----------------------------------------------------------------------------------


def test_waits_for_release_and_backfills_beside_it() -> None:
    sys_ = System.build("t", [NodeGroup("n", 1, {"core": 4})])
    inst = make_instance(sys_, [CpJob("a", 1, (4,), 3, 0), CpJob("b", 1, (2,), 5, 0), CpJob("c", 1, (2,), 6, 0)],
                         [CpRunning("r", 1, (2,), 5, on(0))])
    plan = greedy_plan(inst)
    # b ends when a starts, so it goes now beside the running job; c would collide with a: after it
    assert plan.starts == {"a": 5, "b": 0, "c": 8}


def test_priority_order_decides_who_goes_first() -> None:
    sys_ = System.build("t", [NodeGroup("n", 2, {"core": 2})])
    inst = make_instance(sys_, [CpJob("long", 2, (2,), 10, 0), CpJob("short", 1, (2,), 1, 0),
                                CpJob("tiny", 1, (1,), 2, 0)], [])
    plan = greedy_plan(inst)
    assert plan.starts == {"long": 0, "short": 10, "tiny": 10}
    assert sorted(plan.nodes["long"]) == [0, 1]


def test_node_level_feasibility_not_just_totals() -> None:
    """4 free cores in total but 2 per node: a 3-core unit must wait for a whole node."""
    sys_ = System.build("t", [NodeGroup("n", 2, {"core": 4})])
    inst = make_instance(sys_, [CpJob("a", 1, (3,), 2, 0)],
                         [CpRunning("r1", 1, (2,), 4, on(0)), CpRunning("r2", 1, (2,), 7, on(1))])
    plan = greedy_plan(inst)
    assert plan.starts == {"a": 4} and plan.nodes == {"a": (0,)}


def test_interval_must_fit_through_later_planned_jobs() -> None:
    """b fits now but would collide with a, planned to start at 2 on the only node: it goes after."""
    sys_ = System.build("t", [NodeGroup("n", 1, {"core": 3})])
    inst = make_instance(sys_, [CpJob("a", 1, (3,), 3, 0), CpJob("b", 1, (1,), 5, 0)],
                         [CpRunning("r", 1, (2,), 2, on(0))])
    plan = greedy_plan(inst)
    assert plan.starts == {"a": 2, "b": 5}


def test_zero_duration_occupies_the_present() -> None:
    """Without the clamp a duration may be 0: the job still needs room at its start."""
    sys_ = System.build("t", [NodeGroup("n", 1, {"core": 2})])
    inst = make_instance(sys_, [CpJob("a", 1, (2,), 0, 0)], [CpRunning("r", 1, (1,), 3, on(0))])
    assert greedy_plan(inst).starts == {"a": 3}


def test_multi_unit_job_spreads_and_shares_nodes() -> None:
    sys_ = System.build("t", [NodeGroup("n", 3, {"core": 2, "mem": 4})])
    inst = make_instance(sys_, [CpJob("a", 5, (1, 1), 2, 0)], [CpRunning("r", 1, (1, 4), 3, on(1))])
    plan = greedy_plan(inst)
    assert plan.starts["a"] == 3  # now only 4 units fit (node 1 has no memory left)
    assert sorted(plan.nodes["a"]) == [0, 0, 1, 1, 2]
    check_valid(inst, plan)


def test_impossible_job_raises() -> None:
    sys_ = System.build("t", [NodeGroup("n", 1, {"core": 2})])
    inst = make_instance(sys_, [CpJob("a", 1, (3,), 1, 0)], [])
    with pytest.raises(ValueError):
        greedy_plan(inst)


def test_limits_keep_jobs_on_their_candidate_nodes_within_their_caps() -> None:
    """PCP'19's restriction: a at most one unit on nodes 0 and 2, b on node 2 only, so b waits
    for a there although node 1 is free; without limits both start now."""
    sys_ = System.build("t", [NodeGroup("n", 3, {"core": 2})])
    inst = make_instance(sys_, [CpJob("a", 2, (1,), 2, 0), CpJob("b", 1, (2,), 1, 0)], [])
    assert greedy_plan(inst).starts == {"a": 0, "b": 0}
    limits = {"a": np.array([1, 0, 1]), "b": np.array([0, 0, 1])}
    plan = greedy_plan(inst, limits=limits)
    assert plan.starts == {"a": 0, "b": 2}
    assert sorted(plan.nodes["a"]) == [0, 2] and plan.nodes["b"] == (2,)
    with pytest.raises(NoStart):
        greedy_plan(inst, limits=limits, latest=1)
    assert greedy_plan(inst, inst.jobs[1:], limits=limits).starts == {"b": 0}


def test_an_objective_values_a_plan_as_its_starts() -> None:
    sys_ = System.build("t", [NodeGroup("n", 1, {"core": 1})])
    inst = make_instance(sys_, [CpJob("a", 1, (1,), 4, 0), CpJob("b", 1, (1,), 2, 0)], [])
    plan = greedy_plan(inst)
    assert plan.starts == {"a": 0, "b": 4}
    # exact weights lcm(4, 2) / d: a 1, b 2; b starts at 4
    assert objective("slowdown").value(inst, plan) == objective("slowdown").value(inst, plan.starts) == 2 * 4


def test_large_system_plan_is_valid() -> None:
    """CEA-Curie-sized: 5,544 nodes of three kinds, 400 running jobs, 100 queued jobs: every job
    planned, node capacities respected at every start and release. (Its speed is measured by
    `benchmarks/bench_cp.py`, not asserted here.)"""
    rng = np.random.default_rng(0)
    sys_ = System.build("big", [NodeGroup("thin", 5040, {"core": 16, "mem": 64}),
                                NodeGroup("fat", 360, {"core": 32, "mem": 128}),
                                NodeGroup("hyb", 144, {"core": 8, "mem": 24, "gpu": 2})])
    free = np.array(sys_.capacity)
    running = []
    for i in range(400):
        units = int(rng.integers(1, 200))
        nodes = best_fit(free, sys_.capacity, (1, 1, 0), units)
        if nodes is not None:
            running.append(CpRunning(f"r{i}", units, (1, 1, 0), int(rng.integers(1, 80000)), on(*nodes)))
    jobs = [CpJob(f"j{i}", int(rng.integers(1, 3000)), (1, int(rng.integers(0, 3)), 0),
                  int(rng.integers(1, 50000)), 0) for i in range(100)]
    inst = Instance(0, sys_, tuple(jobs), tuple(running), free, 10**7)
    plan = greedy_plan(inst)
    assert set(plan.starts) == {j.id for j in jobs} and all(len(plan.nodes[j.id]) == j.units for j in jobs)
    # a sweep over start and release events (releases first at equal times): per node, in use <= capacity
    events: list[tuple[int, int, int, np.ndarray]] = []
    for r in running:
        for node, count in zip(r.alloc.nodes, r.alloc.counts):
            amount = count * np.asarray(r.req)
            events += [(0, 1, node, amount), (max(1, r.remaining), 0, node, -amount)]
    for j in jobs:
        s, e = plan.starts[j.id], plan.starts[j.id] + max(1, j.duration)
        for node, count in zip(*np.unique(plan.nodes[j.id], return_counts=True)):
            events += [(s, 1, int(node), count * np.asarray(j.req)), (e, 0, int(node), -count * np.asarray(j.req))]
    used = np.zeros_like(sys_.capacity)
    for _, _, node, amount in sorted(events, key=lambda ev: ev[:3]):
        used[node] += amount
        assert (used[node] <= sys_.capacity[node]).all()
