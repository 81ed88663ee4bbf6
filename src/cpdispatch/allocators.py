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


def _pack(free: np.ndarray, req: tuple[int, ...], units: int, order: np.ndarray | None) -> tuple[int, ...] | None:
    """Take as many units as fit on each node, visiting nodes in `order` (all nodes by index when
    None), until `units` are placed; subtract them from `free`."""
    if units <= 0:
        return ()
    fit = units_fitting(free if order is None else free[order], req)
    take = np.minimum(fit, units)  # also tames the "unlimited" count of an all-zero request
    cum = np.cumsum(take)
    if cum.size == 0 or cum[-1] < units:
        return None
    last = int(np.searchsorted(cum, units))  # first position where the request is met
    counts = take[: last + 1].copy()
    counts[last] -= cum[last] - units
    idx = np.arange(last + 1) if order is None else order[: last + 1]
    free[idx] -= counts[:, None] * np.asarray(req, dtype=np.int64)
    return tuple(np.repeat(idx, counts).tolist())


def first_fit(free: np.ndarray, req: tuple[int, ...], units: int) -> tuple[int, ...] | None:
    """Nodes in index order, packing as many units as fit on each (AccaSim's first fit)."""
    return _pack(free, req, units, None)


def best_fit(free: np.ndarray, capacity: np.ndarray, req: tuple[int, ...], units: int) -> tuple[int, ...] | None:
    """Fullest node first, then pack node by node (AccaSim's "consolidate" allocator).

    Fullness = sum over the requested types of free / capacity. AccaSim summed the raw free amounts,
    so memory (in KB) drowned cores; normalising makes every requested type count alike. Ties go to
    the lower node index.
    """
    fit = units_fitting(free, req)
    cand = np.flatnonzero(fit > 0)
    if int(np.minimum(fit[cand], units).sum()) < units:
        return None if units > 0 else ()
    kinds = [k for k, a in enumerate(req) if a > 0]
    if kinds:
        # capacity > 0 on every candidate for every requested type (free >= a > 0 there)
        score = (free[np.ix_(cand, kinds)] / capacity[np.ix_(cand, kinds)]).sum(axis=1)
        cand = cand[np.argsort(score, kind="stable")]
    return _pack(free, req, units, cand)


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
