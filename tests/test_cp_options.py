"""No CP dispatcher accepts an option it never reads.

Each registered CP dispatcher is built with each option it accepts at a valid value other than
its default (beside the options that select the code reading it, e.g. `k` under
`time_policy=cp19`), and decides a few small snapshots: a congested one that needs the solver,
one the fast path takes, one where nothing fits. The attribute reads of option names, while the
dispatcher is built (its time policy copies the options it reads) and while it decides, must
cover every option it accepts, except documented no-ops (their help must say so) and `profile`,
which the constructor reads from the values given and which must change other options.
"""

from __future__ import annotations

from typing import Any

import pytest

from cpdispatch.dispatchers.base import Option, make_dispatcher, registry
from cpdispatch.dispatchers.cp.frontend import CpDispatcher
from cpdispatch.dispatchers.cp.hcp import Hcp3
from cpdispatch.dispatchers.cp.profiles import paper_overrides
from cpdispatch.errors import CpdispatchError
from cpdispatch.snapshot import RunningJob, Snapshot
from cpdispatch.system import NodeGroup, System

from .helpers import job, on, snapshot

CP = {name: cls for name, cls in registry().items() if issubclass(cls, CpDispatcher)}
#: options a dispatcher accepts without effect, kept for a reason its help states ("no-op")
NO_OPS: dict[str, set[str]] = {}
#: read by the constructor from the values it is given, not as an attribute
CONSTRUCTION = {"profile"}
#: other valid values of the string options (the first that differs from the default is used)
CHOICES = {
    "priority": ("slowdown", "ewt"), "ewt": ("default=900", "eurora"), "time_policy": ("paper", "fast"),
    "search": ("fixed", "portfolio"), "allocator": ("best-fit", "scarce-fit"), "layout": ("units", "counts"),
    "objective": ("makespan", "tardiness"),
}
#: what an option needs beside it to be read (or to be valid at a value other than the default)
CONTEXT: dict[str, dict[str, Any]] = {
    "k": {"time_policy": "cp19", "deterministic_time": 0.01},
    "max_limit": {"time_policy": "cp19", "deterministic_time": 0.01},
    "max_retries": {"time_policy": "pcp20", "deterministic_time": 0.01},
    "limit_scale": {"time_policy": "paper", "deterministic_time": 0.01},
    "time_policy": {"deterministic_time": 0.01},
}
TWO = System.build("two", [NodeGroup("n", 2, {"core": 2, "gpu": 1})])


def other(opt: Option) -> Any:
    """A valid value of `opt` other than its default."""
    if isinstance(opt.default, bool):
        return not opt.default
    if isinstance(opt.default, str):
        return next(v for v in CHOICES[opt.name] if v != opt.default)
    if isinstance(opt.default, int):
        return opt.default + 1
    return opt.default * 2 if opt.default else 0.01


def snapshots() -> list[Snapshot]:
    """Congested (no plan starts every job now), all fit now together, nothing fits now."""
    congested = [(job("a", 0, 10, 2, (2, 0)), 10), (job("b", 1, 10, 1, (2, 1)), 10), (job("c", 2, 10, 1, (1, 0)), 10)]
    fits = [(job("d", 0, 10, 1, (1, 0)), 10), (job("e", 5, 10, 1, (1, 1)), 10)]
    full = (RunningJob(job("r", 0, 500, 2, (2, 1)), 0, 500, on(0, 1)),)
    return [snapshot(TWO, congested), snapshot(TWO, fits), snapshot(TWO, congested, full)]


def reads(cls: type[CpDispatcher], values: dict[str, Any], wanted: str) -> bool:
    """Whether a dispatcher of `cls` built with `values` reads the attribute `wanted` while it is
    built or while it decides the snapshots."""
    seen: set[str] = set()

    def spy(self: Any, attr: str) -> Any:
        if attr == wanted:
            seen.add(attr)
        return object.__getattribute__(self, attr)

    disp = type(cls.__name__, (cls,), {"__getattribute__": spy})(**values)
    for snap in snapshots():
        if seen:
            break
        disp.decide(snap)
    return bool(seen)


def unread(cls: type[CpDispatcher], name: str) -> list[str]:
    """The options `cls` accepts and never reads (beside the documented no-ops)."""
    out = []
    for opt in cls.options:
        if opt.name in CONSTRUCTION | NO_OPS.get(name, set()):
            continue
        values = {k: v for k, v in CONTEXT.get(opt.name, {}).items() if k in {o.name for o in cls.options}}
        if not reads(cls, {**values, opt.name: other(opt)}, opt.name):
            out.append(opt.name)
    return out


@pytest.mark.parametrize("name", sorted(CP))
def test_every_accepted_option_is_read(name: str) -> None:
    assert unread(CP[name], name) == []


def test_an_option_nobody_reads_fails_the_check() -> None:
    class Unread(Hcp3):
        options = (*Hcp3.options, Option("unused", 1, "read by nothing"))

    assert unread(Unread, "hcp3") == ["unused"]


def test_documented_no_ops_say_so_and_profile_changes_options() -> None:
    for name, opts in NO_OPS.items():
        helps = {o.name: o.help for o in CP[name].options}
        assert all("no-op" in helps[o] for o in opts), name
    for name, cls in CP.items():
        assert paper_overrides(name, {o.name: o.default for o in cls.options}), name


@pytest.mark.parametrize(("name", "option"), [
    ("eurora14", "k"), ("eurora14", "max_limit"), ("eurora14", "max_retries"), ("eurora14", "blocked"),
    ("hcp", "blocked"), ("pcp", "blocked"),
])
def test_options_a_dispatcher_never_read_are_refused(name: str, option: str) -> None:
    with pytest.raises(CpdispatchError, match=f"unknown option '{option}'"):
        make_dispatcher(name, {option: "1"})
    assert not hasattr(make_dispatcher(name), option)  # no silent class-level default either


def test_eurora14_runs_only_one_solve_per_phase() -> None:
    with pytest.raises(CpdispatchError, match="time_policy must be one of fast, paper"):
        make_dispatcher("eurora14", {"time_policy": "cp19"})
