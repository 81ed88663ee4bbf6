"""Options of the CP dispatchers, each declared once: a field of an option *family*.

A family is a dataclass whose fields carry each option's type, default, help, value under
`profile=paper` (`paper`: the papers' set-up, CP'19 Sect. 4-5 and reference notes 2.2-2.9, PCP'20
Sect. 3-4 and notes 3.2; `Paper.FREE`: the option keeps the value given) and accepted values. A
dispatcher whose paper differs gives its own default or paper value where it declares its options
(`options_of`).

How the values travel, one rule: the base `Dispatcher` sets every option given as an attribute;
the families the dispatcher's own code reads are mixed into its class, which types those
attributes; a part built for it (a time policy, pcp20's model) receives the value of the families
it reads (`values`) and sees no other option. Fields have no dataclass default, so a dispatcher
that does not accept an option has no such attribute: reading it is an error, not a silent
default. Which families a dispatcher takes says which options it reads (`tests/test_cp_options.py`
checks that each is read).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, TypeVar, cast

from ..base import Option, Paper

T = TypeVar("T")
#: the searches of every CP dispatcher (a model may add its own: pcp20's dive)
SEARCHES = ("portfolio", "fixed", "paper")
C = TypeVar("C", bound=type)


def option(default: T, help: str, paper: Any = Paper.DEFAULT, choices: tuple[Any, ...] = ()) -> T:
    """A family field: the option's default, help, value under `profile=paper` and accepted values
    (the annotation gives its type)."""
    return field(metadata={"default": default, "help": help, "paper": paper, "choices": choices})


def family(cls: C) -> C:
    """Make `cls` an option family: a dataclass that a dispatcher can mix in (no equality, hash or
    repr of its own to pass on) and that can also be built as a value (`values`)."""
    return cast(C, dataclass(eq=False, repr=False)(cls))


def options_of(*families: type, without: tuple[str, ...] = (), paper: dict[str, Any] | None = None,
               choices: dict[str, tuple[Any, ...]] | None = None, **defaults: Any) -> tuple[Option, ...]:
    """The options of `families` in declaration order, minus `without`, with a dispatcher's own
    `defaults`, `paper` values and `choices` replacing the declared ones (an unknown name is a
    ValueError)."""
    declared = [f for fam in families for f in fields(fam) if f.name not in without]
    paper, choices = paper or {}, choices or {}
    unknown = sorted((set(defaults) | set(paper) | set(choices)) - {f.name for f in declared})
    if unknown:
        raise ValueError(f"unknown CP options {unknown}")
    return tuple(Option(f.name, defaults.get(f.name, f.metadata["default"]), f.metadata["help"],
                        paper.get(f.name, f.metadata["paper"]), choices.get(f.name, f.metadata["choices"]))
                 for f in declared)


def with_help(options: tuple[Option, ...], **help: str) -> tuple[Option, ...]:
    """`options` with the help of some replaced (what an option means for one dispatcher)."""
    return tuple(replace(o, help=help.get(o.name, o.help)) for o in options)


def declared(fam: type[T], **changes: Any) -> T:
    """The family `fam` as a value of its declared defaults, with `changes` (a part built outside
    a dispatcher: a model in a test or a benchmark)."""
    make: Any = fam  # a family is a dataclass, which its decorator hides from the type checker
    defaults = {f.name: f.metadata["default"] for f in fields(make)}
    unknown = sorted(set(changes) - set(defaults))
    if unknown:
        raise TypeError(f"unknown {fam.__name__} options {unknown}")
    return make(**{**defaults, **changes})


def values(fam: type[T], source: object) -> T:
    """The family `fam` as a value, its fields read from `source` (a dispatcher)."""
    make: Any = fam  # a family is a dataclass, which its decorator hides from the type checker
    return make(**{f.name: getattr(source, f.name) for f in fields(make)})


@family
class FrontEnd:
    """What every CP dispatcher reads: selection, priorities, the solve around the model."""

    q_length: int = option(100, "most jobs in a model; halved after an unsolved run (min 1), reset on success")
    clamp: bool = option(True, "underestimation fix: durations and remaining times >= 1 (false: versions 1)")
    priority: str = option("slowdown", "slowdown | ewt | ewt-shipped (the CP'19 code's precedence slip)",
                           choices=("slowdown", "ewt", "ewt-shipped"))
    duration_tiebreak: bool = option(False, "tie-break on shorter predicted duration before area (PCP'20's, notes "
                                            "3.2 step 2; off: it lengthened waits at load factor 2 on generated "
                                            "Eurora workloads)")
    # the Eurora queues' expected waiting times (CP'19 Sect. 5), 1800 s elsewhere
    ewt: str = option("default=1600", "expected waiting time per queue 'queue=s,...,default=s', or 'eurora'",
                      paper="eurora")
    # the version's own limits and stopping rules (the CP'19 versions': cp19)
    time_policy: str = option("fast", "fast | paper (the version's own) | cp19 | pcp20 | doubling (HCP base)",
                              paper="cp19")
    # one search thread, as the papers' solver
    workers: int = option(1, "CP-SAT workers (1 = deterministic)", paper=1)
    seed: int = option(0, "CP-SAT random seed", paper=Paper.FREE)
    # no whole-queue start without a model
    fastpath: bool = option(True, "start the whole queue without a model when it fits now", paper=False)
    # the version's own search (CP'19 Sect. 5: the solver's default for PCP to PCP2, else the custom one)
    search: str = option("portfolio", "portfolio (CP-SAT default, greedy hint) | fixed (model's strategy) | dive "
                                      "(fixed, from the first solution of the authors' search: pcp20) | paper "
                                      "(the version's own: the solver's default for PCP, PCP1, PCP2, dive for "
                                      "PCP'20, else fixed)", paper="fixed", choices=SEARCHES)
    # no plan in time: nothing starts (notes 2.9)
    fallback: bool = option(True, "start the greedy plan when the solver finds none (false: start nothing, as "
                                  "the papers' dispatchers)", paper=False)
    # HCP's allocator (notes 2.7); the PCP family places in the model
    allocator: str = option("scarce-fit", "allocation outside the model (fast path, greedy plan, HCP): "
                                          "scarce-fit or best-fit (the papers')", paper="best-fit",
                            choices=("scarce-fit", "best-fit"))
    # the model's own placement is what runs
    reallocate: bool = option(False, "enact the demand-aware allocation of the jobs the model starts now when it "
                                     "places them all (the model's objective does not see scarcity); not with blocked",
                              paper=False)
    # each solve starts cold (notes 2.3: the model is rebuilt, no warm start)
    hint: bool = option(True, "give CP-SAT the greedy plan (and each re-solve the best plan so far) as a hint "
                              "(false: the papers' cold solves)", paper=False)
    # the model is always solved
    shortcut: bool = option(True, "skip the solver when the greedy plan starts every selected job now", paper=False)
    profile: str = option("default", "default (ours) | paper: set every option as the dispatcher's paper does "
                                     "(`cpdispatch dispatchers` lists them and the few that stay free)",
                          paper=Paper.FREE, choices=("default", "paper"))


@family
class FitNow:
    """The fit-now selection's (the queue-order selection of the base versions has no such jobs)."""

    # only jobs that fit now enter the model (notes 2.2 step 4)
    blocked: int = option(0, "also model the first N queued jobs (priority order) that cannot start now, as "
                             "future starts, so that an allocation that delays them costs in the objective", paper=0)


@family
class PerNode:
    """The per-node model's (`models.pcp19.PerNodeModel`: the PCP'19 family and eurora14)."""

    free_now: bool = option(True, "queued jobs that can start now only on nodes with room now (the "
                                  "restriction of PCP1-3 and the original code); the others (blocked ones, "
                                  "pcp's queue order) on every node")
    # the per-type total cumulative is ours
    redundant: bool = option(True, "add the per-type total cumulative (implied) to the per-node model", paper=False)
    # one optional interval per unit that fits on each node (CP'19 Sect. 4)
    layout: str = option("counts", "counts (unit counts per node) | units (the CP'19 paper's layout: one "
                                   "optional interval per unit that fits on each node; size grows with units x nodes)",
                         paper="units", choices=("counts", "units"))
