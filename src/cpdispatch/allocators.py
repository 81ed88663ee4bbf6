"""Allocators: place the units of one job on nodes, AccaSim style (several units may share a node).

Every allocator works on a caller-owned (nodes x types) int64 `free` array: on success it subtracts
the allocation in place and returns one node index per unit (repetitions allowed, in node order of
the strategy); on failure it returns None and leaves `free` untouched. Everything is vectorised
(`units_fitting` + cumsum/searchsorted) because systems reach thousands of nodes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .errors import CpdispatchError
from .system import units_fitting

Allocator = Callable[[np.ndarray, np.ndarray, tuple[int, ...], int], "tuple[int, ...] | None"]


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


def first_fit(free: np.ndarray, req: tuple[int, ...], units: int) -> tuple[int, ...] | None:
    """Nodes in index order, packing as many units as fit on each (AccaSim's first fit)."""
    if units <= 0:
        return ()
    fit = units_fitting(free, req)
    if units == 1:  # the most common request: the first node with room
        node = int((fit > 0).argmax()) if fit.size else 0
        if not fit.size or fit[node] <= 0:
            return None
        free[node] -= req
        return (node,)
    return _pack(free, req, units, fit, None)


def best_fit(free: np.ndarray, capacity: np.ndarray, req: tuple[int, ...], units: int) -> tuple[int, ...] | None:
    """Fullest node first, then pack node by node (AccaSim's "consolidate" allocator).

    Fullness = sum over the requested types of free / capacity. AccaSim summed the raw free amounts,
    so memory (in KB) drowned cores; normalising makes every requested type count alike. Ties go to
    the lower node index.
    """
    if units <= 0:
        return ()
    fit = units_fitting(free, req)
    cand = np.flatnonzero(fit > 0)
    fit = fit[cand]
    if cand.size == 0 or (units > 1 and int(np.minimum(fit, units).sum()) < units):
        return None
    kinds = [k for k, a in enumerate(req) if a > 0]
    if kinds:  # capacity > 0 on every candidate for every requested type (free >= a > 0 there)
        f, c = free[cand], capacity[cand]
        if len(kinds) < len(req):
            f, c = f[:, kinds], c[:, kinds]
        score = (f / c).sum(axis=1)
        if units == 1:
            node = int(cand[score.argmin()])  # the first minimum: lowest index among ties
            free[node] -= req
            return (node,)
        rank = score.argsort(kind="stable")
        cand, fit = cand[rank], fit[rank]
    return _pack(free, req, units, fit, cand)


def _first_fit(free: np.ndarray, capacity: np.ndarray, req: tuple[int, ...], units: int) -> tuple[int, ...] | None:
    return first_fit(free, req, units)


ALLOCATORS: dict[str, Allocator] = {"first-fit": _first_fit, "best-fit": best_fit}

#: Allocators whose placement of a job does not change when amounts are taken away from what the
#: placement leaves free (first fit visits the nodes in a fixed order; best fit re-ranks them).
STABLE_ALLOCATORS = frozenset({"first-fit"})


def get_allocator(name: str) -> Allocator:
    """The allocator called `name` (an error naming the known ones otherwise)."""
    try:
        return ALLOCATORS[name]
    except KeyError:
        raise CpdispatchError(f"unknown allocator '{name}' (known: {', '.join(ALLOCATORS)})") from None


def consume(free: np.ndarray, nodes: tuple[int, ...], req: tuple[int, ...]) -> None:
    """Subtract one unit of `req` per entry of `nodes` from `free` (in place)."""
    if nodes:
        np.subtract.at(free, np.asarray(nodes, dtype=np.intp), np.asarray(req, dtype=np.int64))


def release(free: np.ndarray, nodes: tuple[int, ...], req: tuple[int, ...]) -> None:
    """Add one unit of `req` per entry of `nodes` to `free` (in place)."""
    if nodes:
        np.add.at(free, np.asarray(nodes, dtype=np.intp), np.asarray(req, dtype=np.int64))


#: `fitting_totals` of a request that asks nothing (it fits whatever is free).
FITS_ANY = np.iinfo(np.int64).max // 4


def fitting_totals(free: np.ndarray, reqs: np.ndarray) -> np.ndarray:
    """For each column of `reqs` (types x requests, per-unit amounts), how many units fit in `free`
    (nodes x types) over all nodes (a request asking nothing: FITS_ANY).

    Exact test of every allocator here: a job of `units` x `req` can be allocated iff `units` is
    at most this (first and best fit both pack as many units as fit on each node they visit, and
    fail only when the nodes' fits add up to fewer). `FitPlan` prepares it for repeated use.
    """
    return FitPlan(reqs)(free)


class FitPlan:
    """`fitting_totals` for fixed requests, prepared once. Only nodes with room for the smallest
    request of each type that every request asks for count: on a busy system, few."""

    __slots__ = ("_cap", "_full", "_mins", "_nothing", "_partial", "nreq")

    def __init__(self, reqs: np.ndarray) -> None:
        reqs = np.asarray(reqs, dtype=np.int64)
        asks = reqs > 0
        self.nreq = reqs.shape[1]
        every = np.asarray(asks.all(axis=1)) if self.nreq else np.zeros(reqs.shape[0], dtype=bool)
        self._mins = [(k, int(reqs[k].min())) for k in np.flatnonzero(every).tolist()]
        self._full = [(k, reqs[k][:, None].copy()) for k in np.flatnonzero(every).tolist()]
        self._partial = [  # a request asking nothing of type k: divide by 1, then set FITS_ANY
            (k, ~asks[k], np.maximum(reqs[k], 1)[:, None])
            for k in range(reqs.shape[0])
            if not every[k] and asks[k].any()
        ]
        self._cap = bool(self._partial)  # FITS_ANY entries: cap before summing
        nothing = ~asks.any(axis=0)
        self._nothing = nothing if nothing.any() else None

    def per_node(self, free: np.ndarray) -> np.ndarray:
        """(requests x nodes) units that fit on each node of `free`, as `__call__` adds them up
        (capped; 0 for a request asking nothing)."""
        out = np.zeros((self.nreq, len(free)), dtype=np.int64)
        first = True
        for k, col in self._full:
            q = free[:, k] // col
            out = q if first else np.minimum(out, q, out=out)
            first = False
        for k, free_of_k, col in self._partial:
            q = free[:, k] // col
            q[free_of_k] = FITS_ANY
            out = q if first else np.minimum(out, q, out=out)
            first = False
        if self._cap:
            np.minimum(out, 1 << 32, out=out)
        if self._nothing is not None:
            out[self._nothing] = 0
        return out

    def update(self, total: np.ndarray, before: np.ndarray, after: np.ndarray) -> np.ndarray:
        """`total` (of some free array) once the rows `before` of that array became `after`."""
        total = total - self.per_node(before).sum(axis=1) + self.per_node(after).sum(axis=1)
        if self._nothing is not None:
            total[self._nothing] = FITS_ANY
        return total

    def __call__(self, free: np.ndarray) -> np.ndarray:
        keep: np.ndarray | None = None
        for k, m in self._mins:
            room = free[:, k] >= m
            keep = room if keep is None else np.logical_and(keep, room, out=keep)
        out: np.ndarray | None = None
        for k, col in self._full:
            q = (free[:, k] if keep is None else free[keep, k]) // col
            out = q if out is None else np.minimum(out, q, out=out)
        for k, free_of_k, col in self._partial:
            q = (free[:, k] if keep is None else free[keep, k]) // col
            q[free_of_k] = FITS_ANY
            out = q if out is None else np.minimum(out, q, out=out)
        if out is None:
            total = np.zeros(self.nreq, dtype=np.int64)
        else:
            if self._cap:
                np.minimum(out, 1 << 32, out=out)
            total = out.sum(axis=1)
        if self._nothing is not None:
            total[self._nothing] = FITS_ANY
        return total
