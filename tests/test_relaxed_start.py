"""pcp20's second starting point (`pcp20/relaxed_start.py`): HCP'19's relaxation shifted onto the
nodes. Its plan is valid, it is a lower bound of the exact model, a proven optimum that keeps its
value is the exact optimum, and the dispatcher starts from it only when it is better."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from ortools.sat.python import cp_model

from cpdispatch.dispatchers import make_dispatcher
from cpdispatch.dispatchers.cp.greedy import greedy_plan
from cpdispatch.dispatchers.cp.instance import CpJob, CpRunning, Instance
from cpdispatch.dispatchers.cp.models.hcp import HcpModel
from cpdispatch.dispatchers.cp.models.pcp20 import Pcp20Dispatcher, Pcp20Model
from cpdispatch.dispatchers.cp.models.pcp20.relaxed_start import relaxed_start
from cpdispatch.dispatchers.cp.objectives import objective
from cpdispatch.dispatchers.cp.policies import SolveLimits
from cpdispatch.snapshot import RunningJob
from cpdispatch.system import NodeGroup, System

from .cp_helpers import make_instance, pcp20_model, solve
from .helpers import job, on, snapshot
from .test_pcp20 import check_plan, tiny_instances

#: one GPU node and one without GPUs
GPU = System.build("gpu", [NodeGroup("g", 1, {"core": 4, "gpu": 2}), NodeGroup("c", 1, {"core": 4, "gpu": 0})])
#: two GPU nodes of 2 cores: a unit of 2 cores and a GPU needs a whole node
PAIR = System.build("pair", [NodeGroup("g", 2, {"core": 2, "gpu": 1})])
LIMITS = SolveLimits(0.0, 1.0, False, 0)


def optimum(bm: Pcp20Model | HcpModel) -> int:
    solver, status = solve(bm, workers=1, max_time_in_seconds=20)
    assert status == cp_model.OPTIMAL
    return round(solver.objective_value)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tiny_instances())
def test_valid_plan_below_the_exact_optimum_and_proven_only_at_it(inst: Instance) -> None:
    found = relaxed_start(Pcp20Dispatcher(), inst, objective("slowdown"), greedy_plan(inst), LIMITS)
    assert found is not None
    check_plan(inst, found.plan)
    assert found.value == objective("slowdown").value(inst, found.plan)
    exact = optimum(pcp20_model(inst, "slowdown"))
    assert optimum(HcpModel(inst, objective("slowdown"))) <= exact <= found.value
    if found.proven:
        assert found.value == exact


def test_a_better_order_is_proven_optimal_without_the_exact_solve() -> None:
    """A long job that has waited comes first in priority and needs the whole GPU node; the
    greedy plan runs the short GPU job after it (its slowdown ~101), the relaxation first (the
    long one's slowdown grows by 1%), which the nodes hold as planned: proven optimal, status
    `relaxation`. Without it, the exact solve finds the same starts."""
    long, short = job("long", 90, 100, 1, (4, 2)), job("short", 100, 1, 1, (2, 1))
    snap = snapshot(GPU, [(long, 100), (short, 1)])
    d = make_dispatcher("pcp20")
    dec = d.decide(snap)
    assert dec.status == "relaxation" and [s.job_id for s in dec.starts] == ["short"]
    assert dec.plan == {"long": 101}
    off = make_dispatcher("pcp20", {"relaxed_start": "0"}).decide(snap)
    assert off.status == "optimal" and [s.job_id for s in off.starts] == ["short"]


def test_a_relaxed_plan_the_nodes_cannot_hold_is_shifted_and_not_proven() -> None:
    """A running job holds a core of each node: the totals have 2 cores and 2 GPUs free, so the
    relaxation starts a (2 cores, 1 GPU) unit now, but no node has 2 cores free. Shifted, it
    starts when a node frees (value above the relaxation's): not proven, so the dispatcher will
    solve the exact model."""
    inst = make_instance(PAIR, [CpJob("a", 1, (2, 1), 5, 0), CpJob("b", 1, (1, 0), 2, 3)],
                         [CpRunning("r", 2, (1, 0), 4, on(0, 1))])
    found = relaxed_start(Pcp20Dispatcher(), inst, objective("slowdown"), greedy_plan(inst), LIMITS)
    assert found is not None and not found.proven and found.plan.starts == {"a": 4, "b": 0}
    ready = Pcp20Dispatcher().ready(inst)
    assert not ready.proven and ready.greedy is not None and ready.greedy.starts == {"a": 4, "b": 0}


def test_off_under_the_paper_profile_and_on_fluid_models() -> None:
    """The papers never solved a relaxation; a model without positions is its own relaxation."""
    assert make_dispatcher("pcp20", {"profile": "paper"}).relaxed_start == 0  # type: ignore[attr-defined]
    one_type = System.build("cores", [NodeGroup("n", 2, {"core": 4})])
    calls: list[object] = []

    class Counting(Pcp20Dispatcher):
        def solve_once(self, built, *args, **kw):  # type: ignore[no-untyped-def]
            calls.append(type(built).__name__)
            return super().solve_once(built, *args, **kw)

    queued = [(job("a", 90, 50, 6, (1,)), 50), (job("b", 95, 5, 4, (1,)), 5), (job("c", 99, 5, 2, (1,)), 5)]
    running = (RunningJob(job("r", 0, 10, 4, (1,)), 96, 104, on(0, 0, 0, 0)),)
    assert Counting().decide(snapshot(one_type, queued, running)).status in ("optimal", "feasible")
    assert calls and "HcpModel" not in calls
