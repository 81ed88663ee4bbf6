"""The CP front end: priorities, fit-now selection, clamping, fast path, queue-length control,
decision extraction and its safety nets (never worse than greedy, never crashes)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ortools.sat.python import cp_model

from cpdispatch.allocators import best_fit
from cpdispatch.dispatchers.cp.built import BuiltModel, ModelTooLarge
from cpdispatch.dispatchers.cp.fitting import eligible, extract_starts, fast_path
from cpdispatch.dispatchers.cp.frontend import CpDispatcher
from cpdispatch.dispatchers.cp.greedy import greedy_plan
from cpdispatch.dispatchers.cp.instance import Instance, Plan
from cpdispatch.dispatchers.cp.models.hcp import Hcp, Hcp3, HcpModel
from cpdispatch.dispatchers.cp.objectives import objective
from cpdispatch.dispatchers.cp.option_sets import cp_options
from cpdispatch.dispatchers.cp.status import Status, with_suffixes
from cpdispatch.errors import CpdispatchError
from cpdispatch.job import Job
from cpdispatch.snapshot import Decision, QueuedJob, RunningJob, Snapshot, Start
from cpdispatch.system import NodeGroup, System

from .helpers import on, snapshot


def job(jid: str, submit: int, units: int = 1, req: tuple[int, ...] = (1,), queue: str = "") -> Job:
    return Job(jid, submit, units, req, 100, 100, queue=queue)


ONE = System.build("one", [NodeGroup("n", 1, {"core": 4})])
TWO = System.build("two", [NodeGroup("n", 2, {"core": 2})])


def ids(qs: list[QueuedJob]) -> list[str]:
    return [q.job.id for q in qs]


# -- priorities -----------------------------------------------------------------------------------


def test_slowdown_priority_with_area_tie_break_and_zero_durations() -> None:
    # now 100: a waits 50 for 50 (slowdown 2), b waits 90 for 90 (2), c waits 20 for 10 (3),
    # z has duration 0 and waits 60: its slowdown is max(1, wait) = 60
    a, b, c, z = job("a", 50, units=2), job("b", 10), job("c", 80), job("z", 40)
    snap = snapshot(ONE, [(a, 50), (b, 90), (c, 10), (z, 0)])
    order = ids(Hcp3().order(snap))
    assert order == ["z", "c", "b", "a"]  # a and b tie on slowdown; area 90*1 < 50*2


def test_duration_tie_break_before_area() -> None:
    a, b = job("a", 50, units=1), job("b", 0, units=1)  # slowdown 2 both
    snap = snapshot(ONE, [(a, 50), (b, 100)])
    assert ids(Hcp3().order(snap)) == ["a", "b"]  # area 50 < 100
    big_short = job("s", 90, units=4)  # duration 10, wait 10: slowdown 2, area 40
    snap = snapshot(ONE, [(job("l", 70, units=1), 30), (big_short, 10)])  # l: wait 30, d 30, area 30
    assert ids(Hcp3().order(snap)) == ["l", "s"]
    assert ids(Hcp3(duration_tiebreak=True).order(snap)) == ["s", "l"]


def test_ewt_priority_intended_and_shipped() -> None:
    """Eurora queues: the intended key weighs the wait by max_ewt / ewt; the shipped precedence
    slip (-(max_ewt * now - submit + 1) / ewt) sorts mainly by EWT."""
    debug = job("debug", 990, queue="debug")  # waited 10 s in a 60-s queue
    longpar = job("longpar", 0, queue="longpar")  # waited 1000 s in a 3600-s queue
    snap = snapshot(ONE, [(debug, 10), (longpar, 10)], now=1000)
    assert ids(Hcp3(priority="ewt", ewt="eurora").order(snap)) == ["longpar", "debug"]  # 1001 > 660
    assert ids(Hcp3(priority="ewt-shipped", ewt="eurora").order(snap)) == ["debug", "longpar"]
    d = Hcp3(ewt="debug=60,parallel=600,default=999")
    assert d.ewt_of(job("x", 0, queue="parallel")) == 600 and d.ewt_of(job("x", 0, queue="other")) == 999
    assert Hcp3().ewt_of(job("x", 0)) == 1600


def test_bad_options_are_refused() -> None:
    for bad in ({"priority": "fifo"}, {"time_policy": "slow"}, {"search": "dfs"}, {"q_length": 0},
                {"ewt": "debug"}, {"nope": 1}):
        with pytest.raises(CpdispatchError):
            Hcp3(**bad)
    with pytest.raises(ValueError):
        cp_options(nope=1)


# -- selection ------------------------------------------------------------------------------------


def test_fit_now_uses_nodes_not_totals() -> None:
    free = np.array([[2], [2]])
    jobs = [job("3cores", 0, 1, (3,)), job("2x2", 0, 2, (2,)), job("3x1", 0, 3, (1,)), job("5x1", 0, 5, (1,)),
            job("zero", 0, 3, (0,))]
    assert eligible(free, jobs) == [False, True, True, False, True]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.integers(0, 6), min_size=2, max_size=2), min_size=1, max_size=5),
       st.lists(st.tuples(st.integers(1, 6), st.integers(0, 4), st.integers(0, 4)), min_size=1, max_size=8))
def test_fit_now_matches_the_definition(free_rows: list[list[int]], reqs: list[tuple[int, int, int]]) -> None:
    free = np.array(free_rows, dtype=np.int64)
    jobs = [job(str(i), 0, u, (a, b)) for i, (u, a, b) in enumerate(reqs)]
    want = []
    for j in jobs:
        per_node = [min((f // a for f, a in zip(row, j.req) if a > 0), default=j.units) for row in free_rows]
        want.append(sum(min(x, j.units) for x in per_node) >= j.units)
    assert eligible(free, jobs) == want


def test_selection_takes_eligible_jobs_in_priority_order_up_to_q_length() -> None:
    running = [RunningJob(job("r", 0, 1, (2,)), 0, 500, on(0))]
    queued = [(job("old_big", 0, 1, (4,)), 100), (job("a", 10, 1, (1,)), 100), (job("b", 20, 1, (1,)), 100),
              (job("c", 30, 1, (1,)), 100)]
    snap = snapshot(ONE, queued, running)
    d = Hcp3(q_length=2)
    assert ids(d.select(snap, d.order(snap))) == ["a", "b"]  # old_big does not fit now
    d.cur_q_length = 1
    assert ids(d.select(snap, d.order(snap))) == ["a"]


def test_clamp_on_and_off() -> None:
    running = [RunningJob(job("late", 0, 1, (1,)), 0, 60, on(0)), RunningJob(job("ok", 90, 1, (1,)), 90, 30, on(0))]
    queued = [(job("zero", 50), 0), (job("five", 60), 5)]
    snap = snapshot(ONE, queued, running)
    clamped, unclamped = Hcp3(), Hcp3(clamp=False)
    inst_on = clamped.instance(snap, list(snap.queued))
    inst_off = unclamped.instance(snap, list(snap.queued))
    assert [r.remaining for r in inst_on.running] == [1, 20] and [r.remaining for r in inst_off.running] == [-40, 20]
    assert [j.duration for j in inst_on.jobs] == [1, 5] and [j.duration for j in inst_off.jobs] == [0, 5]
    assert inst_on.horizon == 27 and inst_off.horizon == 1  # max(1, -40 + 20 + 0 + 5)
    assert [r.elapsed for r in inst_on.running] == [100, 10] and [j.wait for j in inst_on.jobs] == [50, 40]


# -- fast path ------------------------------------------------------------------------------------


def test_fast_path_starts_the_whole_queue_when_it_fits() -> None:
    queued = [(job("a", 0, 2, (1,)), 10), (job("b", 5, 1, (2,)), 10)]
    snap = snapshot(TWO, queued)
    dec = Hcp3().decide(snap)
    assert dec.status == "fastpath" and {s.job_id for s in dec.starts} == {"a", "b"}
    assert sorted(n for s in dec.starts for n in s.nodes) in ([0, 0, 1], [0, 1, 1])
    assert Hcp3(fastpath=False).decide(snap).status == "greedy"  # greedy starts all now: no solve needed


def test_no_fast_path_when_one_job_cannot_start() -> None:
    queued = [(job("a", 0, 2, (1,)), 10), (job("b", 5, 1, (2,)), 10), (job("c", 6, 1, (2,)), 10)]
    snap = snapshot(TWO, queued)
    assert fast_path(snap, Hcp3().order(snap)) is None
    dec = Hcp3().decide(snap)
    assert dec.status in {"optimal", "feasible"} and len(dec.starts) == 2


# -- queue length, fallbacks, extraction ----------------------------------------------------------


class Broken(Hcp3):
    """A model that cannot be solved (infeasible) or cannot even be built."""

    mode = "infeasible"

    def build(self, instance: Instance) -> BuiltModel:
        if self.mode == "raise":
            raise RuntimeError("builder bug")
        built = HcpModel(instance, self.goal)
        first = built.start_vars[instance.jobs[0].id]
        built.model.add(first > instance.horizon)
        return built


def contended() -> Snapshot:
    return snapshot(TWO, [(job("a", 0, 2, (2,)), 10), (job("b", 1, 1, (2,)), 10), (job("c", 2, 1, (1,)), 10)])


def test_unsolved_runs_halve_the_queue_and_fall_back_to_greedy() -> None:
    d = Broken(q_length=8)
    snap = contended()
    dec = d.decide(snap)
    assert dec.status == "fallback:no-solution" and [s.job_id for s in dec.starts] == ["a"]  # greedy's start-0 job
    assert d.cur_q_length == 4
    lengths = []
    for _ in range(3):
        d.decide(snap)
        lengths.append(d.cur_q_length)
    # 4 -> 2 -> 1; with one job the greedy plan starts everything now: solved, back to q_length
    assert lengths == [2, 1, 8]
    d.cur_q_length = 2
    d.build = lambda instance: HcpModel(instance, objective("slowdown"))  # type: ignore[method-assign]
    d.decide(snap)
    assert d.cur_q_length == 8


def test_a_builder_bug_propagates() -> None:
    """Only the solver's outcomes lead to the fallback: a bug must fail, not become a decision."""
    d = Broken(q_length=8)
    d.mode = "raise"
    with pytest.raises(RuntimeError, match="builder bug"):
        d.decide(contended())


def test_a_size_guard_gives_the_greedy_plan_and_keeps_the_queue_length() -> None:
    class TooLarge(Hcp3):
        def build(self, instance: Instance) -> BuiltModel:
            raise ModelTooLarge("too many boxes")

    d = TooLarge(q_length=8)
    d.cur_q_length = 4
    dec = d.decide(contended())
    assert dec.status == "greedy:too-large" and [s.job_id for s in dec.starts] == ["a"]
    assert d.cur_q_length == 4  # no solve was tried: neither halved nor reset


def test_each_way_not_to_solve_has_its_own_status() -> None:
    """`skip_solver`: nothing fits now (empty); over the size guard with `fallback=false`
    (unsolved:too-large, nothing starts, queue length kept); over it with no greedy plan (none)."""

    class TooLarge(Hcp):
        def build(self, instance: Instance) -> BuiltModel:
            raise ModelTooLarge("too many boxes")

    full = (RunningJob(job("r", 0, 2, (2,)), 0, 500, on(0, 1)),)
    assert Hcp3().decide(snapshot(TWO, [(job("a", 0), 10)], full)) == Decision(status="empty")
    d = TooLarge(fallback=False)
    dec = d.decide(contended())
    assert (dec.status, dec.starts, d.cur_q_length) == ("unsolved:too-large", (), 100)
    never = snapshot(TWO, [(job("huge", 0, 1, (4,)), 10), (job("b", 1), 10)])  # 4 cores on no node
    assert TooLarge().decide(never).status == "none"


def test_status_prefixes_group_the_reasons() -> None:
    """`reproduce.causes` counts statuses by prefix: only no-plan ones start with unsolved."""
    enacts_greedy = {Status.GREEDY_ALL_NOW, Status.TOO_LARGE, Status.NO_SOLUTION, Status.GREEDY_BETTER}
    assert {s for s in Status if s.split(":")[0] in ("greedy", "fallback")} == enacts_greedy
    assert {s for s in Status if s.startswith("unsolved")} == {Status.UNSOLVED, Status.TOO_LARGE_UNSOLVED}
    assert with_suffixes(Status.FEASIBLE, capped=True, dropped=2) == "feasible:capped:dropped=2"
    assert with_suffixes(Status.FASTPATH) == "fastpath" and type(with_suffixes(Status.OPTIMAL)) is str


def test_pcp20_policy_halves_the_planned_count() -> None:
    d = Broken(q_length=100, time_policy="pcp20", deterministic_time=0.01, max_retries=1)
    d.decide(contended())
    assert d.cur_q_length == 1  # min(100, 3 planned) // 2


def test_invalid_plan_nodes_are_dropped_and_counted() -> None:
    snap = contended()
    d = Hcp3()
    inst = d.instance(snap, d.select(snap, d.order(snap)))
    plan = Plan(starts={"a": 0, "b": 0, "c": 0}, nodes={"a": (0, 1), "b": (0,), "c": (0, 0)})
    starts, dropped = extract_starts(snap, inst, plan)
    assert starts == (Start("a", (0, 1)),) and dropped == 2  # b: node 0 already full; c: 2 nodes for 1 unit


def test_hcp_style_plans_are_allocated_by_best_fit_with_skipping() -> None:
    snap = contended()
    d = Hcp3()
    inst = d.instance(snap, d.select(snap, d.order(snap)))
    starts, dropped = extract_starts(snap, inst, Plan(starts={"a": 0, "b": 0, "c": 5}))
    assert starts == (Start("a", (0, 1)),) and dropped == 0  # b skipped: no room after a


class Liar(Hcp3):
    """A model whose extracted plans are bad (all jobs late): the greedy plan must win."""

    def build(self, instance: Instance) -> BuiltModel:
        built = HcpModel(instance, self.goal)
        built.extract = lambda solver: Plan(  # type: ignore[method-assign]
            starts={j.id: instance.horizon for j in instance.jobs})
        return built


def test_never_worse_than_greedy() -> None:
    snap = contended()
    dec = Liar().decide(snap)
    inst = Hcp3().instance(snap, Hcp3().select(snap, Hcp3().order(snap)))
    assert dec.status == "fallback:greedy-better"
    assert dec.objective == objective("slowdown").value(inst, greedy_plan(inst))
    assert [s.job_id for s in dec.starts] == ["a"]


class Gapped(Hcp3):
    """A search stopped early with a better order than the greedy plan's but an idle gap first."""

    def run_policy(self, built: BuiltModel, greedy: Plan | None) -> tuple[Plan, bool, bool]:
        return Plan(starts={"b": 1, "a": 2}), False, True


def test_a_gap_left_by_the_search_is_closed() -> None:
    """On an idle machine the solver's plan starts nothing now (found on SC'15's CEA-Curie set:
    seven jobs of 94% of the machine rejected after waiting for weeks); shifted left, b starts."""
    snap = snapshot(ONE, [(job("a", 0, 4), 100), (job("b", 995, 4), 1)], now=1000)
    d = Gapped()
    inst = d.instance(snap, d.select(snap, d.order(snap)))
    assert [j.id for j in inst.jobs] == ["a", "b"]  # the greedy plan: a now, b after it
    dec = d.decide(snap)
    assert dec.status == "shifted" and [s.job_id for s in dec.starts] == ["b"]
    assert dec.objective == objective("slowdown").value(inst, {"b": 0, "a": 1})
    assert Gapped(fallback=False).decide(snap).starts == ()  # the papers' set-up enacts the plan as found


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000))
def test_decisions_are_valid(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sys_ = System.build("r", [NodeGroup("a", 2, {"core": 4, "mem": 4}), NodeGroup("b", 2, {"core": 2, "mem": 8})])
    free = np.array(sys_.capacity)
    running = []
    for i in range(int(rng.integers(0, 4))):
        req = (int(rng.integers(1, 3)), int(rng.integers(0, 3)))
        nodes = best_fit(free, sys_.capacity, req, 1)
        if nodes is not None:
            running.append(RunningJob(job(f"r{i}", 0, 1, req), 0, int(rng.integers(1, 300)), on(*nodes)))
    queued = [(job(f"q{i}", int(rng.integers(0, 100)), int(rng.integers(1, 4)),
                   (int(rng.integers(1, 3)), int(rng.integers(0, 4)))), int(rng.integers(0, 200))) for i in range(6)]
    snap = snapshot(sys_, queued, running, now=150)
    d = Hcp3(fast_budget=0.001)
    dec = d.decide(snap)
    work = np.array(snap.free)
    for s in dec.starts:
        q = next(q for q in snap.queued if q.job.id == s.job_id)
        assert len(s.nodes) == q.job.units
        for n in s.nodes:
            work[n] -= q.job.req
    assert (work >= 0).all()


def test_same_snapshot_same_decision() -> None:
    snap = contended()
    first = Hcp3().decide(snap)
    for _ in range(3):
        assert Hcp3().decide(snap) == first


def test_search_fixed_uses_the_model_strategy() -> None:
    dec = Hcp3(search="fixed").decide(contended())
    # b and c now, a after them (sum of starts 10) beats the greedy's a now, b and c after (20)
    assert dec.status == "optimal" and [s.job_id for s in dec.starts] == ["b", "c"]


def test_subclass_contract() -> None:
    """A CP dispatcher only provides `build` and `goal`; options come from cp_options."""

    class Minimal(CpDispatcher):
        name = "minimal"
        goal = objective("ewt_wait")

        def build(self, instance: Instance) -> BuiltModel:
            return HcpModel(instance, self.goal)

    values: dict[str, Any] = {"priority": "ewt", "time_policy": "cp19", "deterministic_time": 0.01}
    d = Minimal(**values)
    snap = contended()
    inst = d.instance(snap, d.select(snap, d.order(snap)))
    # EWT priority: a (4 cores), b, c. Greedy: a now, b and c at 10 (waiting sum 20); the
    # optimum of the EWT-weighted waiting starts b and c now and a at 10 (sum 10)
    assert greedy_plan(inst).starts == {"a": 0, "b": 10, "c": 10}
    dec = d.decide(snap)
    assert dec.status == "optimal" and sorted(s.job_id for s in dec.starts) == ["b", "c"]
    assert dec.objective == objective("ewt_wait").value(inst, {"a": 10, "b": 0, "c": 0})


def test_model_solver_parameters_and_conflict_limit_reach_the_solver(monkeypatch: pytest.MonkeyPatch) -> None:
    """A model's `solver_parameters` (PCP'20: presolve off with boxes) and the fast policy's
    conflict limit are set on every solve."""
    from ortools.sat.python import cp_model

    seen: list[Any] = []
    real = cp_model.CpSolver.solve

    def spy(self: cp_model.CpSolver, model: cp_model.CpModel, cb: Any = None) -> Any:
        seen.append((self.parameters.cp_model_presolve, self.parameters.max_number_of_conflicts))
        return real(self, model, cb)

    class NoPresolve(HcpModel):
        @property
        def solver_parameters(self) -> dict[str, object]:
            return {"cp_model_presolve": False}

    class Model(Hcp3):
        def build(self, instance: Instance) -> BuiltModel:
            return NoPresolve(instance, self.goal)

    monkeypatch.setattr(cp_model.CpSolver, "solve", spy)
    Model(fast_conflicts=7).decide(contended())
    Hcp3().decide(contended())
    assert seen == [(False, 7), (True, 300)]


FEASIBLE, OPTIMAL, INFEASIBLE, UNKNOWN = (int(x) for x in (cp_model.FEASIBLE, cp_model.OPTIMAL,
                                                           cp_model.INFEASIBLE, cp_model.UNKNOWN))


class Scripted(Hcp3):
    """The solver replaced by a script of (status, objective of the plan or None); records the
    (wall, deterministic) limits of each solve. No real waiting."""

    script: list[tuple[int, int | None]] = []

    def __init__(self, **values: Any) -> None:
        super().__init__(**values)
        self.limits: list[tuple[float, float]] = []

    def solve_once(self, built: BuiltModel, hint: Plan | None, wall: float, dtime: float, quick: bool = False,
                   conflicts: int = 0) -> tuple[Any, Plan | None]:
        self.limits.append((wall, dtime))
        status, value = self.script[len(self.limits) - 1]
        if value is None:
            return status, None
        jobs = built.instance.jobs  # the first job at `value`: equal values, equal objectives
        return status, Plan(starts={j.id: (value if i == 0 else 0) for i, j in enumerate(jobs)})


@pytest.mark.parametrize(("script", "limits", "solved"), [
    # the same best value twice (k = 2): stop after 1 s and 2 s
    ([(FEASIBLE, 5), (FEASIBLE, 5)], [1, 2], True),
    # a plan that keeps improving: 1, 2, 4, 8, 16 s, then out of time, still a plan (no halving)
    ([(FEASIBLE, 9), (FEASIBLE, 8), (FEASIBLE, 7), (FEASIBLE, 6), (FEASIBLE, 5)], [1, 2, 4, 8, 16], True),
    # nothing found in any limit: out of time, unsolved (the queue length is halved)
    ([(UNKNOWN, None)] * 5, [1, 2, 4, 8, 16], False),
    # optimal at once; infeasible at once
    ([(OPTIMAL, 3)], [1], True),
    ([(INFEASIBLE, None)], [1], False),
])
def test_cp19_time_policy(script: list[tuple[int, int | None]], limits: list[int], solved: bool) -> None:
    d = Scripted(time_policy="cp19", q_length=8)
    d.script = script
    snap = contended()
    d.decide(snap)
    assert [w for w, _ in d.limits] == limits and all(dt == 0 for _, dt in d.limits)
    assert d.cur_q_length == (8 if solved else 4)
    d2 = Scripted(time_policy="cp19", deterministic_time=0.5, q_length=8)
    d2.script = script
    d2.decide(snap)  # deterministic limits scale like the wall ones
    assert [dt for _, dt in d2.limits] == [0.5 * x for x in limits] and all(w == 0 for w, _ in d2.limits)


class ScriptedPcpBase(Scripted):
    options = cp_options(clamp=True, priority="slowdown", paper_policy="pcp-base")


@pytest.mark.parametrize(("policy", "script", "limits", "solved"), [
    # doubling (HCP base): only while no plan, below 150 s
    ("doubling", [(UNKNOWN, None), (UNKNOWN, None), (FEASIBLE, 5)], [1, 2, 4], True),
    ("doubling", [(UNKNOWN, None)] * 8, [1, 2, 4, 8, 16, 32, 64, 128], False),
    # pcp20: the 1-s mark, then 0.5-s extensions while no plan, at most max_retries (4)
    ("pcp20", [(UNKNOWN, None), (FEASIBLE, 3)], [1, 0.5], True),
    ("pcp20", [(UNKNOWN, None)] * 5, [1, 0.5, 0.5, 0.5, 0.5], False),
    # PCP base: 60 s, then 120 s when the best plan starts nothing now (here every plan starts a job)
    ("pcp-base", [(FEASIBLE, 5)], [60], True),
    ("pcp-base", [(UNKNOWN, None), (UNKNOWN, None)], [60, 120], False),
    ("pcp-base", [(INFEASIBLE, None)], [60], False),
])
def test_the_other_time_policies(policy: str, script: list[tuple[int, int | None]], limits: list[float],
                                 solved: bool) -> None:
    d = ScriptedPcpBase(time_policy="paper") if policy == "pcp-base" else Scripted(time_policy=policy)
    d.script = script
    d.decide(contended())
    assert [w for w, _ in d.limits] == limits
    assert (d.cur_q_length == d.q_length) == solved
