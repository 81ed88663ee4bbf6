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
