"""What the running jobs hold, as the model posts it: data only, computed before any constraint.

A running job is the fixed interval ``[0, remaining)`` (remaining >= 1: it holds its nodes now
whatever its prediction). Per node and type it holds the box ``[0, remaining) x [first_r(k) +
stacked, ... + usage)``: on each node the running boxes are stacked from the node's first
position, longest remaining time at the bottom, so that what running jobs hold on a node at any
time is a prefix of its block (a staircase that only shrinks). Per type (`TypeLoad`), only the
nodes some queued unit may use count (the others cannot conflict), and boxes with equal remaining
time that touch on the axis (units of one job on one node, equal-remaining jobs on one node, whole
nodes of one job in a row) are merged into one box.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...instance import Instance
from .axes import Axes, UnitGeometry
from .reductions import Fold


@dataclass(frozen=True)
class RunningUsage:
    """Running usage per (node, type) as parallel arrays sorted by node, then longest remaining
    first; ``y0`` is where each piece is stacked on the type's axis."""

    node: np.ndarray
    remaining: np.ndarray
    usage: np.ndarray  # (rows, types)
    y0: np.ndarray  # (rows, types)


@dataclass(frozen=True)
class TypeLoad:
    """One modelled type as the model posts it: the running boxes on usable nodes, merged (none
    on a fluid type: the cumulative alone is exact there), the running demand grouped by
    remaining time (for the cumulative), and the capacity of the usable nodes."""

    fluid: bool
    boxes: list[tuple[int, int, int]]  # (y0, height, remaining)
    demands: list[tuple[int, int]]  # (remaining, total height)
    capacity: int
    axis_length: int


def running_usage(instance: Instance, axes: Axes, folds: Sequence[Fold] = ()) -> RunningUsage:
    """Per (running job, node): its usage, remaining time (>= 1) and stacked position; with
    `folds`, per node the effective rows of each folded type (`_fold_rows`) instead."""
    n_types = axes.capacity.shape[1]
    pn, rem, usage = _rows(instance, n_types)
    if folds:
        forever = instance.horizon + max((max(1, j.duration) for j in instance.jobs), default=1) + 1
        parts = [(pn, rem, usage)]
        for f in folds:
            parts.append(_fold_rows(f, pn, rem, usage, axes.capacity, forever))
            usage[:, [f.r, f.c]] = 0
        pn, rem, usage = (np.concatenate(x) for x in zip(*parts))
        keep = usage.any(axis=1)
        pn, rem, usage = pn[keep], rem[keep], usage[keep]
    if not len(pn):
        z = np.zeros(0, dtype=np.int64)
        return RunningUsage(z, z, np.zeros((0, n_types), np.int64), np.zeros((0, n_types), np.int64))
    order = np.lexsort((-rem, pn))
    pn, rem, usage = pn[order], rem[order], usage[order]
    # stack per node from its first position: offset = usage of the node's rows before this one
    excl = np.cumsum(usage, axis=0) - usage
    _, first_row = np.unique(pn, return_index=True)
    group = np.cumsum(np.r_[0, (pn[1:] != pn[:-1]).astype(np.int64)])
    y0 = axes.first[pn] + excl - excl[first_row][group]
    return RunningUsage(pn, rem, usage, y0)


def _rows(instance: Instance, n_types: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One row (node, remaining >= 1, usage) per running job and node it holds."""
    live = [r for r in instance.running if r.alloc.nodes]
    if not live:
        z = np.zeros(0, dtype=np.int64)
        return z, z, np.zeros((0, n_types), np.int64)
    lengths = np.fromiter((len(r.alloc.nodes) for r in live), np.int64, len(live))
    total = int(lengths.sum())
    pn = np.fromiter(itertools.chain.from_iterable(r.alloc.nodes for r in live), np.int64, total)
    counts = np.fromiter(itertools.chain.from_iterable(r.alloc.counts for r in live), np.int64, total)
    pj = np.repeat(np.arange(len(live), dtype=np.int64), lengths)
    rem = np.fromiter((max(1, r.remaining) for r in live), np.int64, len(live))[pj]
    req = np.array([r.req for r in live], dtype=np.int64).reshape(len(live), n_types)
    return pn, rem, req[pj] * counts[:, None]


def _fold_rows(
    f: Fold, pn: np.ndarray, rem: np.ndarray, usage: np.ndarray, capacity: np.ndarray, forever: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows (node, remaining, usage) whose type-c usage is the effective c-usage of `f` on each
    node: while the i longest-running rows of a node are alive it holds ``E_i = cap_c -
    min(cap_c - U_c, floor((cap_r - U_r) * den / num))`` (U: their usage), so row i gets ``E_i -
    E_{i-1}`` and a row lasting `forever` gets ``E_0`` (what the r-capacity alone withholds).
    E only grows with the rows alive, so the rows keep the staircase of `running_usage`."""
    n, cap_c, cap_r = capacity.shape[0], capacity[:, f.c], capacity[:, f.r]
    e0 = cap_c - np.minimum(cap_c, cap_r * f.den // f.num)
    order = np.lexsort((-rem, pn))
    node, left = pn[order], rem[order]
    uc, ur = usage[order, f.c], usage[order, f.r]
    start = np.r_[True, node[1:] != node[:-1]] if len(node) else np.zeros(0, bool)
    group_first = np.flatnonzero(start)
    group = np.cumsum(start) - 1
    csum_c, csum_r = np.cumsum(uc), np.cumsum(ur)
    held_c = csum_c - (csum_c - uc)[group_first][group]
    held_r = csum_r - (csum_r - ur)[group_first][group]
    fit = np.minimum(cap_c[node] - held_c, (cap_r[node] - held_r) * f.den // f.num)
    e = np.clip(cap_c[node] - fit, 0, cap_c[node])
    prev = np.where(start, e0[node], np.r_[0, e[:-1]])
    rows_c = np.r_[e0, e - prev]
    nodes = np.r_[np.arange(n, dtype=np.int64), node]
    remaining = np.r_[np.full(n, forever, dtype=np.int64), left]
    out = np.zeros((len(nodes), capacity.shape[1]), dtype=np.int64)
    out[:, f.c] = rows_c
    return nodes, remaining, out


def type_load(t: int, users: Sequence[UnitGeometry], run: RunningUsage, axes: Axes, fluid: bool) -> TypeLoad:
    """Type `t`'s load for queued units of geometries `users` (those asking for t): only the
    running rows on nodes one of them may use, merged where they touch with equal remaining time."""
    usable = np.zeros(axes.n_nodes + 1, dtype=np.int64)  # +1 / -1 at each piece's ends
    for geo in users:
        for p in geo.pieces:
            usable[p.start] += 1
            usable[p.end + 1] -= 1
    usable_nodes = np.cumsum(usable[:-1]) > 0
    sel = (run.usage[:, t] > 0) & usable_nodes[run.node]
    y0, hgt, rem = run.y0[sel, t], run.usage[sel, t], run.remaining[sel]
    demands: list[tuple[int, int]] = []
    if len(rem):
        rems, inverse = np.unique(rem, return_inverse=True)
        demands = [(rr, int(dem)) for rr, dem in zip(rems.tolist(), np.bincount(inverse, weights=hgt).tolist())]
    boxes: list[tuple[int, int, int]] = []
    if not fluid and len(y0):
        brk = np.r_[True, (rem[1:] != rem[:-1]) | (y0[1:] != y0[:-1] + hgt[:-1])]
        heads = np.nonzero(brk)[0]
        boxes = list(zip(y0[heads].tolist(), np.add.reduceat(hgt, heads).tolist(), rem[heads].tolist()))
    capacity = int(axes.capacity[usable_nodes, t].sum())
    return TypeLoad(fluid, boxes, demands, capacity, int(axes.capacity[:, t].sum()))
