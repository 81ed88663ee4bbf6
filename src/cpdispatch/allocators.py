"""Allocators: place the units of one job on nodes, AccaSim style (several units may share a node).

Every allocator works on a caller-owned (nodes x types) int64 `free` array: on success it subtracts
the allocation in place and returns one node index per unit (repetitions allowed, in node order of
the strategy); on failure it returns None and leaves `free` untouched. Everything is vectorised
(`units_fitting` + cumsum/searchsorted) because systems reach thousands of nodes.

Allocation sits below the snapshot: a rule that learns reads the queue through `Observed`, which
a `Snapshot` is, so this module imports nothing of the dispatching layer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from .errors import CpdispatchError
from .job import Job
from .system import System, units_fitting


class _Waiting(Protocol):
    """A queued job as a learning rule reads it (a `snapshot.QueuedJob` is one)."""

    @property
    def job(self) -> Job: ...
    @property
    def predicted(self) -> int: ...


class Request(Protocol):
    """A job's request as `take` reads it (a `Job` is one, and so is the CP front end's `CpJob`)."""

    @property
    def units(self) -> int: ...
    @property
    def req(self) -> tuple[int, ...]: ...
    @property
    def one_per_node(self) -> bool: ...


class Observed(Protocol):
    """What a learning rule reads at each decision: the queue in submission order and the system
    (a `snapshot.Snapshot` is one)."""

    @property
    def queued(self) -> Sequence[_Waiting]: ...
    @property
    def system(self) -> System: ...


def _pack(
    free: np.ndarray, req: tuple[int, ...], units: int, fit: np.ndarray, order: np.ndarray | None
) -> tuple[int, ...] | None:
    """Visit nodes in `order` (all nodes by index when None), where `fit[i]` units fit on the i-th
    visited node, taking as many as fit on each until `units` are placed; subtract them from
    `free`. Few numpy calls: this is the hot path of every baseline."""
    take = np.minimum(fit, units)  # also tames the "unlimited" count of an all-zero request
    cum = take.cumsum()
    if cum.size == 0 or cum[-1] < units:
        return None
    last = int(cum.searchsorted(units))  # first position where the request is met
    counts = take[: last + 1]
    counts[last] -= cum[last] - units
    if order is None:
        free[: last + 1] -= counts[:, None] * np.asarray(req, dtype=np.int64)
        return tuple(np.repeat(np.arange(last + 1), counts).tolist())
    idx = order[: last + 1]
    free[idx] -= counts[:, None] * np.asarray(req, dtype=np.int64)
    return tuple(np.repeat(idx, counts).tolist())


def first_fit(free: np.ndarray, req: tuple[int, ...], units: int, one_per_node: bool = False
              ) -> tuple[int, ...] | None:
    """Nodes in index order, packing as many units as fit on each (AccaSim's first fit)."""
    if units <= 0:
        return ()
    fit = units_fitting(free, req, one_per_node)
    if units == 1:  # the most common request: the first node with room
        node = int((fit > 0).argmax()) if fit.size else 0
        if not fit.size or fit[node] <= 0:
            return None
        free[node] -= req
        return (node,)
    return _pack(free, req, units, fit, None)


def best_fit(
    free: np.ndarray, capacity: np.ndarray, req: tuple[int, ...], units: int, weights: np.ndarray | None = None,
    one_per_node: bool = False,
) -> tuple[int, ...] | None:
    """Fullest node first, then pack node by node (AccaSim's "consolidate" allocator).

    Fullness = sum over the requested types of free / capacity. AccaSim summed the raw free amounts,
    so memory (in KB) drowned cores; normalising makes every requested type count alike. Ties go to
    the lower node index.

    `weights` (per type, >= 0) makes it demand-aware ("scarce fit"): nodes are first ranked by the
    *waste* of scarce resources, sum over the types the job does not request of weight x free /
    capacity, and only then by fullness. So a CPU-only job avoids GPU nodes whose GPUs are free
    while another node has room, and prefers GPU nodes whose GPUs are busy. With no weight on an
    unrequested type this is exactly best fit.
    """
    if units <= 0:
        return ()
    fit = units_fitting(free, req, one_per_node)
    cand = np.flatnonzero(fit > 0)
    fit = fit[cand]
    if cand.size == 0 or (units > 1 and int(np.minimum(fit, units).sum()) < units):
        return None
    kinds = [k for k, a in enumerate(req) if a > 0]
    others = [] if weights is None else [k for k, a in enumerate(req) if a == 0 and weights[k] > 0]
    if kinds or others:  # capacity > 0 on every candidate for every requested type (free >= a > 0 there)
        f, c = free[cand], capacity[cand]
        score = (f[:, kinds] / c[:, kinds]).sum(axis=1) if kinds else np.zeros(cand.size)
        if others and weights is not None:
            rank = np.lexsort((score, waste(f[:, others], c[:, others], weights[others])))  # then index
        else:
            rank = score.argsort(kind="stable")
        if units == 1:
            node = int(cand[rank[0]])
            free[node] -= req
            return (node,)
        cand, fit = cand[rank], fit[rank]
    return _pack(free, req, units, fit, cand)


def take(work: np.ndarray, nodes: tuple[int, ...], job: Request) -> bool:
    """Subtract `job` on `nodes` from `work` if that is valid (right unit count, in range, fits)."""
    if len(nodes) != job.units:
        return False
    if not nodes:
        return True
    idx = np.asarray(nodes)
    if idx.dtype.kind not in "iu" or idx.min() < 0 or idx.max() >= work.shape[0]:
        return False
    uniq, counts = np.unique(idx, return_counts=True)
    if job.one_per_node and len(uniq) < len(idx):
        return False
    need = counts[:, None] * np.asarray(job.req, dtype=np.int64)
    if (work[uniq] < need).any():
        return False
    work[uniq] -= need
    return True


def one_unit_of_one_type(req: tuple[int, ...]) -> bool:
    """Whether a unit asks exactly 1 of one type and nothing else."""
    return sum(1 for a in req if a) == 1 and max(req) == 1


def placement_cannot_matter(jobs: Sequence[Job]) -> bool:
    """Whether where the units of `jobs` go can never change which of them fit later: each unit
    asks exactly 1 of one type and no job needs distinct nodes for its units, so every free unit
    of a type serves any of them alike (single-type SWF traces)."""
    return not any(j.one_per_node and j.units > 1 for j in jobs) and all(
        map(one_unit_of_one_type, {j.req for j in jobs}))


def waste(free: np.ndarray, capacity: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per node, sum over types of weight x free / capacity: what a job that does not use those
    types leaves idle by taking the node (a type a node lacks counts 0)."""
    return (free / np.maximum(capacity, 1) * weights).sum(axis=1)


class DemandEstimate:
    """How much each resource type is in demand, learned on-line from the jobs seen in the queue
    (never from the future): per type, the requested amount x predicted duration of the jobs seen,
    over the type's total capacity, forgotten with a half-life of `HALF_LIFE` jobs. Weights are
    these figures over their largest (the type in most demand for its capacity weighs 1), so on
    Eurora GPUs asked by a third of the jobs weigh far more than MICs asked by one in a hundred,
    and a type no job has asked for weighs 0 (it is not protected).

    New jobs are found from the end of the queue (queue order is submission order): O(new jobs)
    per call. State across calls, like a predictor's: the estimate only ranks nodes, it never
    makes an allocation invalid."""

    HALF_LIFE = 5000

    def __init__(self) -> None:
        self.demand: np.ndarray | None = None
        self._last_submit = -1
        self._at_last: set[str] = set()  # ids seen with submit == _last_submit

    def observe(self, snapshot: Observed) -> None:
        queued = snapshot.queued
        new = []
        for i in range(len(queued) - 1, -1, -1):
            q = queued[i]
            s = q.job.submit
            if s < self._last_submit or (s == self._last_submit and q.job.id in self._at_last):
                break
            new.append(q)
        if not new:
            return
        types = len(snapshot.system.types)
        if self.demand is None or len(self.demand) != types:
            self.demand = np.zeros(types)
        decay = 0.5 ** (1 / self.HALF_LIFE)
        totals = np.maximum(np.asarray(snapshot.system.totals, dtype=float), 1)
        for q in reversed(new):
            self.demand *= decay
            self.demand += np.asarray(q.job.req, dtype=float) * (q.job.units * max(1, q.predicted)) / totals
            if q.job.submit != self._last_submit:
                self._last_submit, self._at_last = q.job.submit, set()
            self._at_last.add(q.job.id)

    @property
    def weights(self) -> np.ndarray | None:
        """Per type, in [0, 1]; None before any job was seen."""
        if self.demand is None or not self.demand.max() > 0:
            return None
        return self.demand / self.demand.max()


class Allocator:
    """A named allocation rule (see `first_fit`, `best_fit`). `observe` is called once per
    dispatching decision, before any allocation, for rules that learn (the demand-aware one)."""

    name = ""

    def observe(self, snapshot: Observed) -> None:
        """Learn from the snapshot (nothing for the fixed rules)."""

    @property
    def weights(self) -> np.ndarray | None:
        """Per-type scarcity weights for `best_fit` (None: the plain rule)."""
        return None

    def __call__(self, free: np.ndarray, capacity: np.ndarray, req: tuple[int, ...], units: int,
                 one_per_node: bool = False) -> tuple[int, ...] | None:
        raise NotImplementedError


class FirstFit(Allocator):
    name = "first-fit"

    def __call__(self, free: np.ndarray, capacity: np.ndarray, req: tuple[int, ...], units: int,
                 one_per_node: bool = False) -> tuple[int, ...] | None:
        return first_fit(free, req, units, one_per_node)


class BestFit(Allocator):
    name = "best-fit"

    def __call__(self, free: np.ndarray, capacity: np.ndarray, req: tuple[int, ...], units: int,
                 one_per_node: bool = False) -> tuple[int, ...] | None:
        return best_fit(free, capacity, req, units, self.weights, one_per_node)


class ScarceFit(BestFit):
    """Best fit that keeps scarce resources free: `best_fit` with the `DemandEstimate` weights."""

    name = "scarce-fit"

    def __init__(self) -> None:
        self.demand = DemandEstimate()

    def observe(self, snapshot: Observed) -> None:
        self.demand.observe(snapshot)

    @property
    def weights(self) -> np.ndarray | None:
        return self.demand.weights


ALLOCATORS: dict[str, type[Allocator]] = {a.name: a for a in (FirstFit, BestFit, ScarceFit)}
ALLOCATOR_HELP = ("first-fit (AccaSim's default), best-fit (fullest node first) or scarce-fit "
                  "(best fit that keeps resources in demand, e.g. GPUs, free for the jobs that need them)")


def get_allocator(name: str) -> Allocator:
    """A fresh allocator called `name` (an error naming the known ones otherwise)."""
    try:
        return ALLOCATORS[name]()
    except KeyError:
        raise CpdispatchError(f"unknown allocator '{name}' (known: {', '.join(ALLOCATORS)})") from None
