"""The validator must catch every kind of invalid schedule (else the property tests prove nothing)."""

from __future__ import annotations

from cpdispatch.records import JobRecord, SimulationResult
from cpdispatch.snapshot import Allocation
from cpdispatch.validate import schedule_errors

from .helpers import job, on, system


def result(*records: JobRecord, kill: bool = False) -> SimulationResult:
    s = system(("n", 2, {"core": 2, "gpu": 1}))
    return SimulationResult(s, "x", "y", list(records), [], options={"kill_at_walltime": kill})


def rec(j, status="completed", start=None, end=None, nodes=(), reason=""):  # type: ignore[no-untyped-def]
    return JobRecord(j, status=status, start=start, end=end, alloc=on(*nodes), reason=reason)


def test_valid_schedule_passes() -> None:
    a, b = job("a", 0, 10, units=2, req=(1, 0)), job("b", 0, 5, req=(2, 1))
    c = job("c", 0, 3, req=(2, 1))
    r = result(rec(a, start=0, end=10, nodes=(0, 0)), rec(b, start=0, end=5, nodes=(1,)),
               rec(c, start=5, end=8, nodes=(1,)))  # c reuses what b frees at 5
    assert schedule_errors(r) == []


def test_capacity_exceeded_on_one_type_is_caught() -> None:
    a, b = job("a", 0, 10, req=(1, 1)), job("b", 5, 10, req=(1, 1))
    errors = schedule_errors(result(rec(a, start=0, end=10, nodes=(1,)), rec(b, start=5, end=15, nodes=(1,))))
    assert errors == ["node n-2: gpu used 2 > capacity 1 at t=5"]


def test_capacity_of_units_sharing_a_node_is_caught() -> None:
    a = job("a", 0, 10, units=3, req=(1, 0))
    assert "core used 3 > capacity 2" in schedule_errors(result(rec(a, start=0, end=10, nodes=(0, 0, 0))))[0]


def test_other_violations() -> None:
    a, b, c, d = (job(x, t, 10, req=(1, 0)) for x, t in [("a", 5), ("b", 0), ("c", 0), ("d", 0)])
    errors = schedule_errors(result(
        rec(a, start=2, end=12, nodes=(0,)),
        rec(b, start=0, end=11, nodes=(0,)),
        rec(c, status="rejected"),
        rec(d, status="queued"),
    ))
    assert "job a: starts at 2 before its submission at 5" in errors
    assert "job b: ran 11 s, expected 10 s" in errors
    assert "job c: rejected without a reason" in errors
    assert "job d: not accounted for (status 'queued')" in errors


def test_kill_rules() -> None:
    long = job("l", 0, 100, walltime=10, req=(1, 0))
    assert schedule_errors(result(rec(long, start=0, end=100, nodes=(0,)), kill=True)) == [
        "job l: outlived its walltime without being killed"]
    assert schedule_errors(result(rec(long, status="killed", start=0, end=10, nodes=(0,)), kill=True)) == []
    assert "killed but should not be" in schedule_errors(result(rec(long, status="killed", start=0, end=10,
                                                                    nodes=(0,))))[0]


def test_malformed_allocations_are_caught() -> None:
    a = job("a", 0, 10, units=2, req=(1, 0))
    for alloc in (Allocation((0, 0), (1, 1)), Allocation((0, 5), (1, 1)), Allocation((0, 1), (2, 0)),
                  Allocation((0,), (1,))):
        rec_a = JobRecord(a, status="completed", start=0, end=10, alloc=alloc)
        assert schedule_errors(result(rec_a))[0].startswith("job a: "), alloc
