"""The geometry of units, PCP'20 Section 3: "we consider all the resources of a certain type r in
an ordered list by following the sequence of the nodes".

For every type r, node k owns the block of positions ``[first_r(k), last_r(k)]`` of an axis of
``C_r = sum_k cap_{k,r}`` positions. A unit's positions on one type lie in one node (the paper's
``element(map_r, y) = element(map_r, y + req/rn)``), the same node for all its types
(``element(map_r1, y_r1) = element(map_r2, y_r2)``). No table indexed by node or by position says
so (memory axes reach 10^8 positions): along a run of consecutive nodes with identical capacities
on the requested types (a `Piece`), ``first_r(v) = base + cap * v`` is linear in the node ``v``,
so the link is one linear constraint ``y - cap * v in [lo, lo + cap - a]``. The number of pieces
depends on the node *types* and their order, never on how many nodes a group has.

Everything here depends on the system and the per-unit request only: built once per system
(`axes_of`), one `UnitGeometry` cached per request.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from ortools.sat.python import cp_model

from .....job import Job
from .....system import System
from ...instance import CpJob

#: With ``sparse_domains``, above this many intervals a position domain stays one interval per
#: piece (the node link keeps the model exact): keeps the proto small on systems of thousands of nodes.
SPARSE_DOMAIN_LIMIT = 256


@dataclass(frozen=True, slots=True)
class Block:
    """A maximal run of consecutive nodes ``start..end`` (inclusive) with identical capacities."""

    start: int
    end: int
    cap: tuple[int, ...]
    base: tuple[int, ...]  # first position of node `start` on each type's axis


@dataclass(frozen=True, slots=True)
class Piece:
    """Consecutive nodes ``start..end`` that can host a unit and have identical capacities on the
    unit's requested types: for node ``v`` of the piece and requested type number ``t``, the unit's
    position ``y_t`` lies in the node iff ``lo[t] <= y_t - slope[t] * v <= hi[t]``."""

    start: int
    end: int
    slope: tuple[int, ...]
    lo: tuple[int, ...]
    hi: tuple[int, ...]


@dataclass(frozen=True)
class UnitGeometry:
    """Where a unit with a given per-unit request can go (depends on the system and request only).

    A unit whose only request is 1 of one type cannot straddle nodes, so it needs no node
    variable (``node_var``): its node is decoded from its position. The position domains are the
    hull of each piece; the sparse ones the exact union over hosting nodes of ``[first_r(k),
    last_r(k) - a + 1]``, redundant with the node link and slower to presolve."""

    types: tuple[int, ...]  # requested type indices (amount > 0)
    amounts: tuple[int, ...]
    pieces: tuple[Piece, ...]
    node_var: bool  # a node variable is needed (several types, or an amount > 1)
    node_domain: cp_model.Domain
    position_domains: tuple[cp_model.Domain, ...]  # per requested type: hull of each piece
    sparse_domains: tuple[cp_model.Domain, ...]  # per requested type: [first(k), last(k) - a + 1] per node


class Axes:
    """The ordered axis of every type (``first[k, r]`` = first position of node k), the runs of
    identical nodes, and a cache of `UnitGeometry` per request. Build once per system (`axes_of`)."""

    def __init__(self, system: System) -> None:
        cap = np.asarray(system.capacity, dtype=np.int64)
        self.system = system
        self.n_nodes = int(cap.shape[0])
        self.capacity = cap
        self.first = np.cumsum(cap, axis=0) - cap
        self.total = cap.sum(axis=0)
        if self.n_nodes:
            change = np.nonzero(np.any(cap[1:] != cap[:-1], axis=1))[0] + 1
            starts = np.concatenate(([0], change))
            ends = np.concatenate((change - 1, [self.n_nodes - 1]))
        else:
            starts = ends = np.zeros(0, dtype=np.int64)
        self.blocks = tuple(
            Block(int(s), int(e), tuple(int(x) for x in cap[s]), tuple(int(x) for x in self.first[s]))
            for s, e in zip(starts, ends)
        )
        self._geometry: dict[tuple[int, ...], UnitGeometry | None] = {}

    def node_of(self, t: int, positions: np.ndarray) -> np.ndarray:
        """The node owning each position of type t's axis."""
        return np.searchsorted(self.first[:, t], positions, side="right") - 1

    def geometry(self, req: tuple[int, ...]) -> UnitGeometry | None:
        """The unit geometry of `req`; None when no node can host one unit."""
        if req not in self._geometry:
            self._geometry[req] = self._make_geometry(req)
        return self._geometry[req]

    def _make_geometry(self, req: tuple[int, ...]) -> UnitGeometry | None:
        types = tuple(t for t, a in enumerate(req) if a > 0)
        amounts = tuple(req[t] for t in types)
        if not types:
            return UnitGeometry((), (), (), False, cp_model.Domain(0, max(0, self.n_nodes - 1)), (), ())
        pieces = self._pieces(types, amounts)
        if not pieces:
            return None
        node_var = len(types) > 1 or amounts[0] > 1
        node_domain = cp_model.Domain.from_flat_intervals([x for p in pieces for x in (p.start, p.end)])
        return UnitGeometry(
            types, amounts, tuple(pieces), node_var, node_domain,
            tuple(_position_domain(pieces, n, False) for n in range(len(types))),
            tuple(_position_domain(pieces, n, True) for n in range(len(types))),
        )

    def _pieces(self, types: tuple[int, ...], amounts: tuple[int, ...]) -> list[Piece]:
        """The pieces of the blocks that can host a unit, merged where the slopes agree."""
        pieces: list[Piece] = []
        for b in self.blocks:
            if any(b.cap[t] < a for t, a in zip(types, amounts)):
                continue
            slope = tuple(b.cap[t] for t in types)
            prev = pieces[-1] if pieces else None
            if prev is not None and prev.end + 1 == b.start and prev.slope == slope:
                pieces[-1] = Piece(prev.start, b.end, prev.slope, prev.lo, prev.hi)
                continue
            lo = tuple(b.base[t] - c * b.start for t, c in zip(types, slope))
            hi = tuple(low + c - a for low, c, a in zip(lo, slope, amounts))
            pieces.append(Piece(b.start, b.end, slope, lo, hi))
        return pieces


def _position_domain(pieces: Sequence[Piece], n: int, sparse: bool) -> cp_model.Domain:
    """Union over the hosting nodes of [first(k), last(k) - a + 1] on the n-th requested axis
    (`sparse`, up to `SPARSE_DOMAIN_LIMIT` intervals), else the hull of each piece."""
    exact = sum(p.end - p.start + 1 if p.hi[n] - p.lo[n] + 1 < p.slope[n] else 1 for p in pieces)
    flat: list[int] = []
    for p in pieces:
        lo, hi, c = p.lo[n], p.hi[n], p.slope[n]
        if sparse and exact <= SPARSE_DOMAIN_LIMIT and hi - lo + 1 < c:
            v = np.arange(p.start, p.end + 1, dtype=np.int64) * c
            flat.extend(np.column_stack((v + lo, v + hi)).ravel().tolist())
        else:
            flat += [lo + c * p.start, hi + c * p.end]
    return cp_model.Domain.from_flat_intervals(flat)


def spread(job: CpJob | Job) -> bool:
    """Whether the job's units must go to distinct nodes (and it has several)."""
    return job.one_per_node and job.units > 1


_AXES: dict[int, tuple[System, Axes]] = {}


def axes_of(system: System) -> Axes:
    """The cached `Axes` of `system` (keyed on the object; a few systems at most per process)."""
    hit = _AXES.get(id(system))
    if hit is not None and hit[0] is system:
        return hit[1]
    if len(_AXES) >= 8:
        _AXES.clear()
    axes = Axes(system)
    _AXES[id(system)] = (system, axes)
    return axes
