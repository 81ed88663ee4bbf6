"""The simulator's parts, each alone: event clock, cluster state and validation, accounting."""

from __future__ import annotations

import pytest

from cpdispatch.errors import CpdispatchError
from cpdispatch.simulator import STALL_ATTEMPTS, Cluster, EventClock
from cpdispatch.simulator.accounting import Ledger
from cpdispatch.snapshot import Allocation, Start
from cpdispatch.workloads.base import Workload

from .helpers import job, system, workload


def test_clock_orders_submissions_and_completions_and_never_goes_back() -> None:
    clock = EventClock([job("a", 5, 1), job("b", 5, 1), job("c", 9, 1)])
    assert clock.advance() == 5
    assert [j.id for j in clock.due_submissions()] == ["a", "b"]
    clock.at_completion(7, "a")
    clock.at_completion(7, "b")  # same time: push order kept
    assert clock.advance() == 7
    assert list(clock.due_completions()) == ["a", "b"]
    clock.floor = 12  # a charged decision moved time on: the next event is seen at 12, not 9
    assert clock.advance() == 12
    assert [j.id for j in clock.due_submissions()] == ["c"]
    assert not clock.pending()


def test_clock_gives_an_idle_queue_a_few_more_seconds_then_stops() -> None:
    clock = EventClock([job("a", 3, 1)])
    clock.advance()
    list(clock.due_submissions())
    times = [clock.advance() for _ in range(STALL_ATTEMPTS + 1)]
    assert times == [4, 5, 6, None]


def test_clock_overruns_are_separate_from_completions() -> None:
    clock = EventClock([job("a", 0, 10)])
    clock.advance()
    list(clock.due_submissions())
    clock.at_overrun(4, "a")
    clock.at_completion(10, "a")
    clock.advance()  # the overrun is not an event of its own
    assert clock.now == 10
    assert list(clock.due_overruns()) == ["a"] and list(clock.due_completions()) == ["a"]


def test_cluster_checks_count_range_and_capacity_and_applies_per_node() -> None:
    s = system(("n", 2, {"core": 4, "mem": 10}))
    c = Cluster(s)
    j = job("a", 0, 5, units=3, req=(1, 3))
    assert c.check(j, Start("a", (0,))) == "1 nodes given for 3 units"
    assert "no node with index 2" in str(c.check(j, Start("a", (0, 1, 2))))
    assert "has 10 mem free, 4 units need 12" in str(c.check(job("b", 0, 5, units=4, req=(1, 3)), Start("b", (0,) * 4)))
    checked = c.check(j, Start("a", (1, 0, 1)))
    assert not isinstance(checked, str)
    alloc, need = checked
    assert alloc == Allocation((0, 1), (1, 2))  # nodes ascending, counts per node
    c.take("a", alloc, need)
    assert c.free.tolist() == [[3, 7], [2, 4]]
    snap_free = c.frozen_free()
    c.release("a")
    assert c.free.tolist() == [[4, 10], [4, 10]]
    assert snap_free.tolist() == [[3, 7], [2, 4]] and not snap_free.flags.writeable


def test_ledger_accounts_for_every_job_and_refuses_duplicates() -> None:
    s = system(("n", 1, {"core": 1}))
    wl = workload(job("a", 0, 10, walltime=5), job("b", 1, 3))
    ledger = Ledger(wl)
    assert ledger.start(wl.jobs[0], 2, 5, Allocation((0,), (1,)), kill_at_walltime=True) == 7
    assert ledger.record("a").status == "killed" and "walltime of 5 s" in ledger.record("a").reason
    with pytest.raises(AssertionError, match="jobs lost"):
        ledger.result(s, "d", "p", {}, 0.0)  # b is neither started nor rejected
    ledger.reject("b", "too big")
    result = ledger.result(s, "d", "p", {}, 0.0)
    assert [(r.job.id, r.status) for r in result.records] == [("a", "killed"), ("b", "rejected")]
    with pytest.raises(CpdispatchError, match="job id 'x' appears more than once"):
        Ledger(Workload("t.csv", [job("x", 0, 1), job("x", 1, 1)]))
