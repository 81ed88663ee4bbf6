"""Each step of the CP'19 ablation (PCP, PCP1-3, HCP, HCP1-3) changes what the paper says it
changes, shown on a small case where the step changes the decision or the search."""

from __future__ import annotations

from typing import Any

import pytest
from ortools.sat.python import cp_model

from cpdispatch.dispatchers import make_dispatcher
from cpdispatch.dispatchers.cp.frontend import CpDispatcher
from cpdispatch.dispatchers.cp.models.hcp import HcpModel
from cpdispatch.dispatchers.cp.objectives import objective
from cpdispatch.snapshot import Snapshot
from cpdispatch.system import NodeGroup, System

from .helpers import job, snapshot

ONE = System.build("one", [NodeGroup("n", 1, {"core": 2})])


def queue_beyond_m() -> Snapshot:
    """m = 1: a (1 core) is the first job; b and c (2 cores each) are beyond m. Kept in HCP base's
    model at [eoh - d, eoh) they overlap at the end and need 4 of 2 cores: infeasible."""
    return snapshot(ONE, [(job("a", 0, 10, 1, (1,)), 10), (job("b", 1, 10, 1, (2,)), 10),
                          (job("c", 2, 10, 1, (2,)), 10)])


def cp(name: str, **options: object) -> CpDispatcher:
    d = make_dispatcher(name, {k: str(v).lower() for k, v in options.items()})
    assert isinstance(d, CpDispatcher)
    return d


def test_hcp_base_keeps_the_rest_of_the_queue_fixed_at_the_end_of_the_horizon() -> None:
    d = cp("hcp", q_length=1)
    snap = queue_beyond_m()
    inst = d.instance(snap, d.select(snap, d.order(snap)))
    assert [j.id for j in inst.jobs] == ["a"] and [j.id for j in inst.postponed] == ["b", "c"]
    assert inst.horizon == 30
    proto = HcpModel(inst, objective("ewt_wait")).model.proto
    fixed = sorted((c.interval.start.offset, c.interval.size.offset) for c in proto.constraints
                   if c.has_interval() and not c.interval.start.vars and c.interval.start.offset > 0)
    assert fixed == [(20, 10), (20, 10)]


def test_base_to_1_the_postponed_jobs_make_the_base_model_infeasible_and_version_1_starts() -> None:
    snap = queue_beyond_m()
    base = cp("hcp", q_length=1, fallback=False).decide(snap)
    assert base.starts == () and base.status == "unsolved"  # the paper's failure mode: nothing starts
    assert [s.job_id for s in cp("hcp1", q_length=1, fallback=False).decide(snap).starts] == ["a"]
    # with the greedy fallback (our default) the base version starts the greedy plan's job
    assert [s.job_id for s in cp("hcp", q_length=1).decide(snap).starts] == ["a"]


@pytest.mark.parametrize(("name", "search"), [
    ("pcp", "portfolio"), ("pcp1", "portfolio"), ("pcp2", "portfolio"), ("pcp3", "fixed"),
    ("hcp", "fixed"), ("hcp1", "fixed"), ("hcp2", "fixed"), ("hcp3", "fixed"),
])
def test_search_paper_is_the_versions_own(name: str, search: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """CP'19 Sect. 5: PCP, PCP1 and PCP2 use the solver's default search; PCP3 adopts HCP's
    custom search. The solver must see it: FIXED_SEARCH with the model's decision strategy."""
    seen: list[tuple[int, int]] = []
    solve = cp_model.CpSolver.solve

    def spy(self: cp_model.CpSolver, model: cp_model.CpModel, *args: Any) -> Any:
        seen.append((self.parameters.search_branching, len(model.proto.search_strategy)))
        return solve(self, model, *args)

    monkeypatch.setattr(cp_model.CpSolver, "solve", spy)
    d = cp(name, search="paper", q_length=2)
    assert d.search == search
    d.decide(snapshot(ONE, [(job("a", 0, 10, 1, (2,)), 10), (job("b", 1, 5, 1, (2,)), 5)]))  # one at a time
    assert seen
    fixed = [(b == cp_model.FIXED_SEARCH, n > 0) for b, n in seen]
    assert all(f == ((search == "fixed"), search == "fixed") for f in fixed)
