"""The driver's start checks: a multi-node `-n` job's tasks per node are Slurm's choice, so a start
that fits only under the dispatcher's own layout of such a job waits a round (else Slurm adds a
node the dispatcher did not choose)."""

from __future__ import annotations

from types import SimpleNamespace

from cpdispatch.job import Job
from cpdispatch.slurm.placement import LATER, StartChecker
from cpdispatch.slurm.state import Request
from cpdispatch.snapshot import Start
from cpdispatch.system import NodeGroup, System

from .helpers import snapshot

TWO = System.build("two", [NodeGroup("big", 1, {"core": 8}), NodeGroup("small", 1, {"core": 4})])


def _checker(*jobs: tuple[Job, Request]) -> StartChecker:
    snap = snapshot(TWO, [(j, 60) for j, _ in jobs])
    offered = {j.id: SimpleNamespace(request=r, features="") for j, r in jobs}
    nodes = [SimpleNamespace(name=n, features="") for n in TWO.node_names]
    index = {n: i for i, n in enumerate(TWO.node_names)}
    return StartChecker(snap, offered, {"": list(TWO.node_names)}, index, nodes)  # type: ignore[arg-type]


def _tasks(jid: str) -> tuple[Job, Request]:
    return Job(jid, 0, 6, (1,), 60, 60), Request(6, {"core": 1}, False, False)


def test_a_start_beside_a_spread_job_waits_when_slurm_may_lay_it_out_otherwise() -> None:
    checker = _checker(_tasks("A"), _tasks("B"))
    assert checker.check(Start("A", (0, 0, 1, 1, 1, 1))) == ([0, 0, 1, 1, 1, 1], "")  # 2 on big-1, 4 on small-1
    # by A's layout big-1 keeps 6 cores for B, but Slurm may give A 5 tasks there
    assert checker.check(Start("B", (0,) * 6)) == (None, LATER)


def test_starts_that_fit_any_layout_go_through() -> None:
    checker = _checker(_tasks("A"), (Job("C", 0, 1, (3,), 60, 60), Request(1, {"core": 3}, False, False)))
    assert checker.check(Start("A", (0, 0, 1, 1, 1, 1)))[1] == ""
    assert checker.check(Start("C", (0,))) == ([0], "")  # at most 5 of A's tasks on big-1: 3 cores stay free
