"""The driver's start checks: a multi-node `-n` job's tasks per node are Slurm's choice, and so is
the order in which it starts the round's jobs, so a start that fits only under the dispatcher's own
layout of such a job waits a round, whichever of the two the dispatcher chose first (else a job
waits on its nodes, or Slurm adds a node the dispatcher did not choose to a `-n` job)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from cpdispatch.job import Job
from cpdispatch.slurm.placement import LATER, StartChecker, committed_units, most_units
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
    return StartChecker(snap, snap.free, offered, {"": list(TWO.node_names)}, index, nodes)  # type: ignore[arg-type]


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


def test_a_spread_job_after_a_start_on_its_node_waits_too() -> None:
    """Slurm may start the spread job first (its order is not the dispatcher's) and put 5 tasks on
    big-1, where C's 5 cores would then not fit."""
    checker = _checker((Job("C", 0, 1, (5,), 60, 60), Request(1, {"core": 5}, False, False)), _tasks("A"))
    assert checker.check(Start("C", (0,))) == ([0], "")
    assert checker.check(Start("A", (0, 0, 1, 1, 1, 1))) == (None, LATER)  # fits C's cores only as laid out


def test_a_spread_job_alone_goes_through() -> None:
    checker = _checker(_tasks("A"))
    assert checker.check(Start("A", (0, 0, 1, 1, 1, 1))) == ([0, 0, 1, 1, 1, 1], "")


def test_the_most_slurm_may_give_a_job_on_each_node() -> None:
    room = np.array([[8], [4]])
    assert most_units(Request(2, {"core": 1}, True, False), (0, 1), room, (1,)) == (1, 1)  # -N 2
    assert most_units(Request(6, {"core": 1}, False, False), (0,), room, (1,)) == (6,)
    assert most_units(Request(6, {"core": 1}, False, False), (0, 1), room, (1,)) == (5, 4)  # 5+1 or 2+4
    assert most_units(Request(6, {"core": 2}, False, False), (0, 1), room, (2,)) == (4, 2)


def test_released_jobs_reserve_the_same_whichever_slurm_starts_first() -> None:
    """Two released jobs on big-1 not yet started: each is reserved the most Slurm may give it
    there, not what the other leaves (Slurm's order of the two is unknown)."""
    index = {n: i for i, n in enumerate(TWO.node_names)}
    spread = SimpleNamespace(request=Request(6, {"core": 1}, False, False), required=TWO.node_names)
    single = SimpleNamespace(request=Request(1, {"core": 5}, False, False), required=TWO.node_names[:1])
    room = TWO.capacity.copy()
    for order in ([spread, single], [single, spread]):
        free = room.copy()
        counts = [committed_units(j, TWO, index, room, free)[1] for j in order]  # type: ignore[arg-type]
        assert sorted(counts) == [[1], [5, 4]] and free[0, 0] == 8 - 5 - 5  # short: no new start on big-1
