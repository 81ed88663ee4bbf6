"""The first dive of the authors' search (`pcp20/dive.py`): the same first solution as a plain
depth-first search of the same rules, a valid plan that CP-SAT takes as its first solution, and
the paper profile's search for pcp20."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from ortools.sat.python import cp_model

from cpdispatch.dispatchers import make_dispatcher
from cpdispatch.dispatchers.cp.instance import CpJob, CpRunning, Instance
from cpdispatch.dispatchers.cp.models.pcp20 import Pcp20Model
from cpdispatch.dispatchers.cp.models.pcp20.axes import spread
from cpdispatch.dispatchers.cp.models.pcp20.dive import Dive, first_dive
from cpdispatch.dispatchers.cp.objectives import objective
from cpdispatch.errors import CpdispatchError
from cpdispatch.system import NodeGroup, System

from .conftest import WORKLOADS, needs_traces
from .cp_helpers import make_instance, pcp20_model
from .helpers import on
from .test_pcp20 import check_plan, tiny_instances

#: the paper's model: no reductions, all-different positions
PAPER_MODEL = {"reductions": False, "all_different": True}


def reference_dive(bm: Pcp20Model) -> Dive:
    """The rules of `dive`'s docstring as a plain depth-first search: every start from 0 up, every
    domain by enumerating the positions of the axis, a node's room by scanning its cells."""
    axes, run = bm.axes, bm.running
    boxes: dict[int, list[tuple[int, int, int, int]]] = {r: [] for r in range(axes.capacity.shape[1])}
    for rem, usage, y0 in zip(run.remaining.tolist(), run.usage, run.y0):
        for r in range(len(usage)):
            if usage[r]:
                boxes[r].append((0, rem, int(y0[r]), int(y0[r] + usage[r])))

    def node(r: int, y: int) -> int:
        return next(k for k in range(axes.n_nodes) if axes.first[k, r] <= y < axes.first[k, r] + axes.capacity[k, r])

    def busy(r: int, y: int, t: int, d: int) -> bool:
        return any(x0 < t + d and t < x1 and y0 <= y < y1 for x0, x1, y0, y1 in boxes[r])

    def free(r: int, y: int, a: int, t: int, d: int) -> bool:
        if y < 0 or y + a > axes.total[r] or node(r, y) != node(r, y + a - 1):
            return False
        return not any(busy(r, c, t, d) for c in range(y, y + a))

    def room(k: int, r: int, a: int, t: int, d: int) -> int:
        """Blocks of `a` the free runs of node k's cells hold."""
        out = run_length = 0
        for c in range(int(axes.first[k, r]), int(axes.first[k, r] + axes.capacity[k, r])):
            run_length = 0 if busy(r, c, t, d) else run_length + 1
            out += run_length == a
            run_length %= a
        return out

    out = Dive()
    for sh in bm.shapes:
        job, geo = sh.job, sh.geo
        d, width, units = max(1, job.duration), len(geo.types), job.units
        for t in range(bm.instance.horizon + 1):
            pos: dict[tuple[int, int], int] = {}  # (type number, unit) -> position
            own: list[tuple[int, tuple[int, int, int, int]]] = []
            while len(pos) < width * units:
                at = {u: node(geo.types[m], y) for (m, u), y in pos.items()}  # unit -> its node
                best: tuple[int, int, list[int]] | None = None
                for n, u in ((n, u) for n in range(width) for u in range(units)):
                    if (n, u) in pos:
                        continue
                    r, a = geo.types[n], geo.amounts[n]
                    dom = []
                    for y in range(int(axes.total[r]) - a + 1):
                        if not free(r, y, a, t, d):
                            continue
                        k = node(r, y)
                        if u in at:
                            ok = k == at[u]
                        else:
                            owed = [sum(1 for v, kv in at.items() if kv == k and (m, v) not in pos)
                                    for m in range(width)]
                            ok = not (spread(job) and k in at.values()) and all(
                                room(k, rr, aa, t, d) > owed[m]
                                for m, (rr, aa) in enumerate(zip(geo.types, geo.amounts)))
                        if ok:
                            dom.append(y)
                    if best is None or len(dom) < len(best[2]):
                        best = (n, u, dom)
                assert best is not None
                n, u, dom = best
                if not dom:
                    break  # sched_bt: back to the start
                pos[n, u] = max(dom)
                boxes[geo.types[n]].append((t, t + d, pos[n, u], pos[n, u] + geo.amounts[n]))
                own.append((geo.types[n], boxes[geo.types[n]][-1]))
            if len(pos) < width * units:
                for r, box in own:
                    boxes[r].remove(box)
                continue
            out.starts[job.id] = t
            if width:
                columns = [sorted(pos[n, u] for u in range(units)) for n in range(width)]
                out.positions[job.id] = [list(c) for c in zip(*columns)]
            break
    return out


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_instances())
def test_the_same_first_solution_as_a_plain_depth_first_search(inst: Instance) -> None:
    bm = pcp20_model(inst, "slowdown", **PAPER_MODEL)
    dive = first_dive(bm.shapes, bm.running, bm.axes, inst.horizon)
    assert dive is not None
    ref = reference_dive(bm)
    assert dive.starts == ref.starts
    assert dive.positions == ref.positions


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_instances())
def test_a_valid_plan_that_cp_sat_takes_as_its_first_solution(inst: Instance) -> None:
    bm = pcp20_model(inst, "slowdown", **PAPER_MODEL)
    plan = bm.first_dive()
    assert plan is not None
    check_plan(inst, plan)
    bm.add_search()
    bm.add_hint(plan)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_deterministic_time = 1e-9  # no search at all: only the hint is checked
    for name, value in bm.solver_parameters.items():
        setattr(solver.parameters, name, value)
    assert solver.solve(bm.model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)
    assert round(solver.objective_value) == objective("slowdown").value(inst, plan)


#: two GPU nodes (4 cores, 1 GPU) after two nodes of 8 cores
MIXED = System.build("mixed", [NodeGroup("c", 2, {"core": 8, "gpu": 0}), NodeGroup("g", 2, {"core": 4, "gpu": 1})])


def test_min_domain_then_max_value_hand_checked() -> None:
    """The GPU job's GPU position has the smaller domain (2 GPUs against 8 core positions on the
    GPU nodes), so it goes first, to the largest value (node 3's GPU), then its core to the top of
    node 3. The 2-unit job of 4 cores: node 3 has 3 cores left, so its first unit takes node 2 (the
    highest node that hosts one), the second the top block of node 1."""
    inst = make_instance(MIXED, [CpJob("g", 1, (1, 1), 5, 0), CpJob("c", 2, (4, 0), 5, 0)], [])
    bm = pcp20_model(inst, "slowdown", **PAPER_MODEL)
    dive = first_dive(bm.shapes, bm.running, bm.axes, inst.horizon)
    assert dive is not None and dive.starts == {"g": 0, "c": 0}
    assert dive.positions["g"] == [[23, 1]]  # core axis: 8 + 8 + 4 + 4; node 3's top core; GPU 1 (node 3)
    assert dive.positions["c"] == [[12], [16]]  # node 1's top 4 cores, node 2's 4 cores
    assert dive.plan(bm.shapes, bm.axes).nodes == {"g": (3,), "c": (1, 2)}


def test_a_start_fails_when_the_greedy_allocation_does_not_fit() -> None:
    """sched_bt: an allocation dead end moves the start, it never re-opens a position. A running
    job holds 2 of node 0's 4 cores until 3; a 2-unit job of 3 cores fits only on idle nodes: node
    1 takes one unit, the other must wait for node 0 (start 3)."""
    two = System.build("two", [NodeGroup("n", 2, {"core": 4})])
    inst = make_instance(two, [CpJob("j", 2, (3,), 4, 0)], [CpRunning("r", 1, (2,), 3, on(0))])
    bm = pcp20_model(inst, "slowdown", **PAPER_MODEL)
    dive = first_dive(bm.shapes, bm.running, bm.axes, inst.horizon)
    assert dive is not None and dive.starts == {"j": 3}
    assert reference_dive(bm).starts == {"j": 3}


def test_the_paper_profiles_search_for_pcp20_only() -> None:
    d = make_dispatcher("pcp20", {"profile": "paper"})
    assert d.search == "dive"  # type: ignore[attr-defined]
    assert make_dispatcher("pcp19", {"profile": "paper"}).search == "fixed"  # type: ignore[attr-defined]
    for name in ("hcp19", "pcp19"):
        with pytest.raises(CpdispatchError, match="search must be one of portfolio, fixed, paper"):
            make_dispatcher(name, {"search": "dive"})


def test_spread_jobs_take_distinct_nodes() -> None:
    two = System.build("two", [NodeGroup("n", 2, {"core": 4})])
    inst = make_instance(two, [CpJob("j", 2, (1,), 4, 0, one_per_node=True)], [])
    bm = pcp20_model(inst, "slowdown", **PAPER_MODEL)
    plan = bm.first_dive()
    assert plan is not None and sorted(plan.nodes["j"]) == [0, 1]


@needs_traces
def test_the_paper_profile_starts_every_job_of_a_kit_slice() -> None:
    """RICC jobs 100,001-100,080 on the KIT shape at load 3 under the paper profile: with CP-SAT's
    own fixed strategies pcp20 found no plan for most decisions and rejected 57 jobs as unstartable
    on an idle system; with the dive every model call is decided and every job runs; schedule valid."""
    from cpdispatch import api
    from cpdispatch.system import load_system

    system = load_system("kit-forhlr2")
    jobs = api.read_workload(WORKLOADS / "RICC-2010-2.swf.gz", system, skip=100_000, limit=80)
    res = api.simulate(system, jobs, "pcp20", "walltime", {"profile": "paper", "deterministic_time": "0.05"},
                       load_factor=3.0)
    s = res.summary
    assert s["completed"] == 80 and s["rejected"] == 0 and not res.refused  # the simulator checked every start
    assert not any(k.startswith("unsolved") for k in s["decision_status"]), s["decision_status"]
