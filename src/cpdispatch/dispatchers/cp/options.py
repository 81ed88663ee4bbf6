"""Options of the CP dispatchers, each declared once: a field of an option *family*.

A family is a dataclass whose fields carry each option's type, default and help. It gives both
the `Option`s a dispatcher accepts (`options_of`) and, mixed into the dispatcher class, the typed
attributes its code reads (the base `Dispatcher` sets them from the values given). Fields have no
dataclass default, so a dispatcher that does not accept an option has no such attribute: reading
it is an error, not a silent default. Which families a dispatcher takes says which options it
reads (`tests/test_cp_options.py` checks that each is read).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, TypeVar, cast

from ..base import Option

T = TypeVar("T")
C = TypeVar("C", bound=type)


def option(default: T, help: str) -> T:
    """A family field: the option's default and help (the annotation gives its type)."""
    return field(metadata={"default": default, "help": help})


def family(cls: C) -> C:
    """Make `cls` an option family: a dataclass that a dispatcher can mix in (no equality, hash or
    repr of its own to pass on) and that can also be built as a value (`values`)."""
    return cast(C, dataclass(eq=False, repr=False)(cls))


def options_of(*families: type, without: tuple[str, ...] = (), **defaults: Any) -> tuple[Option, ...]:
    """The options of `families` in declaration order, minus `without`, with per-dispatcher
    `defaults` replacing the declared ones (an unknown name is a ValueError)."""
    declared = [f for fam in families for f in fields(fam) if f.name not in without]
    unknown = sorted(set(defaults) - {f.name for f in declared})
    if unknown:
        raise ValueError(f"unknown CP options {unknown}")
    return tuple(Option(f.name, defaults.get(f.name, f.metadata["default"]), f.metadata["help"]) for f in declared)


def with_help(options: tuple[Option, ...], **help: str) -> tuple[Option, ...]:
    """`options` with the help of some replaced (what an option means for one dispatcher)."""
    return tuple(Option(o.name, o.default, help.get(o.name, o.help)) for o in options)


def values(fam: type[T], source: object) -> T:
    """The family `fam` as a value, its fields read from `source` (a dispatcher)."""
    make: Any = fam  # a family is a dataclass, which its decorator hides from the type checker
    return make(**{f.name: getattr(source, f.name) for f in fields(make)})


@family
class FrontEnd:
    """What every CP dispatcher reads: selection, priorities, the solve around the model."""

    q_length: int = option(100, "most jobs in a model; halved after an unsolved run (min 1), reset on success")
    clamp: bool = option(True, "underestimation fix: durations and remaining times >= 1 (false: versions 1)")
    priority: str = option("slowdown", "slowdown | ewt | ewt-shipped (the CP'19 code's precedence slip)")
    ewt: str = option("default=1600", "expected waiting time per queue 'queue=s,...,default=s', or 'eurora'")
    time_policy: str = option("fast", "fast | paper (the version's own) | cp19 | pcp20 | doubling (HCP base)")
    workers: int = option(1, "CP-SAT workers (1 = deterministic)")
    seed: int = option(0, "CP-SAT random seed")
    fastpath: bool = option(True, "start the whole queue without a model when it fits now")
    search: str = option("portfolio", "portfolio (CP-SAT default, greedy hint) | fixed (model's strategy) | dive "
                                      "(fixed, from the first solution of the authors' search: pcp20) | paper "
                                      "(the version's own: the solver's default for PCP, PCP1, PCP2, dive for "
                                      "PCP'20, else fixed)")
    fallback: bool = option(True, "start the greedy plan when the solver finds none (false: start nothing, as "
                                  "the papers' dispatchers)")
    allocator: str = option("scarce-fit", "allocation outside the model (fast path, greedy plan, HCP): "
                                          "scarce-fit or best-fit (the papers')")
    reallocate: bool = option(False, "enact the demand-aware allocation of the jobs the model starts now when it "
                                     "places them all (the model's objective does not see scarcity); not with blocked")
    hint: bool = option(True, "give CP-SAT the greedy plan (and each re-solve the best plan so far) as a hint "
                              "(false: the papers' cold solves)")
    shortcut: bool = option(True, "skip the solver when the greedy plan starts every selected job now")
    profile: str = option("default", "default (ours) | paper: set every option as the dispatcher's paper does "
                                     "(`cpdispatch dispatchers` lists them and the few that stay free)")


@family
class FitNow:
    """The fit-now selection's (the queue-order selection of the base versions has no such jobs)."""

    blocked: int = option(0, "also model the first N queued jobs (priority order) that cannot start now, as "
                             "future starts, so that an allocation that delays them costs in the objective")


@family
class PerNode:
    """The per-node model's (`per_node.PerNodeModel`: the PCP'19 family and eurora14)."""

    free_now: bool = option(True, "queued jobs that can start now only on nodes with room now (the "
                                  "restriction of PCP1-3 and the original code); the others (blocked ones, "
                                  "pcp's queue order) on every node")
    redundant: bool = option(True, "add the per-type total cumulative (implied) to the per-node model")
    layout: str = option("counts", "counts (unit counts per node) | units (the CP'19 paper's layout: one "
                                   "optional interval per unit that fits on each node; size grows with units x nodes)")
