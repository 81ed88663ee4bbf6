"""PCP'20 model: optimum = brute force on tiny instances, size independent of the number of nodes,
valid extracted plans (no straddling, same node per unit, capacities over time), feasible hints."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from cpdispatch.dispatchers.cp import objectives
from cpdispatch.dispatchers.cp.frontend import CpDispatcher
from cpdispatch.dispatchers.cp.greedy import greedy_plan
from cpdispatch.dispatchers.cp.instance import CpJob, CpRunning, Instance, Plan
from cpdispatch.dispatchers.cp.models.pcp20 import ModelTooLarge, Pcp20Model, add_no_overlap_2d, axes_of
from cpdispatch.system import NodeGroup, System, units_fitting

from .cp_helpers import allocations, feasible_allocation, load_ok, make_instance, pcp20_model, solve
from .helpers import on

KINDS = ("slowdown", "tardiness", "makespan", "late_jobs")

# -- instances -----------------------------------------------------------------------------------




def inst_gpu() -> Instance:
    """3 heterogeneous nodes (one GPU node), a running job on two nodes, a 3-unit job."""
    sys_ = System.build("t", [NodeGroup("g", 1, {"core": 4, "gpu": 1}), NodeGroup("c", 2, {"core": 2, "gpu": 0})])
    running = [CpRunning("r1", 2, (1, 0), 3, on(0, 1))]
    jobs = [CpJob("j1", 3, (1, 0), 2, 5, 4), CpJob("j2", 1, (2, 1), 3, 0, 4), CpJob("j3", 2, (2, 0), 1, 1, 2)]
    return make_instance(sys_, jobs, running)


def inst_mem() -> Instance:
    """2 nodes with cores and memory (multi-type units: same node), a 2-unit job, a running job."""
    sys_ = System.build("t", [NodeGroup("big", 1, {"core": 4, "mem": 8}), NodeGroup("small", 1, {"core": 2, "mem": 8})])
    running = [CpRunning("r1", 1, (2, 2), 2, on(1))]
    jobs = [CpJob("a", 2, (2, 4), 2, 3, 2), CpJob("b", 1, (1, 2), 1, 0, 1), CpJob("c", 1, (2, 1), 2, 6, 3)]
    return make_instance(sys_, jobs, running)


def inst_spread() -> Instance:
    """3 nodes, a 4-unit job that must span nodes with units sharing a node, two running jobs."""
    sys_ = System.build("t", [NodeGroup("n", 2, {"core": 2}), NodeGroup("m", 1, {"core": 3})])
    running = [CpRunning("r1", 1, (2,), 2, on(0)), CpRunning("r2", 1, (1,), 1, on(2))]
    jobs = [CpJob("x", 4, (1,), 2, 2, 2), CpJob("y", 1, (2,), 1, 0, 3), CpJob("z", 2, (1,), 1, 4, 3)]
    return make_instance(sys_, jobs, running)


def inst_three_types() -> Instance:
    """Core, memory and GPU: three pieces of nodes, units of 2 cores (no straddling matters)."""
    sys_ = System.build("t", [
        NodeGroup("a", 1, {"core": 4, "mem": 4, "gpu": 0}),
        NodeGroup("b", 1, {"core": 3, "mem": 6, "gpu": 2}),
        NodeGroup("c", 1, {"core": 4, "mem": 4, "gpu": 0}),
    ])
    running = [CpRunning("r1", 1, (1, 2, 1), 2, on(1)), CpRunning("r2", 2, (1, 1, 0), 1, on(0, 2))]
    jobs = [CpJob("p", 2, (2, 2, 0), 2, 4, 3), CpJob("q", 1, (1, 3, 1), 1, 1, 2), CpJob("w", 3, (1, 1, 0), 2, 0, 5)]
    return make_instance(sys_, jobs, running)


def inst_fluid() -> Instance:
    """Only units of 1 core (a fluid type: the cumulative is exact), on nodes of 3, 2 and 2 cores."""
    sys_ = System.build("t", [NodeGroup("m", 1, {"core": 3, "gpu": 0}), NodeGroup("n", 2, {"core": 2, "gpu": 1})])
    running = [CpRunning("r1", 3, (1, 0), 2, on(0, 0, 1)), CpRunning("r2", 1, (1, 1), 1, on(2))]
    jobs = [CpJob("f", 4, (1, 0), 2, 3, 2), CpJob("g", 2, (1, 0), 1, 0, 3), CpJob("h", 3, (1, 0), 2, 5, 3)]
    return make_instance(sys_, jobs, running)


INSTANCES = {
    "gpu": inst_gpu, "mem": inst_mem, "spread": inst_spread, "three_types": inst_three_types, "fluid": inst_fluid,
}


def random_instance(seed: int) -> Instance:
    """2-3 nodes of 2 kinds, 2-3 jobs (some multi-unit, some multi-type), 0-2 running jobs."""
    rnd = random.Random(seed)
    kinds = [{"core": rnd.randint(2, 4), "mem": rnd.choice([2, 4]), "gpu": rnd.choice([0, 1])} for _ in range(2)]
    groups = [NodeGroup("a", rnd.randint(1, 2), kinds[0]), NodeGroup("b", 1, kinds[1])]
    sys_ = System.build("r", groups)
    n = sys_.n_nodes
    free = np.array(sys_.capacity)
    running = []
    for i in range(rnd.randint(0, 2)):
        k = rnd.randrange(n)
        req = (1, rnd.choice([0, 1]), 0)
        if (free[k] >= req).all():
            free[k] -= req
            running.append(CpRunning(f"r{i}", 1, req, rnd.randint(1, 3), on(k)))
    jobs = []
    for i in range(rnd.randint(2, 3)):
        while True:
            req = (rnd.randint(1, 2), rnd.choice([0, 0, 1, 2]), rnd.choice([0, 0, 0, 1]))
            units = rnd.randint(1, 3)
            if sys_.max_units(req) >= units:
                break
        jobs.append(CpJob(f"j{i}", units, req, rnd.randint(1, 3), rnd.randint(0, 5), rnd.randint(1, 4)))
    return make_instance(sys_, jobs, running)


# -- brute force: every start on the grid x every unit-to-node allocation --------------------------


def brute_force(inst: Instance, kind: str) -> int:
    """Optimum of `kind` over every integer start in [0, H] and every unit-to-node allocation
    respecting per-node, per-type capacity over time."""
    options = [
        list(allocations(j.units, [int(min(x, j.units)) for x in units_fitting(inst.capacity, j.req)]))
        for j in inst.jobs
    ]
    ids = [j.id for j in inst.jobs]
    scored = sorted(
        (objectives.objective(kind).value(inst, dict(zip(ids, combo))), combo)
        for combo in itertools.product(range(inst.horizon + 1), repeat=len(ids))
    )
    for value, combo in scored:
        if feasible_allocation(inst, list(combo), options) is not None:
            return value
    raise AssertionError("no feasible schedule")


# -- checks ----------------------------------------------------------------------------------------


def check_plan(inst: Instance, plan: Plan) -> None:
    """Start in range, one node per unit that can host it, node capacities at every time."""
    n = inst.system.n_nodes
    allocs = []
    for j in inst.jobs:
        assert 0 <= plan.starts[j.id] <= inst.horizon
        nodes = plan.nodes[j.id]
        assert len(nodes) == j.units
        counts = np.bincount(np.asarray(nodes, dtype=np.int64), minlength=n)
        assert (counts <= units_fitting(inst.capacity, j.req)).all(), (j.id, nodes)
        allocs.append(tuple(int(c) for c in counts))
    assert load_ok(inst, [plan.starts[j.id] for j in inst.jobs], allocs)


def check_positions(bm: Pcp20Model, solver: cp_model.CpSolver) -> None:
    """Every box lies inside one node (no straddling), on the unit's node for every type."""
    axes = axes_of(bm.instance.system)
    plan = bm.complete(bm.extract(solver))
    for jv in bm.jobs:
        for i, unit in enumerate(jv.positions):
            node = plan.nodes[jv.job.id][i]
            for y, t, a in zip(unit, jv.geo.types, jv.geo.amounts):
                pos = solver.Value(y)
                first = int(axes.first[node, t])
                assert first <= pos and pos + a <= first + int(axes.capacity[node, t]), (jv.job.id, i, t)




# -- (a) optimum = brute force ---------------------------------------------------------------------


@pytest.mark.parametrize("reductions", [True, False])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_optimum_equals_brute_force(name: str, kind: str, reductions: bool) -> None:
    inst = INSTANCES[name]()
    bm = pcp20_model(inst, kind, reductions=reductions)
    solver, status = solve(bm)
    assert status == cp_model.OPTIMAL
    plan = bm.complete(bm.extract(solver))
    check_plan(inst, plan)
    check_positions(bm, solver)
    assert round(solver.ObjectiveValue()) == objectives.objective(kind).value(inst, plan) == brute_force(inst, kind)


@pytest.mark.parametrize("seed", range(12))
def test_optimum_equals_brute_force_random(seed: int) -> None:
    inst = random_instance(seed)
    expected = brute_force(inst, "slowdown")
    for all_different, reductions, sparse in ((False, True, False), (True, True, False), (False, False, True)):
        bm = pcp20_model(inst, "slowdown", all_different=all_different, reductions=reductions,
                        sparse_domains=sparse)
        solver, status = solve(bm)
        assert status == cp_model.OPTIMAL
        check_plan(inst, bm.complete(bm.extract(solver)))
        check_positions(bm, solver)
        assert round(solver.ObjectiveValue()) == expected, (all_different, reductions, sparse)


def random_fluid_instance(seed: int) -> Instance:
    """Units of 1 core only (fluid): 2-3 nodes, 2-3 jobs of 1-4 units, 0-3 running jobs."""
    rnd = random.Random(seed)
    sys_ = System.build("r", [NodeGroup("a", rnd.randint(1, 2), {"core": rnd.randint(1, 3)}),
                              NodeGroup("b", 1, {"core": rnd.randint(2, 4)})])
    free = np.array(sys_.capacity)
    running = []
    for i in range(rnd.randint(0, 3)):
        k = rnd.randrange(sys_.n_nodes)
        if free[k, 0] > 0:
            free[k, 0] -= 1
            running.append(CpRunning(f"r{i}", 1, (1,), rnd.randint(1, 3), on(k)))
    total = int(sys_.capacity.sum())
    jobs = [CpJob(f"j{i}", rnd.randint(1, min(4, total)), (1,), rnd.randint(1, 3), rnd.randint(0, 5))
            for i in range(rnd.randint(2, 3))]
    return make_instance(sys_, jobs, running)


@pytest.mark.parametrize("seed", range(10))
def test_fluid_reformulation_is_exact(seed: int) -> None:
    """Units of 1 of a single type: the cumulative alone (no positions) has the boxes' optimum,
    and the nodes found after solving respect capacities."""
    inst = random_fluid_instance(seed)
    expected = brute_force(inst, "slowdown")
    for fluid in (True, False):
        bm = pcp20_model(inst, "slowdown", reductions=fluid)
        assert bool(bm.fluid_types) == fluid
        solver, status = solve(bm)
        assert status == cp_model.OPTIMAL
        check_plan(inst, bm.complete(bm.extract(solver)))
        assert round(solver.ObjectiveValue()) == expected, fluid


def random_fold_instance(seed: int) -> Instance:
    """Cores and memory; queued units ask for `m` memory per core (one m), running jobs for any
    memory, often more per core than the nodes offer (so memory is not dominated)."""
    rnd = random.Random(seed)
    sys_ = System.build("r", [NodeGroup("a", rnd.randint(1, 2), {"core": rnd.randint(2, 3), "mem": rnd.randint(3, 7)}),
                              NodeGroup("b", 1, {"core": rnd.randint(2, 4), "mem": rnd.randint(4, 9)})])
    free = np.array(sys_.capacity)
    running = []
    for i in range(rnd.randint(1, 3)):
        k = rnd.randrange(sys_.n_nodes)
        req = (1, rnd.randint(0, 4))
        if (free[k] >= req).all():
            free[k] -= req
            running.append(CpRunning(f"r{i}", 1, req, rnd.randint(1, 3), on(k)))
    m = rnd.randint(1, 2)
    jobs = []
    for i in range(rnd.randint(2, 3)):
        cores = rnd.randint(1, 2)
        req = (cores, m * cores)
        units = rnd.randint(1, max(1, min(2, sys_.max_units(req))))
        jobs.append(CpJob(f"j{i}", units, req, rnd.randint(1, 3), rnd.randint(0, 5)))
    return make_instance(sys_, jobs, running)


@pytest.mark.parametrize("seed", range(16))
def test_memory_in_proportion_to_cores_is_folded_exactly(seed: int) -> None:
    """Queued units with one memory-per-core ratio: memory leaves the model (cores fluid when
    units need 1 core), the running jobs' memory becomes effective cores per node, and the
    optimum and the plans' validity (on cores and memory) are those of the full model."""
    inst = random_fold_instance(seed)
    expected = brute_force(inst, "slowdown")
    folded = pcp20_model(inst, "slowdown")
    assert len(folded.dropped_types) == 1  # folded, or dominated (then no fold is needed)
    assert all({f.r, f.c} == {0, 1} for f in folded.folds)
    check_plan(inst, folded.greedy_plan())  # on the folded (effective) amounts, valid on the real ones
    for bm in (folded, pcp20_model(inst, "slowdown", reductions=False)):
        solver, status = solve(bm)
        assert status == cp_model.OPTIMAL
        check_plan(inst, bm.complete(bm.extract(solver)))
        assert round(solver.ObjectiveValue()) == expected


def test_fold_turns_memory_into_effective_cores() -> None:
    """HPC2N-like node {2 cores, 1024 MB}: a running 1-core job holding 780 MB leaves no room for
    a 400 MB core until it ends (effective usage 2), one holding 400 MB leaves one core; the
    node itself offers floor(1024 / 400) = 2 cores, so nothing is withheld for ever."""
    sys_ = System.build("h", [NodeGroup("n", 3, {"core": 2, "mem": 1024})])
    running = [CpRunning("big", 1, (1, 780), 50, on(0)), CpRunning("std", 1, (1, 400), 20, on(1))]
    inst = make_instance(sys_, [CpJob("q", 2, (1, 400), 10, 0)], running)
    bm = pcp20_model(inst, "slowdown")
    assert bm.folds and bm.fluid_types == {0}
    run = bm.running
    rows = sorted(zip(run.node.tolist(), run.remaining.tolist(), run.usage[:, 0].tolist()))
    assert rows == [(0, 50, 2), (1, 20, 1)] and not run.usage[:, 1].any()
    solver, status = solve(bm)
    assert status == cp_model.OPTIMAL
    plan = bm.complete(bm.extract(solver))
    assert plan.starts["q"] == 0 and sorted(plan.nodes["q"]) in ([1, 2], [2, 2])
    check_plan(inst, plan)


def test_fluid_model_has_one_variable_per_job() -> None:
    curie = System.build("c", [NodeGroup("thin", 50, {"core": 16, "mem": 65536, "gpu": 0}),
                               NodeGroup("hybrid", 5, {"core": 8, "mem": 24576, "gpu": 2})])
    jobs = [CpJob(f"j{i}", 1 + 37 * i, (1, 0, 0), 100 + i, 0) for i in range(10)]
    running = [CpRunning("r", 20, (1, 0, 0), 30, on(*range(20)))]
    bm = pcp20_model(make_instance(curie, jobs, running), "slowdown")
    assert bm.variables == len(jobs) and bm.fluid_types == {0}
    solver, status = solve(bm)
    assert status == cp_model.OPTIMAL
    check_plan(bm.instance, bm.complete(bm.extract(solver)))


def test_dominated_types() -> None:
    """Memory is left out when no unit can need more of it per core than any node offers."""
    assert pcp20_model(inst_mem()).dropped_types == {1}
    assert pcp20_model(inst_mem(), reductions=False).dropped_types == frozenset()
    assert pcp20_model(inst_three_types()).dropped_types == frozenset()  # q needs 3 mem per core


def test_implied_cumulative_does_not_change_the_optimum() -> None:
    inst = inst_three_types()
    values = []
    for implied in (True, False):
        solver, status = solve(pcp20_model(inst, "slowdown", implied_cumulative=implied))
        assert status == cp_model.OPTIMAL
        values.append(round(solver.ObjectiveValue()))
    assert values[0] == values[1] == brute_force(inst, "slowdown")


# -- (b) size independent of the number of nodes ---------------------------------------------------


def _sized(per_group: int, **options: bool) -> Pcp20Model:
    """Eurora-like nodes (GPU half, MIC half), `per_group` nodes of each."""
    sys_ = System.build("t", [
        NodeGroup("gpu", per_group, {"core": 16, "mem": 16384, "gpu": 2, "mic": 0}),
        NodeGroup("mic", per_group, {"core": 16, "mem": 16384, "gpu": 0, "mic": 2}),
    ])
    reqs = [(1, 0, 0, 0), (4, 1024, 0, 0), (2, 512, 1, 0), (8, 0, 0, 1), (1, 100, 0, 0)]
    jobs = [CpJob(f"j{i}", 1 + i % 5, reqs[i % len(reqs)], 100 + 10 * i, 0) for i in range(15)]
    running = [CpRunning(f"r{i}", 2, (2, 1024, i % 2, 0), 50 + i, on(i, i + 1)) for i in range(6)]
    return pcp20_model(make_instance(sys_, jobs, running), "slowdown", **options)


@pytest.mark.parametrize("reductions", [True, False])
def test_model_size_does_not_depend_on_the_number_of_nodes(reductions: bool) -> None:
    small, big = _sized(32, reductions=reductions), _sized(512, reductions=reductions)  # 64 and 1,024 nodes
    assert small.variables == big.variables
    assert small.constraints == big.constraints
    if reductions:
        assert small.dropped_types == {1}  # memory never binds before cores on these jobs
    else:
        # the paper's count |Q| + sum units * |R_j|, plus a node variable per unit when it has
        # several types or an amount > 1 (no piece literals: one piece per request here), plus
        # the off-axis wall of each NoOverlap2D with running boxes (`add_no_overlap_2d`)
        expected = sum(
            1 + j.units * (sum(a > 0 for a in j.req) + (sum(a > 0 for a in j.req) > 1 or max(j.req) > 1))
            for j in small.instance.jobs
        )
        assert len(small.walls) == 3  # core, memory, gpu
        assert small.variables == expected + 3


def test_one_box_per_node_run_of_a_running_job() -> None:
    """A running job holding whole consecutive nodes is one box per type; equal-remaining jobs
    stacked on one node merge too."""
    sys_ = System.build("t", [NodeGroup("n", 8, {"core": 4})])
    running = [
        CpRunning("whole", 12, (1,), 5, on(*(0,) * 4, *(1,) * 4, *(2,) * 4)),
        CpRunning("a", 1, (2,), 3, on(5)),
        CpRunning("b", 1, (1,), 3, on(5)),
        CpRunning("c", 1, (1,), 7, on(5)),
    ]
    inst = make_instance(sys_, [CpJob("q", 2, (1,), 2, 0)], running)
    bm = pcp20_model(inst, "slowdown", reductions=False)
    assert bm.running_boxes == 3  # nodes 0-2 as one, c at the bottom of node 5, a+b above it


# -- (c) extracted plans respect the nodes ---------------------------------------------------------


@st.composite
def tiny_instances(draw: st.DrawFn) -> Instance:
    kinds = [
        {
            "core": draw(st.integers(1, 6)),
            "mem": draw(st.sampled_from([0, 4, 8])),
            "gpu": draw(st.sampled_from([0, 1, 2])),
        }
        for _ in range(draw(st.integers(1, 3)))
    ]
    sys_ = System.build("h", [NodeGroup(f"g{i}", draw(st.integers(1, 3)), k) for i, k in enumerate(kinds)])
    n = sys_.n_nodes
    free = np.array(sys_.capacity)
    running = []
    for i in range(draw(st.integers(0, 4))):
        req = (draw(st.integers(1, 2)), draw(st.sampled_from([0, 1, 2])), 0)
        nodes = tuple(draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=3)))
        work = free.copy()
        ok = True
        for k in nodes:
            work[k] -= req
            ok &= bool((work[k] >= 0).all())
        if ok:
            free = work
            running.append(CpRunning(f"r{i}", len(nodes), req, draw(st.integers(1, 6)), on(*nodes)))
    jobs = []
    for i in range(draw(st.integers(1, 5))):
        req = (draw(st.integers(1, 3)), draw(st.sampled_from([0, 0, 1, 3])), draw(st.sampled_from([0, 0, 1])))
        most = sys_.max_units(req)
        if most == 0:
            continue
        units = draw(st.integers(1, min(4, most)))
        jobs.append(CpJob(f"j{i}", units, req, draw(st.integers(1, 5)), draw(st.integers(0, 9))))
    if not jobs:
        jobs.append(CpJob("j", 1, (1, 0, 0), 1, 0))
    return make_instance(sys_, jobs, running)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_instances())
def test_extracted_plans_respect_node_capacities(inst: Instance) -> None:
    bm = pcp20_model(inst, "slowdown")
    solver, status = solve(bm, workers=1, max_time_in_seconds=5)
    assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    check_plan(inst, bm.complete(bm.extract(solver)))
    check_positions(bm, solver)


def test_two_types_folded_into_one_are_not_both_withheld() -> None:
    """Found by the property above: the one queued job asks mem and gpu in fixed proportion to its
    core, and both folded into core withheld node 0's whole core capacity forever (infeasible).
    One fold per target type: the job starts on node 0 when the running jobs end."""
    sys_ = System.build("h", [NodeGroup("g0", 1, {"core": 2, "mem": 4, "gpu": 1}),
                              NodeGroup("g1", 2, {"core": 1, "mem": 0, "gpu": 0})])
    running = [CpRunning(f"r{i}", 1, (1, 1, 0), 1, on(0)) for i in range(2)]
    inst = make_instance(sys_, [CpJob("j0", 1, (1, 3, 1), 1, 0)], running)
    bm = pcp20_model(inst, "slowdown")
    assert len(bm.folds) == 1
    solver, status = solve(bm, workers=1)
    assert status == cp_model.OPTIMAL
    plan = bm.complete(bm.extract(solver))
    assert plan.starts == {"j0": 1} and plan.nodes == {"j0": (0,)}


# -- (d) hints ---------------------------------------------------------------------------------------


def hand_plan() -> tuple[Instance, Plan]:
    """inst_three_types with a hand-made complete plan that respects node capacities."""
    inst = inst_three_types()
    plan = Plan(starts={"p": 0, "q": 2, "w": 2}, nodes={"p": (2, 0), "q": (1,), "w": (0, 1, 2)})
    check_plan(inst, plan)
    return inst, plan


def solve_fixed_hint(bm: Pcp20Model, plan: Plan) -> cp_model.CpSolver:
    bm.add_hint(plan)
    assert bm.hint_complete
    solver, status = solve(bm, workers=1, fix_variables_to_their_hinted_value=True)
    assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    got = bm.complete(bm.extract(solver))
    assert got.starts == plan.starts
    assert {j: sorted(n) for j, n in got.nodes.items()} == {j: sorted(n) for j, n in plan.nodes.items()}
    return solver


@pytest.mark.parametrize("kind", KINDS)
def test_hand_plan_hint_is_feasible(kind: str) -> None:
    inst, plan = hand_plan()
    bm = pcp20_model(inst, kind)
    solver = solve_fixed_hint(bm, plan)
    assert round(solver.ObjectiveValue()) == objectives.objective(kind).value(inst, plan.starts)


@pytest.mark.parametrize("kind", KINDS)
def test_hint_covers_every_variable(kind: str) -> None:
    inst, plan = hand_plan()
    bm = pcp20_model(inst, kind)
    bm.add_hint(plan)
    proto = bm.model.Proto()
    hinted = set(proto.solution_hint.vars)
    assert set(range(len(proto.variables))) <= hinted


@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_greedy_hint_is_feasible(name: str) -> None:
    inst = INSTANCES[name]()
    solve_fixed_hint(pcp20_model(inst, "slowdown"), greedy_plan(inst))


def serial_plan(inst: Instance) -> Plan:
    """Jobs one after the other once every running job has ended, each by best fit on empty nodes."""
    plan = Plan()
    t = max((r.remaining for r in inst.running), default=0)
    for j in inst.jobs:
        fit = np.minimum(units_fitting(inst.capacity, j.req), j.units)
        nodes: list[int] = []
        for k in np.flatnonzero(fit):
            nodes += [int(k)] * int(min(fit[k], j.units - len(nodes)))
        plan.starts[j.id], plan.nodes[j.id] = t, tuple(nodes)
        t += j.duration
    return plan


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_instances())
def test_complete_hints_are_feasible(inst: Instance) -> None:
    """Whenever the sweep finds positions (always, for amounts of 1), the hint is feasible."""
    for plan in (serial_plan(inst), greedy_plan(inst)):
        check_plan(inst, plan)
        bm = pcp20_model(inst, "slowdown")
        bm.add_hint(plan)
        if all(a <= 1 for j in inst.jobs for a in j.req):
            assert bm.hint_complete
        if bm.hint_complete:
            solver, status = solve(bm, workers=1, fix_variables_to_their_hinted_value=True)
            assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE)


def test_fixed_search_finds_a_valid_plan() -> None:
    inst = inst_three_types()
    bm = pcp20_model(inst, "slowdown")
    bm.add_search()
    solver, status = solve(bm, workers=1, search_branching=cp_model.FIXED_SEARCH)
    assert status in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    check_plan(inst, bm.complete(bm.extract(solver)))
    check_positions(bm, solver)


# -- the dispatcher ----------------------------------------------------------------------------------


def test_size_guard() -> None:
    inst = inst_three_types()  # 6 units with positions
    pcp20_model(inst, max_units=6)
    with pytest.raises(ModelTooLarge):
        pcp20_model(inst, max_units=5)
    pcp20_model(inst_fluid(), max_units=1)  # fluid units have no positions
    boxes = pcp20_model(inst).running_boxes
    assert boxes > 0
    pcp20_model(inst, max_running_boxes=boxes)
    with pytest.raises(ModelTooLarge):
        pcp20_model(inst, max_running_boxes=boxes - 1)


def test_solver_parameters() -> None:
    assert pcp20_model(inst_three_types()).solver_parameters == {
        "cp_model_presolve": False, "hint_conflict_limit": 0, "use_linear3_for_no_overlap_2d_precedences": False,
        "transitive_precedences_work_limit": 0}
    fluid = {"linearization_level": 0, "cp_model_presolve": False, "transitive_precedences_work_limit": 0,
             "symmetry_level": 0}
    assert pcp20_model(inst_fluid()).solver_parameters == fluid
    assert pcp20_model(inst_fluid(), hint_replay=False).solver_parameters == {**fluid, "hint_conflict_limit": 0}


def test_fluid_greedy_plan_only_where_nodes_differ_in_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    """With GPU nodes beside CPU nodes, where a CPU job goes matters to GPU jobs: pcp20 then uses
    the shared per-node greedy plan (demand-aware placement over time), not the 1-D one."""
    from cpdispatch.dispatchers.cp import greedy as greedy_module

    calls: list[Instance] = []

    def spy(inst: Instance) -> Plan:
        calls.append(inst)
        return greedy_plan(inst)

    monkeypatch.setattr(greedy_module, "greedy_plan", spy)
    running = [CpRunning("r", 3, (1, 0), 5, on(0, 2, 3))]
    jobs = [CpJob(f"j{i}", 2 + i, (1, 0), 3 + i, i) for i in range(4)]
    mixed = System.build("h", [NodeGroup("gpu", 2, {"core": 4, "gpu": 2}), NodeGroup("cpu", 2, {"core": 4, "gpu": 0})])
    bm = pcp20_model(make_instance(mixed, jobs, running), "slowdown")
    assert bm.fluid_types == {0}
    check_plan(bm.instance, bm.greedy_plan())
    assert calls == [bm.instance]
    same = System.build("s", [NodeGroup("n", 4, {"core": 4, "gpu": 0})])
    uniform = pcp20_model(make_instance(same, jobs, running), "slowdown")
    check_plan(uniform.instance, uniform.greedy_plan())
    assert calls == [bm.instance]  # the 1-D plan: the shared one was not called


@pytest.mark.parametrize("seed", range(10))
def test_fluid_greedy_plan_is_valid_and_no_later(seed: int) -> None:
    """On fluid instances pcp20's own greedy plan (totals, then `fluid_nodes`) respects node
    capacities, starts the first job no later than the per-node greedy plan, and is a complete,
    feasible hint (`solve_fixed_hint` solves with every variable fixed to it)."""
    inst = random_fluid_instance(seed)
    bm = pcp20_model(inst, "slowdown")
    plan = bm.greedy_plan()
    check_plan(inst, plan)
    first = inst.jobs[0].id
    assert plan.starts[first] <= greedy_plan(inst).starts[first]
    solve_fixed_hint(bm, plan)


def test_each_no_overlap_2d_with_running_boxes_has_one_zero_area_wall() -> None:
    """The box that keeps CP-SAT from re-presolving the fixed running boxes at every return to
    level 0 (`add_no_overlap_2d`): width 0 at time 1, at position -1 or just above the axis, and
    only where running boxes are."""
    built = pcp20_model(inst_three_types(), reductions=False)
    proto = built.model.proto
    assert built.running_boxes > 0
    domains = []
    for ct in proto.constraints:
        if not ct.has_no_overlap_2d():
            continue
        xs = [proto.constraints[i].interval for i in ct.no_overlap_2d.x_intervals]
        ys = [proto.constraints[i].interval for i in ct.no_overlap_2d.y_intervals]
        zero = [(x, y) for x, y in zip(xs, ys) if x.size.offset == 0 and not x.size.vars]
        assert len(zero) == 1
        x, y = zero[0]
        assert x.start.offset == 1 and not x.start.vars
        assert y.size.offset == 1 and len(y.start.vars) == 1
        domains.append(list(proto.variables[y.start.vars[0]].domain))
    assert sorted(domains) == [[-1, -1, 2, 2], [-1, -1, 11, 11], [-1, -1, 14, 14]]  # gpu, core, memory


@pytest.mark.parametrize("wall_position", [-1, 1])
def test_a_zero_width_box_off_the_axis_constrains_nothing(wall_position: int) -> None:
    """The CP-SAT semantics `add_no_overlap_2d` relies on. A box of width 3 at time 0 on
    position 0 crosses time 1: it is feasible when the wall is off the axis (positions 0-0), and
    infeasible when the wall is on it (a zero-width box inside another box's span conflicts)."""
    m = cp_model.CpModel()
    s = m.new_int_var(0, 0, "s")
    xs = [m.new_fixed_size_interval_var(0, 5, ""), m.new_fixed_size_interval_var(s, 3, ""),
          m.new_fixed_size_interval_var(1, 0, "")]
    ys = [m.new_fixed_size_interval_var(1, 1, ""), m.new_fixed_size_interval_var(0, 1, ""),
          m.new_fixed_size_interval_var(wall_position if wall_position < 0 else 0, 1, "")]
    m.add_no_overlap_2d(xs, ys)
    expected = cp_model.OPTIMAL if wall_position < 0 else cp_model.INFEASIBLE
    assert cp_model.CpSolver().solve(m) == expected
    built = cp_model.CpModel()
    wall = add_no_overlap_2d(built, [built.new_fixed_size_interval_var(0, 5, "")],
                             [built.new_fixed_size_interval_var(0, 1, "")], True, 1)
    assert wall is not None and list(wall.proto.domain) == [-1, -1, 1, 1]


@pytest.mark.parametrize("relaxed", [False, True])
@pytest.mark.parametrize("max_units", [128, 1])
def test_dispatcher_starts_valid_jobs(max_units: int, relaxed: bool) -> None:
    from cpdispatch.dispatchers import make_dispatcher
    from cpdispatch.job import Job
    from cpdispatch.snapshot import QueuedJob, RunningJob, Snapshot

    sys_ = System.build("t", [NodeGroup("n", 2, {"core": 4, "mem": 8}), NodeGroup("g", 1, {"core": 2, "mem": 4})])
    run = Job("r", 0, 2, (2, 2), 100, 100)
    queued = tuple(
        QueuedJob(Job(f"q{i}", 5 + i, 1 + i % 3, (1 + i % 2, 2), 50, 50), 10 + 5 * i) for i in range(6)
    )
    free = np.array(sys_.capacity)
    free[0] -= (4, 4)
    snap = Snapshot(10, sys_, queued, (RunningJob(run, 0, 20, on(0, 0)),), free)
    disp = make_dispatcher("pcp20", {"max_units": str(max_units), "relaxed_start": "0.005" if relaxed else "0"})
    assert isinstance(disp, CpDispatcher)
    inst = disp.instance(snap, disp.select(snap, disp.order(snap)))
    greedy = greedy_plan(inst)
    decision = disp.decide(snap)
    work = free.copy()
    for s in decision.starts:
        job = next(q.job for q in queued if q.job.id == s.job_id)
        for k in s.nodes:
            work[k] -= job.req
    assert (work >= 0).all()
    if relaxed:  # the relaxation's optimum fits on the nodes as planned: proven, no model solved
        assert decision.status == "relaxation" and decision.variables is None
        assert sorted(s.job_id for s in decision.starts) == ["q0", "q2", "q3"]
    elif max_units == 1:  # the size guard: the greedy plan's jobs at 0, no solve
        assert decision.status == "greedy:too-large"
        assert sorted(s.job_id for s in decision.starts) == sorted(j for j, t in greedy.starts.items() if t == 0)
    else:  # the model improves on the greedy plan (q1 waits so that q2 and q3 start now)
        assert decision.status in ("optimal", "feasible")  # proven or not within pcp20's 0.5-ms budget
        assert decision.objective is not None
        assert decision.objective < objectives.objective("slowdown").value(inst, greedy.starts)
        assert sorted(s.job_id for s in decision.starts) == ["q0", "q2", "q3"]
