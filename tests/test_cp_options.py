"""Every option a CP dispatcher accepts changes something it does.

Each registered CP dispatcher decides a few small snapshots twice: with one option it accepts at a
valid value other than its default, and with that option at its default; both beside the options
it needs to matter (`CONTEXT`, e.g. `k` under `time_policy=cp19`). What it does is compared at
three levels, the first that differs counting: the decisions (starts, planned starts), their
records (status, model size, objective, second stage), and what reaches CP-SAT (the parameters
and the model, hints included, of every solve). An option that changes none of them must be in
`NO_OPS` for that dispatcher, with a help that says "no-op" and why.
"""

from __future__ import annotations

from functools import cache
from typing import Any, NamedTuple
from unittest.mock import patch

import pytest
from ortools.sat.python import cp_model

from cpdispatch.dispatchers.base import Option, make_dispatcher, registry
from cpdispatch.dispatchers.cp.frontend import CpDispatcher
from cpdispatch.dispatchers.cp.models.hcp import Hcp3
from cpdispatch.errors import CpdispatchError
from cpdispatch.snapshot import Decision, RunningJob, Snapshot
from cpdispatch.system import NodeGroup, System

from .helpers import job, on, snapshot

CP = {name: cls for name, cls in registry().items() if issubclass(cls, CpDispatcher)}
#: options a dispatcher accepts without effect, kept for a reason its help states ("no-op")
NO_OPS: dict[str, set[str]] = {}
#: the value tried where the default's neighbour (not, +1, x2) is invalid or shows nothing here
OTHER: dict[str, Any] = {
    "priority": "ewt", "ewt": "eurora", "time_policy": "paper", "search": "fixed", "allocator": "best-fit",
    "layout": "units", "objective": "makespan", "profile": "paper", "q_length": 1, "blocked": 1, "k": 1,
    "max_limit": 8.0, "max_units": 1, "max_running_boxes": 1, "stage2": 0,
}
#: the value tried when OTHER's is the default
SECOND = {"priority": "slowdown", "ewt": "default=900", "objective": "tardiness"}
#: deterministic seconds in which CP-SAT finds no plan on these snapshots
NOTHING = 1e-8
#: what an option needs beside it to change something (papers' policies: deterministic limits, for speed)
CONTEXT: dict[str, dict[str, Any]] = {
    "ewt": {"priority": "ewt"},  # else it weighs only the EWT objectives (hcp, pcp1, ...)
    "duration_tiebreak": {"priority": "slowdown"},  # jobs that have not waited tie on slowdown (1)
    "shortcut": {"fastpath": False},
    "clamp": {"shortcut": False},  # else the plan that starts all now is the greedy one, made without a model
    "reallocate": {"hint": False, "deterministic_time": NOTHING},  # the greedy plan, placed over time, is enacted
    "fallback": {"hint": False, "deterministic_time": NOTHING},
    "k": {"time_policy": "cp19", "deterministic_time": 5e-6},  # a plan, not proven optimal
    "max_limit": {"time_policy": "cp19", "deterministic_time": NOTHING, "k": 100},
    "max_retries": {"time_policy": "pcp20", "deterministic_time": NOTHING, "hint": False},
    "limit_scale": {"time_policy": "paper", "deterministic_time": 0.01},
    "time_policy": {"deterministic_time": 0.01},
    "profile": {"deterministic_time": 0.01},
    "det_wall_cap": {"deterministic_time": 0.01},
}
TWO = System.build("two", [NodeGroup("n", 2, {"core": 2, "gpu": 1})])
TEN = System.build("ten", [NodeGroup("n", 2, {"core": 10})])


def other(opt: Option) -> Any:
    """A valid value of `opt` other than its default."""
    if opt.name in OTHER:
        return OTHER[opt.name] if OTHER[opt.name] != opt.default else SECOND[opt.name]
    if isinstance(opt.default, bool):
        return not opt.default
    if isinstance(opt.default, int):
        return opt.default + 1
    return opt.default * 2 if opt.default else 0.01


def snapshots() -> list[Snapshot]:
    """Congested, with EWTs exceeded (no plan starts every job now); all fit now together (equal
    slowdowns, shorter job larger); some fit now (a core-only job goes either on the node with a
    core in use or on the one with its GPU in use; a job past its predicted end; one predicted to
    take 0 s); nothing fits now; a greedy plan that places a job over time, not as now; and units of
    one core only (a model of fluid types only)."""
    congested = [(job("a", 0, 10, 2, (2, 0)), 10), (job("b", 1, 10, 1, (2, 1), queue="debug"), 10),
                 (job("c", 2, 10, 1, (1, 0)), 5), (job("g", 3, 10, 2, (1, 0)), 10)]
    fits = [(job("d", 90, 10, 1, (2, 1)), 10), (job("e", 80, 20, 1, (1, 0)), 20)]
    busy = (RunningJob(job("l", 0, 500, 1, (1, 0)), 0, 50, on(0)),
            RunningJob(job("m", 0, 500, 1, (0, 1)), 0, 500, on(1)))
    some = [(job("a", 0, 10, 2, (2, 0)), 10), (job("f", 1, 10, 1, (1, 0)), 0), (job("c", 2, 10, 1, (2, 1)), 10),
            (job("h", 4, 10, 2, (1, 0)), 10)]
    full = (RunningJob(job("r", 0, 500, 2, (2, 1)), 0, 500, on(0, 1)),)
    # w starts now on node 0, x at 5 on node 1 (freed then); y now where best fit over [0, 10)
    # puts it: on node 1, which x fills, while node 0 is the fuller now
    later = [(job("w", 0, 10, 1, (8,)), 10), (job("x", 1, 10, 1, (9,)), 10), (job("y", 2, 10, 1, (1,)), 10)]
    ends = (RunningJob(job("r", 0, 500, 1, (6,)), 0, 105, on(1)),)
    cores = [(job("u", 0, 100, 2, (1,)), 100), (job("v", 1, 10, 1, (1,)), 10), (job("z", 2, 20, 2, (1,)), 20)]
    most = (RunningJob(job("k", 0, 500, 18, (1,)), 0, 50, on(*[0] * 9, *[1] * 9)),)  # 2 cores free
    return [snapshot(TWO, congested, now=3000), snapshot(TWO, fits), snapshot(TWO, some, busy),
            snapshot(TWO, congested, full), snapshot(TEN, later, ends), snapshot(TEN, cores, most)]


class Seen(NamedTuple):
    """What a dispatcher did on `snapshots()`, by level (the test names the first that differs)."""

    decisions: tuple[Any, ...]
    records: tuple[Any, ...]
    solver: tuple[tuple[str, str], ...]


def observe(cls: type[CpDispatcher], values: dict[str, Any]) -> Seen:
    """What a dispatcher of `cls` built with `values` does on the snapshots, in order (its queue
    length and demand estimate carry over from one to the next)."""
    solves: list[tuple[str, str]] = []
    original = cp_model.CpSolver.solve

    def spy(self: cp_model.CpSolver, model: cp_model.CpModel, *args: Any, **kw: Any) -> Any:
        solves.append((str(self.parameters), str(model.proto)))
        return original(self, model, *args, **kw)

    disp = cls(**values)
    with patch.object(cp_model.CpSolver, "solve", spy):
        done: list[Decision] = [disp.decide(snap) for snap in snapshots()]
    stage2 = [d.stage2 and (d.stage2.status, d.stage2.variables, d.stage2.gained) for d in done]  # not its time
    return Seen(tuple((d.starts, sorted(d.plan.items())) for d in done),
                tuple((d.status, d.variables, d.constraints, d.objective, s) for d, s in zip(done, stage2)),
                tuple(solves))


@cache
def baseline(cls: type[CpDispatcher], context: tuple[tuple[str, Any], ...]) -> Seen:
    return observe(cls, dict(context))


def context_of(cls: type[CpDispatcher], opt: Option) -> tuple[tuple[str, Any], ...]:
    accepted = {o.name for o in cls.options}
    return tuple((k, v) for k, v in CONTEXT.get(opt.name, {}).items() if k in accepted)


def effect(cls: type[CpDispatcher], opt: Option) -> str | None:
    """The first level at which `opt` at `other(opt)` changes what `cls` does (None: none)."""
    context = context_of(cls, opt)
    base, changed = baseline(cls, context), observe(cls, {**dict(context), opt.name: other(opt)})
    return next((level for level in Seen._fields if getattr(base, level) != getattr(changed, level)), None)


@pytest.mark.parametrize(("name", "option"), [(name, o.name) for name in sorted(CP) for o in CP[name].options])
def test_every_accepted_option_changes_something(name: str, option: str) -> None:
    opt = next(o for o in CP[name].options if o.name == option)
    if option in NO_OPS.get(name, set()):
        assert "no-op" in opt.help and effect(CP[name], opt) is None
    else:
        assert effect(CP[name], opt) is not None


@pytest.mark.parametrize("name", sorted(CP))
def test_what_a_dispatcher_does_is_reproducible(name: str) -> None:
    """Else a difference could be noise: each context's baseline, observed again, is the same."""
    cls = CP[name]
    for context in {context_of(cls, o) for o in cls.options}:
        assert observe(cls, dict(context)) == baseline(cls, context), context


def test_an_option_without_effect_fails_the_check() -> None:
    class Unused(Hcp3):
        options = (*Hcp3.options, Option("unread", 1, "read by nothing"), Option("read", 1, "read, then ignored"))

        def decide(self, snapshot: Snapshot) -> Decision:
            assert self.read > 0
            return super().decide(snapshot)

    assert [effect(Unused, o) for o in Unused.options[-2:]] == [None, None]


@pytest.mark.parametrize(("name", "option"), [
    ("eurora14", "k"), ("eurora14", "max_limit"), ("eurora14", "max_retries"), ("eurora14", "blocked"),
    ("hcp", "blocked"), ("pcp", "blocked"),
])
def test_options_a_dispatcher_never_read_are_refused(name: str, option: str) -> None:
    with pytest.raises(CpdispatchError, match=f"unknown option '{option}'"):
        make_dispatcher(name, {option: "1"})
    assert not hasattr(make_dispatcher(name), option)  # no silent class-level default either


def test_eurora14_runs_only_one_solve_per_phase() -> None:
    with pytest.raises(CpdispatchError, match="time_policy must be one of fast, one-solve, paper"):
        make_dispatcher("eurora14", {"time_policy": "cp19"})
