"""What a dispatcher sees (Snapshot) and what it returns (Decision). Both immutable. `as_decision`
reads what a dispatcher returned (a Decision or its Starts) as a Decision, or says what is wrong."""

from __future__ import annotations

import reprlib
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

import numpy as np

from .errors import CpdispatchError
from .job import Job
from .system import System


@dataclass(frozen=True, slots=True)
class QueuedJob:
    """A waiting job, the duration the predictor gives it (what dispatchers plan with), and its
    weight in a weighted objective: 1 in the papers; the Slurm driver's `--priority slurm` sets
    Slurm's priority, normalised to the queue's highest (so in (0, 1])."""

    job: Job
    predicted: int
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class Allocation:
    """Where a job runs: distinct node indices, ascending, and the number of units on each.

    Kept per node, not per unit, because jobs and records hold it for the whole run: a CEA-Curie
    job has up to 80,000 units on a few thousand nodes, and the trace has 218 million units.
    """

    nodes: tuple[int, ...] = ()
    counts: tuple[int, ...] = ()

    @classmethod
    def of_units(cls, per_unit: Iterable[int]) -> Allocation:
        """The allocation of units placed on `per_unit[i]` (a node repeats for units sharing it)."""
        per_unit = tuple(per_unit)
        if len(per_unit) == 1:
            return cls((int(per_unit[0]),), (1,))
        pairs = sorted(Counter(int(n) for n in per_unit).items())
        return cls(tuple(n for n, _ in pairs), tuple(c for _, c in pairs))

    @property
    def units(self) -> int:
        return sum(self.counts)

    def per_unit(self) -> tuple[int, ...]:
        """One node index per unit (node order): the form `Start` and schedule.csv use."""
        if len(self.nodes) == 1:
            return (self.nodes[0],) * self.counts[0]
        return tuple(n for n, c in zip(self.nodes, self.counts) for _ in range(c))


@dataclass(frozen=True, slots=True)
class RunningJob:
    """A running job: start, predicted duration from its start, and its nodes."""

    job: Job
    start: int
    predicted: int
    alloc: Allocation

    @property
    def predicted_end(self) -> int:
        return self.start + self.predicted


T = TypeVar("T")


class LiveView(Sequence[T]):
    """The simulator's queue or running jobs at one dispatching time: an immutable sequence that
    reads like the tuple it stands for (indexing, slices, iteration, equality with tuples).

    Built in O(1): it reads the simulator's dict, which `freeze` copies into a tuple before the
    simulator changes that dict if the view is still referenced (so a view kept by anyone never
    changes). It also tells how the contents came about, for dispatchers that keep their own copy
    across calls: `added[:n_added]` are all the items ever put in, in order, and
    `removed[:n_removed]` all those taken out, in order; the contents are the former minus the
    latter (for the queue, in that order; a running job whose prediction is raised is taken out
    and put in again, and keeps its place in the view). Both lists only grow; the simulator may
    start new ones (holding the contents), and a dispatcher that sees other list objects reads the
    contents whole.
    """

    __slots__ = ("__weakref__", "_items", "_len", "_source", "added", "n_added", "n_removed", "removed")

    def __init__(
        self, source: Mapping[str, T], added: list[T], removed: list[T]
    ) -> None:
        self._source: Mapping[str, T] | None = source
        self._items: tuple[T, ...] | None = None
        self._len = len(source)
        self.added, self.n_added = added, len(added)
        self.removed, self.n_removed = removed, len(removed)

    def freeze(self) -> None:
        """Copy the contents now (the simulator calls this before it changes its dict)."""
        if self._items is None:
            assert self._source is not None
            self._items = tuple(self._source.values())
            self._source = None

    def items(self) -> tuple[T, ...]:
        """The contents as a tuple."""
        if self._items is None:
            self.freeze()
        assert self._items is not None
        return self._items

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[T, ...]: ...
    def __getitem__(self, i: int | slice) -> T | tuple[T, ...]:
        return self.items()[i]

    def __iter__(self) -> Iterator[T]:
        return iter(self.items())

    def __contains__(self, value: object) -> bool:
        return value in self.items()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LiveView):
            other = other.items()
        if isinstance(other, tuple):
            return self.items() == other
        return NotImplemented

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = None  # type: ignore[assignment]

    def __add__(self, other: tuple[T, ...]) -> tuple[T, ...]:
        return self.items() + tuple(other)

    def __radd__(self, other: tuple[T, ...]) -> tuple[T, ...]:
        return tuple(other) + self.items()

    def __repr__(self) -> str:
        return repr(self.items())

    def __reduce__(self) -> tuple[Any, ...]:
        return (tuple, (self.items(),))


@dataclass(frozen=True)
class Snapshot:
    """The state at dispatching time `time`: a dispatcher is a pure function of this.

    `queued` is in queue order (submission order), `running` in no particular order: tuples, or
    (from the simulator) `LiveView`s, which read as tuples. `free` is a read-only (nodes x types)
    array of the amounts free now, aligned with `system.types`.
    """

    time: int
    system: System
    queued: Sequence[QueuedJob]
    running: Sequence[RunningJob]
    free: np.ndarray

    # -- helpers for dispatchers written by users (the built-ins work on the arrays directly) ----

    def amount(self, job: QueuedJob | Job, type_name: str) -> int:
        """The total amount of `type_name` the job asks for (all units); 0 for a type the system
        does not have."""
        j = job.job if isinstance(job, QueuedJob) else job
        return j.total(self.system.types.index(type_name)) if type_name in self.system.types else 0

    def first_fit(self, job: QueuedJob | Job) -> tuple[int, ...] | None:
        """Nodes (one per unit) for the job on the free amounts now, in node order, packing as many
        units as fit on each node; None when it does not fit now."""
        from .allocators import first_fit

        j = job.job if isinstance(job, QueuedJob) else job
        return first_fit(self.free.copy(), j.req, j.units)

    def best_fit(self, job: QueuedJob | Job) -> tuple[int, ...] | None:
        """Like `first_fit`, fullest nodes first (AccaSim's consolidate)."""
        from .allocators import best_fit

        j = job.job if isinstance(job, QueuedJob) else job
        return best_fit(self.free.copy(), self.system.capacity, j.req, j.units)

    def after(self, start: Start) -> Snapshot:
        """The snapshot once `start` is applied: the job leaves the queue and runs on its nodes
        (its amounts no longer free). Raises ValueError if it is not queued or does not fit."""
        q = next((q for q in self.queued if q.job.id == start.job_id), None)
        if q is None:
            raise ValueError(f"job {start.job_id} is not queued")
        nodes: tuple[Any, ...] = tuple(start.nodes)
        if any(isinstance(n, str) for n in nodes):  # nodes given by name (see Start)
            ids = self.system.node_index
            if unknown := [n for n in nodes if isinstance(n, str) and n not in ids]:
                raise ValueError(f"no node named {unknown[0]!r} in system {self.system.name}")
            nodes = tuple(ids.get(n, n) for n in nodes)
        alloc = Allocation.of_units(nodes)
        if alloc.units != q.job.units:
            raise ValueError(f"{alloc.units} nodes given for the {q.job.units} units of job {start.job_id}")
        free = self.free.copy()
        free[list(alloc.nodes)] -= np.asarray(alloc.counts, dtype=np.int64)[:, None] * np.asarray(q.job.req)
        if (free < 0).any():
            raise ValueError(f"job {start.job_id} does not fit on nodes {start.nodes}")
        free.setflags(write=False)
        queued = tuple(x for x in self.queued if x is not q)
        running = (*self.running, RunningJob(q.job, self.time, q.predicted, alloc))
        return Snapshot(self.time, self.system, queued, running, free)


@dataclass(frozen=True, slots=True)
class Start:
    """Start job `job_id` now, unit i on node `nodes[i]` (repetitions allowed): a node index
    (0..n-1, the order of `system.node_names`) or a node name (e.g. "gpu-1"); the simulator
    and `Snapshot.after` turn names into indices, and refuse a name the system does not have."""

    job_id: str
    nodes: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PlacementReport:
    """What a placement stage did in one decision (pcp20's second stage, or the simulator's room
    probe): a short `status` ("moved" when a different placement of the jobs starting now lets a
    queued job start earlier), its wall time, its model's size (None: no model was built), and how
    many queued jobs start earlier with that placement (`gained`)."""

    status: str
    ms: float
    variables: int | None = None
    gained: int = 0

    @property
    def room(self) -> bool:
        return self.status == "moved"


@dataclass(frozen=True)
class Decision:
    """The jobs to start now, plus what the dispatcher wants recorded about how it decided.

    `status` is a short word for decisions.csv (e.g. heuristic, optimal, feasible, fastpath,
    fallback:no-solution; the CP ones in `dispatchers.cp.status`); solver fields stay None for
    non-CP dispatchers. `plan` optionally gives the planned start time of other queued jobs
    (absolute times), for reports and the Slurm adapter. `stage2` says what a second,
    placement-only stage did (pcp20), if the dispatcher has one.
    """

    starts: tuple[Start, ...] = ()
    status: str = "heuristic"
    variables: int | None = None
    constraints: int | None = None
    objective: float | None = None
    plan: Mapping[str, int] = field(default_factory=dict)
    stage2: PlacementReport | None = None


def as_decision(returned: Any, dispatcher: str, time: int) -> Decision:
    """What a dispatcher returned, as a `Decision`: a Decision, or any iterable of `Start`s (not
    None: a forgotten `return` would reject every job without a word). Anything else is an error
    naming the dispatcher, the simulated time and what came back."""
    if isinstance(returned, Decision):
        starts = returned.starts
    elif returned is None or isinstance(returned, str | bytes | Mapping) or not hasattr(returned, "__iter__"):
        starts = None
    else:
        starts = tuple(returned)
    if starts is None or not all(isinstance(s, Start) for s in starts):
        bad = returned if starts is None else next(s for s in starts if not isinstance(s, Start))
        what = "" if bad is returned else f" holding {reprlib.repr(bad)}"
        raise CpdispatchError(
            f"dispatcher {dispatcher} returned {reprlib.repr(returned)}{what} at simulated time {time}: expected a "
            "Decision or a sequence of Start (an empty list to start nothing)")
    return returned if isinstance(returned, Decision) else Decision(starts=starts, status="heuristic")
