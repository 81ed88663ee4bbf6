"""PCP'19 in the paper's layout (`PerNodeModel(layout="units")`: one optional interval per unit that
fits on each node): same optimum as the counts layout, valid plans, a hand-counted size, hints,
the fixed search, and the dispatchers' `layout` option."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

import cpdispatch as cpd
from cpdispatch.dispatchers import make_dispatcher
from cpdispatch.dispatchers.cp import objectives
from cpdispatch.dispatchers.cp.frontend import CpDispatcher
from cpdispatch.dispatchers.cp.instance import CpJob, CpRunning, Instance, Plan
from cpdispatch.dispatchers.cp.models.pcp19.model import PerNodeModel, restricted_greedy
from cpdispatch.dispatchers.cp.objectives import objective
from cpdispatch.errors import CpdispatchError
from cpdispatch.system import NodeGroup, System, units_fitting
from cpdispatch.validate import schedule_errors

from .cp_helpers import load_ok, make_instance
from .helpers import on

# -- plan check, independent of the model -----------------------------------------------------------


def check_plan(inst: Instance, bm: PerNodeModel, plan: Plan) -> None:
    """Every job of the model starts within the horizon with exactly n_j units, at most as many per
    node as fit there (free now or full capacity), and the load per node and type, running jobs
    included, never exceeds the capacity."""
    base = inst.free if bm.free_now else inst.capacity
    n_nodes = inst.capacity.shape[0]
    allocs = []
    for job in bm.kept:
        assert 0 <= plan.starts[job.id] <= inst.horizon
        nodes = plan.nodes[job.id]
        assert len(nodes) == job.units, (job.id, nodes)
        counts = np.bincount(np.asarray(nodes, dtype=np.int64), minlength=n_nodes)
        if any(job.req):
            assert (counts <= units_fitting(base, job.req)).all(), (job.id, nodes)
        allocs.append(tuple(int(c) for c in counts))
    sub = Instance(0, inst.system, bm.kept, inst.running, inst.free, inst.horizon)
    assert load_ok(sub, [plan.starts[j.id] for j in bm.kept], allocs)


def optimum(bm: PerNodeModel) -> cp_model.CpSolver:
    """Solved to optimality, no time limit: the instances are small enough."""
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 1
    assert solver.solve(bm.model) == cp_model.OPTIMAL
    return solver


# -- (a) same optimum as the counts layout on random small instances ---------------------------------


@st.composite
def small_instances(draw: st.DrawFn) -> Instance:
    """1-6 nodes of up to two kinds (core, mem, gpu), up to three running and five queued jobs, with
    several units of a job often fitting on one node (where the two layouts differ)."""
    kinds = [
        {"core": draw(st.integers(2, 8)), "mem": draw(st.sampled_from([0, 4, 8])),
         "gpu": draw(st.sampled_from([0, 1, 2]))}
        for _ in range(draw(st.integers(1, 2)))
    ]
    sys_ = System.build("h", [NodeGroup(f"g{i}", draw(st.integers(1, 3)), k) for i, k in enumerate(kinds)])
    free = np.array(sys_.capacity)
    running = []
    for i in range(draw(st.integers(0, 3))):
        req = (draw(st.integers(1, 2)), draw(st.sampled_from([0, 2])), 0)
        nodes = draw(st.lists(st.integers(0, sys_.n_nodes - 1), min_size=1, max_size=2))
        work = free.copy()
        for k in nodes:
            work[k] -= req
        if (work >= 0).all():
            free = work
            running.append(CpRunning(f"r{i}", len(nodes), req, draw(st.integers(1, 4)), on(*nodes)))
    jobs = []
    for i in range(draw(st.integers(1, 5))):
        req = (draw(st.integers(1, 2)), draw(st.sampled_from([0, 0, 2])), draw(st.sampled_from([0, 0, 1])))
        most = sys_.max_units(req)
        if most:
            units = draw(st.integers(1, min(4, most)))
            jobs.append(CpJob(f"j{i}", units, req, draw(st.integers(1, 4)), draw(st.integers(0, 6)), 3))
    if not jobs:
        jobs.append(CpJob("j", 1, (1, 0, 0), 1, 0))
    return make_instance(sys_, jobs, running)


@settings(max_examples=100, deadline=1000, suppress_health_check=[HealthCheck.too_slow])
@given(small_instances(), st.sampled_from(["slowdown", "tardiness"]), st.booleans())
def test_units_layout_reaches_the_counts_optimum_with_valid_plans(inst: Instance, kind: str, free_now: bool) -> None:
    counts = PerNodeModel(inst, objective(kind), free_now=free_now, layout="counts")
    units = PerNodeModel(inst, objective(kind), free_now=free_now, layout="units")
    assert units.dropped == counts.dropped
    solver = optimum(units)
    plan = units.extract(solver)
    check_plan(inst, units, plan)
    best = round(solver.objective_value)
    reference = optimum(counts)
    assert round(reference.objective_value) == best
    # the same optimum in the objective's own terms (the model's weights may be a multiple of them
    # when jobs were dropped: they are taken over the whole instance)
    value = objectives.objective(kind).value(units.sub_instance, plan.starts)
    assert value == objectives.objective(kind).value(counts.sub_instance, counts.extract(reference).starts)


# -- (b) a hand-counted model --------------------------------------------------------------------------


def hand_instance() -> Instance:
    """Node 0 (2 cores) runs a 1-core job for 4 s, node 1 has 3 cores; one queued job of 3 one-core
    units. On full capacity 2 units fit on node 0 and 3 on node 1."""
    sys_ = System.build("t", [NodeGroup("a", 1, {"core": 2}), NodeGroup("b", 1, {"core": 3})])
    return make_instance(sys_, [CpJob("j", 3, (1,), 2, 0)], [CpRunning("r", 1, (1,), 4, on(0))])


def test_hand_counted_size_of_both_layouts() -> None:
    """Units: s_j and 2 + 3 = 5 presences; 5 optional intervals, the sum of the presences, the running
    job's interval and the cumulative of node 0 (2 + 1 units of one core on 2 cores; node 1's 3 units
    always fit in 3 cores: not posted). Counts: s_j, (u, b) on each node; per node u <= cap*b, u >= b
    and one interval; the sum of the counts, the running interval and node 0's cumulative."""
    inst = hand_instance()
    units = PerNodeModel(inst, None, free_now=False, redundant=False, layout="units")
    assert (units.variables, units.constraints) == (1 + 5, 5 + 1 + 1 + 1)
    assert len(units.model.proto.variables) == 6
    assert (units.optional_intervals, units.cumulatives) == (5, 1)
    counts = PerNodeModel(inst, None, free_now=False, redundant=False)
    assert (counts.variables, counts.constraints) == (1 + 2 * 2, 2 * 3 + 1 + 1 + 1)
    assert (counts.optional_intervals, counts.cumulatives) == (2, 1)
    # the job starts now: at most 1 unit beside the running job, the others on node 1
    bm = PerNodeModel(inst, objective("slowdown"), free_now=False, layout="units")
    plan = bm.extract(optimum(bm))
    assert plan.starts == {"j": 0} and plan.nodes["j"].count(0) <= 1


def test_hint_fixes_every_variable_of_the_units_layout() -> None:
    inst = hand_instance()
    plan = Plan(starts={"j": 0}, nodes={"j": (1, 0, 1)})
    bm = PerNodeModel(inst, objective("slowdown"), free_now=False, layout="units")
    assert bm.consistent(plan)
    bm.add_hint(plan)
    proto = bm.model.proto
    assert {i for i, v in enumerate(proto.variables) if v.domain[0] != v.domain[-1]} <= set(proto.solution_hint.vars)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.fix_variables_to_their_hinted_value = True
    assert solver.solve(bm.model) == cp_model.OPTIMAL
    got = bm.extract(solver)
    assert got.starts == plan.starts and sorted(got.nodes["j"]) == [0, 1, 1]


def test_fixed_search_and_repaired_hint_in_the_units_layout() -> None:
    """The fixed search (starts, then presences at their maximum) finds a valid plan; a plan on a node
    with no room now is repaired by the restricted greedy, whose plan the layout accepts as hint."""
    sys_ = System.build("t", [NodeGroup("n", 2, {"core": 2}), NodeGroup("m", 1, {"core": 3})])
    running = [CpRunning("r1", 1, (2,), 2, on(0)), CpRunning("r2", 1, (1,), 1, on(2))]
    jobs = [CpJob("x", 4, (1,), 2, 2, 2), CpJob("y", 1, (2,), 1, 0, 3), CpJob("z", 2, (1,), 1, 4, 3)]
    inst = make_instance(sys_, jobs, running)
    bm = PerNodeModel(inst, objective("slowdown"), layout="units")
    bm.add_search()
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.search_branching = cp_model.FIXED_SEARCH
    assert solver.solve(bm.model) == cp_model.OPTIMAL
    check_plan(inst, bm, bm.extract(solver))
    hinted = PerNodeModel(inst, objective("slowdown"), layout="units")
    outside = Plan(starts={"x": 2, "y": 0, "z": 1}, nodes={"x": (0, 0, 1, 2), "y": (1,), "z": (2, 2)})
    assert not hinted.consistent(outside)
    hinted.add_hint(outside)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.fix_variables_to_their_hinted_value = True
    assert solver.solve(hinted.model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    repaired = restricted_greedy(hinted)
    assert repaired is not None and hinted.extract(solver).starts == repaired.starts


# -- (c) the dispatchers' option -------------------------------------------------------------------------


def test_pcp19_with_the_units_layout_makes_valid_decisions() -> None:
    """A congested Eurora run in which the model's own plans are enacted (no greedy fallback): every
    start the units layout plans now is accepted, none is dropped as invalid, the schedule is valid."""
    system = cpd.System.preset("eurora")
    jobs = cpd.generate_eurora(80, seed=5, gpu_share=0.5)
    options = {"layout": "units", "fastpath": "false", "fallback": "false"}
    result = cpd.simulate(system, jobs, dispatcher="pcp19", predictor="real", options=options, load_factor=200.0)
    statuses = result.decisions["status"].tolist()
    assert result.summary["completed"] == result.summary["jobs"] == 80
    assert schedule_errors(result.raw) == [] and not result.raw.refused
    assert not any("dropped" in s for s in statuses)
    assert {"optimal", "feasible"} <= set(statuses), statuses


@pytest.mark.parametrize("name", ["pcp", "pcp1", "pcp2", "pcp3", "pcp19"])
def test_layout_option_reaches_the_model(name: str) -> None:
    inst = hand_instance()
    for layout in ("counts", "units"):
        disp = make_dispatcher(name, {"layout": layout})
        assert isinstance(disp, CpDispatcher)
        built = disp.build(inst)
        assert isinstance(built, PerNodeModel) and built.layout == layout
    assert make_dispatcher(name).layout == "counts"  # type: ignore[attr-defined]


def test_invalid_layout_is_a_one_line_error() -> None:
    with pytest.raises(CpdispatchError) as err:
        make_dispatcher("pcp19", {"layout": "boxes"})
    assert str(err.value) == "dispatcher pcp19: layout must be one of counts, units"
    with pytest.raises(ValueError, match="layout"):
        PerNodeModel(hand_instance(), None, layout="boxes")
