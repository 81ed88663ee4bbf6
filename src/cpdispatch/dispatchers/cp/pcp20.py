"""PCP'20 (Galleguillos, Kiziltan, Soto, 2020), Section 3: scheduling and allocation in one CP model
whose number of variables does not depend on the number of nodes.

How the paper's text maps to CP-SAT (times are relative to the dispatching time, 0 = now):

*Scheduling model (imported from PCP'19, Section 2.2).* Each selected queued job j has a start
``s_j`` in ``[0, eoh]`` (``Instance.horizon``) and a fixed-size interval of its expected duration
``d_j``. A running job is a fixed interval ``[0, remaining)``. Both lengths are taken >= 1 even
when the front end's clamp is off (ablation): a job planned at 0 must really fit now, and a running
job holds its nodes now whatever its prediction (as in `greedy`, so its plan is a valid hint).

*"We consider all the resources of a certain type r in an ordered list by following the sequence
of the nodes."* For every type r, node k owns the block of positions ``[first_r(k), last_r(k)]`` of
an axis of ``C_r = sum_k cap_{k,r}`` positions (`Axes`, computed once per `System` and cached).

*"The allocation of a unit j of a job i on a resource type r is represented as a box"* with origin
``(s(tau_i), y_{i,r,j})`` and size ``(d_i, req_{i,r}/rn_i)``. Here: one position variable ``y`` per
(job, unit, requested type) and the y interval ``NewFixedSizeIntervalVar(y, a)``; the x interval is
the job's interval, shared by all its boxes.

*"diffn([s], [d], [y], [req/rn])" for each r.* One ``AddNoOverlap2D`` per type over every box of
that type: the queued units' boxes and the running jobs' fixed boxes. A running job contributes,
per node and type, the box ``[0, remaining) x [first_r(k) + stacked, ... + usage)``; on each node the
running boxes are stacked from the node's first position, longest remaining time at the bottom, so
that what running jobs hold on a node at any time is a prefix of its block (a staircase that only
shrinks). Boxes with equal remaining time that touch on the axis (units of one job on one node,
equal-remaining jobs on one node, whole nodes of one job in a row) are merged into one box.

*"element(map_r, y_{i,r,j}) = element(map_r, y_{i,r,j} + req/rn)"* (no straddling: a unit's
positions lie in one node) and *"element(map_{r1}, y_{i,r1,j}) = element(map_{r2}, y_{i,r2,j})"*
(same node for all types of one unit). One node variable ``v`` per unit (when the unit requests
several types, or an amount ``a > 1``) and, per requested type, ``first_r(v) <= y <= last_r(v) - a +
1``. No table indexed by node or by position (memory axes reach 10^8 positions): along a run of
consecutive nodes with identical capacities on the requested types ("piece"), ``first_r(v) = base +
cap * v`` is linear, so the link is one linear constraint ``y - cap * v in [lo, lo + cap - a]``.
With several pieces (e.g. thin, fat and hybrid nodes), one Boolean per piece selects it
(``AddExactlyOne``) and enforces ``v`` in the piece and its links. The number of pieces depends on
the node *types* and their order, never on how many nodes a group has. A unit whose only request
is ``a = 1`` of one type needs no ``v`` (it cannot straddle); its node is decoded from ``y``.
The domain of ``y`` is the hull of each piece it may use; ``sparse_domains=True`` gives it the
exact union over hosting nodes of ``[first_r(k), last_r(k) - a + 1]`` (``Domain.FromFlatIntervals``,
which merges touching intervals), capped at `SPARSE_DOMAIN_LIMIT` intervals. It is redundant with
the node link and makes CP-SAT's presolve about 5x slower on HPC2N instances, hence off by default.

*"all different([y_{i,r,j}])"* over the units of a job. Default: the stronger symmetry breaking
``y_{i,r,j} + a <= y_{i,r,j+1}`` for every type (and ``v_j <= v_{j+1}``), posted also as domain
bounds. It is valid because the units of a job are identical and share their time interval, so
within a node their boxes can be permuted per type. Several units may share a node.
``all_different=True`` posts the paper's ``AddAllDifferent`` instead.

*Implied cumulatives "cumulative([s], [d], [req/rn], Tcap_r)" and "cumulative([y], [req/rn], [s],
eoh)".* The first becomes one ``AddCumulative`` per type over job intervals with demand
``units * a`` plus running jobs (grouped by remaining time), with the capacity of the nodes that
some queued job may use for that type (a valid relaxation of the NoOverlap2D). The second is
dropped: NoOverlap2D in CP-SAT already reasons on energy in both dimensions, and its bound ``eoh``
is too weak to prune. Types that no queued job requests are skipped entirely (they cannot
conflict), and so are running boxes on nodes no queued unit can use.

*Exact reductions (not in the paper; each can be turned off).*
``drop_dominated``: a type r that cannot bind is left out — every unit (queued or running) asking
for r also asks for a kept type c with ``a_r / a_c <= cap_r(k) / cap_c(k)`` on every node (HPC2N's
memory for most queues). With the same option, a type r that every queued unit asks for in one
proportion to another type c (HPC2N: 400 MB per core for 95% of the jobs) is folded into c
(`Fold`), even when running jobs hold more of r per c: the queued units fit iff their c-amount
fits in ``min(free_c, floor(free_r / ratio))``, so the running jobs hold that *effective* amount of
c on each node (`running_usage`). ``fluid``: on a type whose queued units all need exactly 1 of it and
nothing else (SWF traces: one core per unit), unit-height boxes pack exactly when the cumulative
holds (interval-graph colouring; the running staircase only shrinks), so the type gets the
cumulative alone, no positions, and nodes are chosen after solving (`fluid_nodes`); the greedy
plan is then computed on the type's total too (`Pcp20Model.greedy_plan`). Identical
queued jobs start in priority order (the hint's order; otherwise CP-SAT's own symmetry breaking
may pick another order and reject the hint).

*Objective and priorities (Section 2.2).* Total slowdown through `objectives.expression`; the
priority is the slowdown at dispatching time; PCP'20's tie-break on shorter duration is the option
``duration_tiebreak`` (off by default: over six seeds of generated Eurora workloads at load factor 2
it lengthened waits; every job is at slowdown 1 on arrival, so the tie-break orders most of them).

*Search.* "Select the job whose priority is highest and that can start first; assign its start
its earliest time; then among its allocation variables select the one with the minimum domain and
assign its maximum value (best fit)." The authors' code interleaves job by job in priority order
(reference notes 3.3: ``InterleavedSearch`` over the queued jobs in priority order). CP-SAT applies
decision strategies in sequence, so `add_search` posts, per job in priority order, its start
(SELECT_MIN_VALUE), then its positions (CHOOSE_MIN_DOMAIN_SIZE, SELECT_MAX_VALUE), then its node
variables and piece literals. Not expressible: the dynamic choice of the job "that can start
first" (the order is static, as the priorities are) and the code's ``sched_bt`` flag (allocation
choices not re-opened on backtracking).

Variables: ``|Q| + sum_j units_j * (|R_j| + [v needed] + [pieces_j if > 1])`` over non-fluid jobs,
where ``R_j`` are the modelled requested types: the paper's ``|Q| + sum_i rn_i * |R|``, plus the
node variable that replaces the element expressions; no term depends on the number of nodes.
CP-SAT's presolve is slow on NoOverlap2D boxes (seconds for ~2,000; 0.6 s for 350 on HPC2N, where
the solve itself takes 50 ms), so `solver_parameters` turns it off for models with boxes (the front
end applies it). The dispatcher's `max_units` (default 128) hands instances with more units with
positions to the greedy plan (`ModelTooLarge`): on HPC2N such models never beat it within a second.
Fixed running boxes once made CP-SAT stall for up to minutes per decision; `add_no_overlap_2d`
removes the cause, so `max_running_boxes` (a guard that does the same as `max_units` for running
boxes) is off by default.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from ortools.sat.python import cp_model

from ...allocators import waste as allocation_waste
from ...errors import CpdispatchError
from ...job import Job
from ...snapshot import PlacementReport, QueuedJob, Snapshot, Start
from ...system import System
from ..base import Option, registered
from . import objectives
from .frontend import CpDispatcher, cp_options
from .instance import BuiltModel, CpJob, Instance, ModelTooLarge, Plan

#: With ``sparse_domains``, above this many intervals a position domain stays one interval per
#: piece (the node link keeps the model exact): keeps the proto small on systems of thousands of nodes.
SPARSE_DOMAIN_LIMIT = 256


# --------------------------------------------------------------------------------------------
# Per-system tables: the ordered axis of each resource type
# --------------------------------------------------------------------------------------------


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
    """Where a unit with a given per-unit request can go (depends on the system and request only)."""

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
        if not pieces:
            return None
        node_var = len(types) > 1 or amounts[0] > 1
        node_domain = cp_model.Domain.from_flat_intervals([x for p in pieces for x in (p.start, p.end)])
        return UnitGeometry(
            types, amounts, tuple(pieces), node_var, node_domain,
            tuple(self._position_domain(pieces, n, False) for n in range(len(types))),
            tuple(self._position_domain(pieces, n, True) for n in range(len(types))),
        )

    @staticmethod
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


# --------------------------------------------------------------------------------------------
# Running jobs: per-node usage stacked from each node's first position
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunningUsage:
    """Running usage per (node, type) as parallel arrays sorted by node, then longest remaining
    first; ``y0`` is where each piece is stacked on the type's axis."""

    node: np.ndarray
    remaining: np.ndarray
    usage: np.ndarray  # (rows, types)
    y0: np.ndarray  # (rows, types)


@dataclass(frozen=True)
class Fold:
    """Type `r` folded into type `c`: every queued unit asking for either asks for ``r = c * num /
    den`` (e.g. 400 MB per core). A set of such units fits in free amounts (F_c, F_r) iff its
    c-amount fits in ``min(F_c, floor(F_r * den / num))``, so r leaves the model and the running
    jobs hold, on each node, that *effective* amount of c."""

    r: int
    c: int
    num: int
    den: int


@dataclass(frozen=True)
class Reductions:
    """The exact reductions of a model (module docstring): types left out (dominated, or folded
    into another type), the folds, and the fluid types."""

    dropped: frozenset[int]
    folds: tuple[Fold, ...]
    fluid: frozenset[int]

    def request(self, req: tuple[int, ...]) -> tuple[int, ...]:
        """A per-unit request on the modelled types."""
        return tuple(0 if t in self.dropped else a for t, a in enumerate(req)) if self.dropped else req

    def placement_free(self, reqs: Sequence[tuple[int, ...]]) -> bool:
        """Whether every unit of these requests is fluid or asks for nothing modelled: then where
        the units go cannot change when anything fits (the cumulative is exact on fluid types)."""
        return all(not any(q) or (sum(1 for a in q if a) == 1 and max(q) == 1 and q.index(1) in self.fluid)
                   for q in map(self.request, reqs))


def reductions_of(
    axes: Axes, queued: Sequence[tuple[int, ...]], running: Sequence[tuple[int, ...]], drop: bool = True,
    fluid: bool = True, spread: Sequence[tuple[int, ...]] = (),
) -> Reductions:
    """The reductions of a model of queued units asking `queued` beside running units asking
    `running` (per-unit requests); `drop` and `fluid` switch them (both: the default). The types
    of `spread` requests (jobs whose units need distinct nodes) are never fluid: the cumulative
    alone would let two of a job's units share a node."""
    dropped = _dominated_types(axes, set(queued) | set(running)) if drop else frozenset()
    folds = _folds(axes, {tuple(0 if t in dropped else a for t, a in enumerate(q)) for q in queued},
                   dropped) if drop else ()
    dropped |= {f.r for f in folds}
    red = Reductions(dropped, folds, frozenset())
    if not fluid:
        return red
    is_fluid: dict[int, bool] = {}
    for req in map(red.request, queued):
        types = [t for t, a in enumerate(req) if a > 0]
        single = len(types) == 1 and req[types[0]] == 1
        for t in types:
            is_fluid[t] = is_fluid.get(t, True) and single
    for req in map(red.request, spread):
        for t, a in enumerate(req):
            if a > 0:
                is_fluid[t] = False
    return Reductions(dropped, folds, frozenset(t for t, ok in is_fluid.items() if ok))


def _dominated_types(axes: Axes, reqs: set[tuple[int, ...]]) -> frozenset[int]:
    """Types r that can never bind: every unit (queued or running) asking for r also asks for
    some kept type c, with a_r / a_c <= cap_r(k) / cap_c(k) on every node k. Then any set of
    units within a node's capacity of c is within its capacity of r, and r is left out."""
    cap = np.array([b.cap for b in axes.blocks], dtype=np.int64).reshape(-1, axes.capacity.shape[1])
    dropped: set[int] = set()
    for r in range(cap.shape[1]):
        users = np.array([q for q in reqs if q[r] > 0], dtype=np.int64).reshape(-1, cap.shape[1])
        if not len(users):
            continue
        for c in range(cap.shape[1]):
            if c == r or c in dropped or (users[:, c] == 0).any():
                continue
            if (users[:, r, None] * cap[None, :, c] <= cap[None, :, r] * users[:, c, None]).all():
                dropped.add(r)
                break
    return frozenset(dropped)


def _folds(axes: Axes, reqs: set[tuple[int, ...]], dropped: frozenset[int]) -> tuple[Fold, ...]:
    """Types r whose queued units (`reqs`, dominated types dropped) all ask for r in one fixed
    proportion to another type c (and for c whenever for r): r is folded into c (`Fold`), whatever
    the running jobs hold. c is the type with the smaller amounts (cores rather than MB), so that
    c can become fluid. Exact: the running jobs' r-usage becomes effective c-usage per node."""
    folds: list[Fold] = []
    gone = set(dropped)
    targets: set[int] = set()  # one fold per target: two would each withhold their own share of c
    n_types = axes.capacity.shape[1]
    for r in range(n_types):
        users = [q for q in reqs if q[r] > 0]
        if r in gone or r in targets or not users:
            continue
        for c in range(n_types):
            if c == r or c in gone or c in targets or any((q[c] > 0) != (q[r] > 0) for q in reqs):
                continue
            num, den = users[0][r], users[0][c]
            if num >= den and all(q[r] * den == q[c] * num for q in users):
                g = math.gcd(num, den)
                folds.append(Fold(r, c, num // g, den // g))
                gone.add(r)
                targets.add(c)
                break
    return tuple(folds)


def running_usage(instance: Instance, axes: Axes, folds: Sequence[Fold] = ()) -> RunningUsage:
    """Per (running job, node): its usage, remaining time (>= 1) and stacked position; with
    `folds`, per node the effective rows of each folded type (`_fold_rows`) instead."""
    n_types = axes.capacity.shape[1]
    live = [r for r in instance.running if r.alloc.nodes]
    z = np.zeros(0, dtype=np.int64)
    pn, rem, usage = z, z, np.zeros((0, n_types), np.int64)
    if live:
        lengths = np.fromiter((len(r.alloc.nodes) for r in live), np.int64, len(live))
        total = int(lengths.sum())
        pn = np.fromiter(itertools.chain.from_iterable(r.alloc.nodes for r in live), np.int64, total)
        counts = np.fromiter(itertools.chain.from_iterable(r.alloc.counts for r in live), np.int64, total)
        pj = np.repeat(np.arange(len(live), dtype=np.int64), lengths)
        rem = np.fromiter((max(1, r.remaining) for r in live), np.int64, len(live))[pj]
        req = np.array([r.req for r in live], dtype=np.int64).reshape(len(live), n_types)
        usage = req[pj] * counts[:, None]
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
        return RunningUsage(z, z, np.zeros((0, n_types), np.int64), np.zeros((0, n_types), np.int64))
    order = np.lexsort((-rem, pn))
    pn, rem, usage = pn[order], rem[order], usage[order]
    # stack per node from its first position: offset = usage of the node's rows before this one
    excl = np.cumsum(usage, axis=0) - usage
    _, first_row = np.unique(pn, return_index=True)
    group = np.cumsum(np.r_[0, (pn[1:] != pn[:-1]).astype(np.int64)])
    y0 = axes.first[pn] + excl - excl[first_row][group]
    return RunningUsage(pn, rem, usage, y0)


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


# --------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------


def add_no_overlap_2d(
    m: cp_model.CpModel, xs: list[cp_model.IntervalVar], ys: list[cp_model.IntervalVar], fixed_boxes: bool,
    axis_length: int,
) -> cp_model.IntVar | None:
    """`AddNoOverlap2D`, plus, when some boxes are fixed (running jobs), a zero-area box whose
    bounding rectangle crosses all of them; returns its position variable (to hint at -1).

    Why: CP-SAT 9.15 re-runs `PresolveFixed2dRectangles` over all fixed boxes whenever the search
    is back at decision level 0 (after every conflict of its hint-following phase, on every new
    bound), unless some box of the constraint has zero area. With a few hundred running boxes that
    took 10-140 s per decision on HPC2N, ignoring every time limit. Each level-0 pass also drops
    the boxes whose bounding rectangle overlaps no other, so a fixed zero-area box off the axis
    (this function's first version) protected the first pass only: the re-presolve still took two
    thirds of the solve time of HPC2N's slowest decisions. Hence a box of width 0 at time 1 and
    height 1 at position -1 or ``axis_length``: either way off the axis, so it constrains nothing
    (a zero-width box *inside* another one's time span does conflict with it in CP-SAT), while its
    bounding rectangle spans the axis and meets every running box that lasts >= 2.
    `hint_conflict_limit` = 0 (`Pcp20Model.solver_parameters`) also avoids the hint-following
    phase's return to level 0 after each conflict."""
    if not fixed_boxes:
        m.add_no_overlap_2d(xs, ys)
        return None
    y = m.new_int_var_from_domain(cp_model.Domain.from_values([-1, axis_length]), "zero_area_y")
    m.add_no_overlap_2d([*xs, m.new_fixed_size_interval_var(1, 0, "zero_area_x")],
                        [*ys, m.new_fixed_size_interval_var(y, 1, "zero_area_y")])
    return y


class _Values(Protocol):
    def value(self, expression: Any) -> int: ...


@dataclass
class _JobVars:
    job: CpJob
    geo: UnitGeometry
    start: cp_model.IntVar
    interval: cp_model.IntervalVar
    positions: list[list[cp_model.IntVar]]  # [unit][requested type] (empty for a fluid job)
    nodes: list[cp_model.IntVar]  # [unit] (empty when the node is decoded from the position)
    pieces: list[list[cp_model.IntVar]]  # [unit][piece] (empty with a single piece)
    fluid: bool = False  # units of 1 on a fluid type: no positions, nodes found after solving


class Pcp20Model(BuiltModel):
    """The PCP'20 model of `instance` (see the module docstring for the constraint mapping)."""

    def __init__(
        self,
        instance: Instance,
        objective_kind: str = "slowdown",
        *,
        all_different: bool = False,
        implied_cumulative: bool = True,
        fluid: bool = True,
        drop_dominated: bool = True,
        sparse_domains: bool = False,
        max_units: int = 0,
        max_running_boxes: int = 0,
    ) -> None:
        super().__init__(instance, objective_kind)
        self.axes = axes_of(instance.system)
        self.all_different = all_different
        self.sparse_domains = sparse_domains
        self.jobs: list[_JobVars] = []
        self.running_boxes = 0
        self.walls: list[cp_model.IntVar] = []  # see `add_no_overlap_2d`
        self.running_intervals = 0  # fixed [0, remaining) intervals: one constraint each in the proto
        self.hint_complete = False
        red = reductions_of(self.axes, [j.req for j in instance.jobs],
                            [r.req for r in instance.running if r.alloc.nodes], drop_dominated, fluid,
                            [j.req for j in instance.jobs if spread(j)])
        self.reductions = red
        self.dropped_types, self.folds, self.fluid_types = red.dropped, red.folds, red.fluid
        if max_units > 0:
            self._check_size(max_units)
        self.running = running_usage(instance, self.axes, self.folds)
        self._build_jobs()
        self._break_job_symmetry()
        self._build_resources(implied_cumulative)
        if 0 < max_running_boxes < self.running_boxes:
            raise ModelTooLarge(f"{self.running_boxes} running boxes (max_running_boxes={max_running_boxes})")
        before = len(self.model.proto.variables)
        self.model.minimize(objectives.expression(objective_kind, self.model, instance, self.start_vars))
        self._objective_aux = range(before, len(self.model.proto.variables))

    # -- queued jobs: starts, positions, node links, unit order ---------------------------------

    def _request(self, job: CpJob) -> tuple[int, ...]:
        """The job's per-unit request on the modelled types (dominated types dropped)."""
        return self.reductions.request(job.req)

    def _check_size(self, max_units: int) -> None:
        """Raise `ModelTooLarge` if more than `max_units` units would get positions."""
        units = 0
        for job in self.instance.jobs:
            req = self._request(job)
            types = [t for t, a in enumerate(req) if a > 0]
            if types and not (len(types) == 1 and types[0] in self.fluid_types):
                units += job.units
        if units > max_units:
            raise ModelTooLarge(f"{units} units with positions (max_units={max_units})")

    def _build_jobs(self) -> None:
        m, h = self.model, self.instance.horizon
        for job in self.instance.jobs:
            geo = self.axes.geometry(self._request(job))
            if geo is None:
                raise ValueError(f"job {job.id}: no node of {self.instance.system.name} can host one unit {job.req}")
            s = m.new_int_var(0, h, f"s_{job.id}")
            x = m.new_fixed_size_interval_var(s, max(1, job.duration), f"x_{job.id}")
            self.start_vars[job.id] = s
            jv = _JobVars(job, geo, s, x, [], [], [], fluid=bool(geo.types) and geo.types[0] in self.fluid_types)
            self.jobs.append(jv)
            if jv.fluid:
                continue
            ordered = not self.all_different and job.units > 1
            domains = geo.sparse_domains if self.sparse_domains else geo.position_domains
            node_var = geo.node_var or spread(job)  # distinct nodes are said on node variables
            for i in range(job.units):
                ys = []
                for t, a, dom in zip(geo.types, geo.amounts, domains):
                    if ordered:  # y_0 + i*a <= y_i <= y_last - (units-1-i)*a, posted up front
                        dom = dom.intersection_with(
                            cp_model.Domain(dom.min() + i * a, dom.max() - (job.units - 1 - i) * a)
                        )
                    ys.append(m.new_int_var_from_domain(dom, f"y_{job.id}_{i}_{t}"))
                jv.positions.append(ys)
                if node_var:
                    v = m.new_int_var_from_domain(geo.node_domain, f"v_{job.id}_{i}")
                    jv.nodes.append(v)
                    jv.pieces.append(self._link(geo, v, ys, f"{job.id}_{i}"))
            self._order_units(jv)

    def _break_job_symmetry(self) -> None:
        """Identical queued jobs (same units, request, duration, weight and, unless the objective is
        the slowdown, same wait and EWT) are interchangeable: start them in priority order. Done here
        so that CP-SAT's own symmetry breaking does not pick another order than the hint's (the
        greedy plan, which always starts identical jobs in priority order)."""
        last: dict[tuple[object, ...], cp_model.IntVar] = {}
        for jv in self.jobs:
            j = jv.job
            key: tuple[object, ...] = (j.units, j.req, max(1, j.duration), j.one_per_node, j.weight)
            if self.objective_kind != "slowdown":
                key += (j.wait, j.ewt)
            if key in last:
                self.model.add(last[key] <= jv.start)
            last[key] = jv.start

    def _link(
        self, geo: UnitGeometry, v: cp_model.IntVar, ys: list[cp_model.IntVar], name: str
    ) -> list[cp_model.IntVar]:
        """first_r(v) <= y_r <= last_r(v) - a_r + 1 for every requested type (same node, no straddling)."""
        m = self.model
        if len(geo.pieces) == 1:
            p = geo.pieces[0]
            for n, y in enumerate(ys):
                m.add_linear_constraint(y - p.slope[n] * v, p.lo[n], p.hi[n])
            return []
        lits = [m.new_bool_var(f"p_{name}_{k}") for k in range(len(geo.pieces))]
        m.add_exactly_one(lits)
        for p, lit in zip(geo.pieces, lits):
            m.add_linear_constraint(v, p.start, p.end).only_enforce_if(lit)
            for n, y in enumerate(ys):
                m.add_linear_constraint(y - p.slope[n] * v, p.lo[n], p.hi[n]).only_enforce_if(lit)
        return lits

    def _order_units(self, jv: _JobVars) -> None:
        m = self.model
        if jv.job.units < 2:
            return
        for n, a in enumerate(jv.geo.amounts):
            column = [ys[n] for ys in jv.positions]
            if self.all_different:
                m.add_all_different(column)
            else:
                for y1, y2 in itertools.pairwise(column):
                    m.add(y1 + a <= y2)
        if spread(jv.job):  # one unit per node (Slurm's -N): v_j < v_{j+1}, or all different
            if self.all_different:
                m.add_all_different(jv.nodes)
            else:
                for v1, v2 in itertools.pairwise(jv.nodes):
                    m.add(v1 + 1 <= v2)
        elif not self.all_different:
            for v1, v2 in itertools.pairwise(jv.nodes):
                m.add(v1 <= v2)

    # -- per type: NoOverlap2D over all boxes, implied cumulative --------------------------------

    def _build_resources(self, implied_cumulative: bool) -> None:
        m, axes, run = self.model, self.axes, self.running
        by_type: dict[int, list[_JobVars]] = defaultdict(list)
        for jv in self.jobs:
            for t in jv.geo.types:
                by_type[t].append(jv)
        run_x: dict[int, cp_model.IntervalVar] = {}

        def run_interval(rem: int) -> cp_model.IntervalVar:
            if rem not in run_x:
                run_x[rem] = m.new_fixed_size_interval_var(0, rem, f"run_{rem}")
            return run_x[rem]

        for t in sorted(by_type):
            jobs = by_type[t]
            fluid = t in self.fluid_types
            xs: list[cp_model.IntervalVar] = []
            ys: list[cp_model.IntervalVar] = []
            usable = np.zeros(axes.n_nodes + 1, dtype=np.int64)  # nodes some queued unit may use
            for jv in jobs:
                n = jv.geo.types.index(t)
                a = jv.geo.amounts[n]
                for p in jv.geo.pieces:
                    usable[p.start] += 1
                    usable[p.end + 1] -= 1
                for i, unit in enumerate(jv.positions):
                    xs.append(jv.interval)
                    ys.append(m.new_fixed_size_interval_var(unit[n], a, f"b_{jv.job.id}_{i}_{t}"))
            usable_nodes = np.cumsum(usable[:-1]) > 0
            # running boxes on usable nodes, merged where they touch with equal remaining time
            sel = (run.usage[:, t] > 0) & usable_nodes[run.node]
            y0, hgt, rem = run.y0[sel, t], run.usage[sel, t], run.remaining[sel]
            if not fluid:  # a fluid type has no boxes: the cumulative below is exact on it
                if len(y0):
                    brk = np.r_[True, (rem[1:] != rem[:-1]) | (y0[1:] != y0[:-1] + hgt[:-1])]
                    heads = np.nonzero(brk)[0]
                    y0, hgt, rem = y0[heads], np.add.reduceat(hgt, heads), rem[heads]
                for r0, rh, rr in zip(y0.tolist(), hgt.tolist(), rem.tolist()):
                    xs.append(run_interval(rr))
                    ys.append(m.new_fixed_size_interval_var(r0, rh, ""))
                self.running_boxes += len(y0)
                wall = add_no_overlap_2d(m, xs, ys, len(y0) > 0, int(axes.capacity[:, t].sum()))
                if wall is not None:
                    self.walls.append(wall)
            if implied_cumulative or fluid:
                intervals = [jv.interval for jv in jobs]
                demands = [jv.job.units * jv.geo.amounts[jv.geo.types.index(t)] for jv in jobs]
                if len(rem):
                    rems, inverse = np.unique(rem, return_inverse=True)
                    for rr, dem in zip(rems.tolist(), np.bincount(inverse, weights=hgt).tolist()):
                        intervals.append(run_interval(rr))
                        demands.append(int(dem))
                capacity = int(axes.capacity[usable_nodes, t].sum())
                m.add_cumulative(intervals, demands, capacity)
        self.running_intervals = len(run_x)

    # -- hooks used by the front end -------------------------------------------------------------

    def add_search(self) -> None:
        m = self.model
        for jv in self.jobs:  # priority order: one strategy per job and stage interleaves them
            m.add_decision_strategy([jv.start], cp_model.CHOOSE_FIRST, cp_model.SELECT_MIN_VALUE)
            positions = [y for unit in jv.positions for y in unit]
            if positions:
                m.add_decision_strategy(positions, cp_model.CHOOSE_MIN_DOMAIN_SIZE, cp_model.SELECT_MAX_VALUE)
            rest = [*jv.nodes, *(b for u in jv.pieces for b in u)]
            if rest:
                m.add_decision_strategy(rest, cp_model.CHOOSE_FIRST, cp_model.SELECT_MAX_VALUE)

    def add_hint(self, plan: Plan) -> None:
        """Hint every variable from a complete plan (start and node of every unit of every job).

        Positions are computed independently per (node, type) by a sweep in start order (`_pack`):
        each unit takes a block of its node free of the running staircase at its start and of the
        units already placed that overlap it in time. With amounts of 1 the plain sweep always
        succeeds when the plan respects node capacities; with larger amounts a node can become
        fragmented, and the sweep backtracks within a budget. If it still fails, the positions of
        that job and type stay unhinted (`hint_complete` is False). Positions of a job's units are
        sorted to satisfy the unit order.
        """
        m, run = self.model, self.running
        items: dict[tuple[int, int], list[tuple[int, int, int, tuple[int, int, int]]]] = defaultdict(list)
        for order, jv in enumerate(self.jobs):
            job = jv.job
            s = int(plan.starts[job.id])
            m.add_hint(jv.start, s)
            if jv.fluid:  # no allocation variables
                continue
            end = s + max(1, job.duration)
            for i, k in enumerate(sorted(int(k) for k in plan.nodes[job.id])):
                if jv.nodes:
                    m.add_hint(jv.nodes[i], k)
                for p, lit in zip(jv.geo.pieces, jv.pieces[i] if jv.pieces else ()):
                    m.add_hint(lit, int(p.start <= k <= p.end))
                for n, (t, a) in enumerate(zip(jv.geo.types, jv.geo.amounts)):
                    items[k, t].append((s, end, a, (order, i, n)))
        found: dict[tuple[int, int, int], int] = {}
        complete = True
        for (k, t), todo in items.items():
            lo_row, hi_row = (int(x) for x in np.searchsorted(run.node, [k, k + 1]))
            stair = list(zip(run.remaining[lo_row:hi_row].tolist(), run.usage[lo_row:hi_row, t].tolist()))
            base = int(self.axes.first[k, t])
            top = base + int(self.axes.capacity[k, t])
            placed = _pack(todo, base, top, stair)
            if placed is None:
                complete = False
            else:
                found.update(placed)
        for order, jv in enumerate(self.jobs):
            for n in range(len(jv.geo.types) if jv.positions else 0):
                keys = [(order, i, n) for i in range(jv.job.units)]
                if all(key in found for key in keys):
                    for unit, pos in zip(jv.positions, sorted(found[key] for key in keys)):
                        m.add_hint(unit[n], pos)
        for wall in self.walls:
            m.add_hint(wall, -1)
        self.hint_complete = complete
        self._hint_objective_aux(plan)

    def _hint_objective_aux(self, plan: Plan) -> None:
        """Hint the auxiliary variables `objectives.expression` created (their values follow from
        the starts)."""
        proto = self.model.proto
        jobs = {j.id: j for j in self.instance.jobs}
        ends = [plan.starts[j.id] + j.duration for j in jobs.values()] + [
            r.remaining for r in self.instance.running
        ]
        for index in self._objective_aux:
            name = proto.variables[index].name
            var = self.model.get_int_var_from_proto_index(index)
            kind, _, jid = name.partition("_")
            if name == "makespan":
                self.model.add_hint(var, max(ends, default=0))
            elif kind == "tard" and jid in jobs:
                j = jobs[jid]
                self.model.add_hint(var, max(0, plan.starts[jid] + j.wait - j.ewt))
            elif kind == "late" and jid in jobs:
                j = jobs[jid]
                self.model.add_hint(var, int(plan.starts[jid] + j.wait > j.ewt))

    def extract(self, solver: object) -> Plan:
        """The plan of the solver's (or solution callback's) current solution."""
        sol: _Values = solver  # type: ignore[assignment]
        plan = Plan()
        for jv in self.jobs:
            job = jv.job
            plan.starts[job.id] = int(sol.value(jv.start))
            if jv.fluid:
                continue
            if jv.nodes:
                plan.nodes[job.id] = tuple(int(sol.value(v)) for v in jv.nodes)
            elif jv.geo.types:
                ys = np.array([int(sol.value(unit[0])) for unit in jv.positions], dtype=np.int64)
                plan.nodes[job.id] = tuple(int(k) for k in self.axes.node_of(jv.geo.types[0], ys))
            else:
                plan.nodes[job.id] = (0,) * job.units
        return plan

    def complete(self, plan: Plan) -> Plan:
        plan.nodes.update(self.fluid_nodes(plan.starts))
        return plan

    def greedy_plan(self) -> Plan:
        """When every job is fluid on one type (HPC2N, KTH, CEA-Curie), the priority-list plan on
        that type's total free amount: each job at the first time its units fit in the total over
        its whole interval, nodes by `fluid_nodes` (which always succeeds on such starts). No job
        starts later than in the per-node plan of `greedy`, and a 1-D profile replaces the
        nodes x segments one (on congested HPC2N instances that plan cost a third of the
        decision). Only where the nodes differ in nothing but that type (HPC2N; CEA-Curie, whose
        only type is cores): elsewhere where a job goes matters to others (a CPU job on a GPU
        node), and planning on the total let GPU jobs starve (generated Eurora workloads, heavy
        GPU demand, load 3: one seed's mean wait went from 168 to 6,586 s). Otherwise the shared
        greedy plan, which places every job by the demand-aware best fit over time."""
        if not self.jobs or len(self.fluid_types) != 1 or not all(jv.fluid for jv in self.jobs):
            return super().greedy_plan()
        (t,) = self.fluid_types
        others = np.delete(self.axes.capacity, t, axis=1)
        if (others != others[:1]).any():
            return super().greedy_plan()
        run, cap = self.running, self.axes.capacity[:, t]
        sel = (run.usage[:, t] > 0) & (cap[run.node] > 0)
        rem, use = run.remaining[sel], run.usage[sel, t]
        times, inverse = np.unique(np.r_[0, rem], return_inverse=True)
        released = np.bincount(inverse[1:], weights=use, minlength=len(times)).astype(np.int64)
        free = int(cap.sum()) - int(use.sum()) + np.cumsum(released)  # on [times[i], times[i + 1])
        plan = Plan()
        for jv in self.jobs:
            need, d = jv.job.units, max(1, jv.job.duration)
            ends = np.searchsorted(times, times + d, side="left")
            short = np.r_[0, np.cumsum(free < need)]
            ok = np.flatnonzero(short[ends] == short[:-1])
            if not len(ok):
                raise ValueError(f"job {jv.job.id} fits at no time, not even once everything has ended")
            i = int(ok[0])
            end = int(times[i]) + d
            j = int(np.searchsorted(times, end))
            if j == len(times) or times[j] != end:
                times, free = np.insert(times, j, end), np.insert(free, j, free[j - 1])
            free[i:j] -= need
            plan.starts[jv.job.id] = int(times[i])
        plan.nodes.update(self.fluid_nodes(plan.starts))
        return plan

    def fluid_nodes(self, starts: dict[str, int]) -> dict[str, tuple[int, ...]]:
        """Nodes of the fluid jobs' units for the given starts: per fluid type, jobs in start order
        (then priority order) take, by best fit, nodes with a free unit at their start, counting the
        running jobs still alive and the jobs placed before them still running. Such a node stays
        free for the whole job (running usage only decreases; later jobs are placed later), and
        some nodes always suffice when the starts satisfy the type's cumulative."""
        out: dict[str, tuple[int, ...]] = {}
        run, n = self.running, self.axes.n_nodes
        inst = self.instance
        for t in sorted(self.fluid_types):
            waste = None  # demand-aware: the other types' free amounts now (what a start now would waste)
            if inst.weights is not None and (np.delete(inst.weights, t) > 0).any():
                w = inst.weights.copy()
                w[t] = 0
                waste = allocation_waste(inst.free, inst.capacity, w)
            jobs = sorted((starts[jv.job.id], order, jv.job) for order, jv in enumerate(self.jobs)
                          if jv.fluid and jv.geo.types[0] == t)
            cap = self.axes.capacity[:, t]
            used = np.zeros(n, dtype=np.int64)  # by the jobs placed so far that are still running
            ending: list[tuple[int, int, np.ndarray, np.ndarray]] = []  # heap of (end, i, nodes, counts)
            base = cap
            base_time = -1
            for i, (s, _, job) in enumerate(jobs):
                if s != base_time:  # starts only grow: what ended before s stays ended
                    alive = run.remaining > s
                    base = cap - np.bincount(run.node[alive], weights=run.usage[alive, t], minlength=n).astype(np.int64)
                    base_time = s
                    while ending and ending[0][0] <= s:
                        _, _, nodes, counts = heapq.heappop(ending)
                        np.subtract.at(used, nodes, counts)
                nodes, counts = _best_fit_units(base - used, cap, job.units, waste)
                np.add.at(used, nodes, counts)
                heapq.heappush(ending, (s + max(1, job.duration), i, nodes, counts))
                out[job.id] = tuple(np.repeat(nodes, counts).tolist())
        return out

    @property
    def solver_parameters(self) -> dict[str, object]:
        """CP-SAT parameters this model solves best with (for the front end to apply), when there
        are boxes: presolve off (it takes seconds on a few thousand; the search proves more in
        50 ms without it on HPC2N instances), no hint-following phase (`hint_conflict_limit` 0;
        see `add_no_overlap_2d`), and no `Precedences2DPropagator` (it rescans every pair of
        boxes linked by a linear relation at each propagation, outside the deterministic time:
        three quarters of the CPU of the slowest HPC2N decisions, which it never changed). The
        hint still guides the search and bounds the objective. Without boxes (fluid types only),
        no linear relaxation: on congested HPC2N decisions it cost a quarter of the solve time
        (p99 decision 149 -> 128 ms, replayed side by side) and changed 144 of 1,233 objectives,
        65 for the worse and 79 for the better."""
        if not any(jv.positions for jv in self.jobs):
            return {"linearization_level": 0}
        return {"cp_model_presolve": False, "hint_conflict_limit": 0,
                "use_linear3_for_no_overlap_2d_precedences": False}

    def size(self) -> dict[str, int]:
        """Model size figures for logs and benchmarks."""
        return {
            "variables": self.variables,
            "constraints": self.constraints,
            "boxes": sum(len(u) for jv in self.jobs for u in jv.positions),
            "running_boxes": self.running_boxes,
            "running_intervals": self.running_intervals,
        }


def _best_fit_units(
    free: np.ndarray, cap: np.ndarray, units: int, waste: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and unit counts for `units` units of 1 on one type: least `waste` first when given,
    then fullest node first (free/capacity, ties to the lower index, as `allocators.best_fit`),
    packing each node. If the free amounts do not suffice (starts that break the cumulative; not
    from the model), the rest goes round-robin on the nodes with capacity, for a complete but
    invalid plan that the front end then rejects."""
    cand = np.flatnonzero(free > 0)
    if waste is None:
        order = cand[np.argsort(free[cand] / cap[cand], kind="stable")]
    else:
        order = cand[np.lexsort((free[cand] / cap[cand], waste[cand]))]
    avail = free[order]
    before = np.cumsum(avail) - avail
    take = np.minimum(avail, np.maximum(0, units - before))
    keep = take > 0
    nodes, counts = order[keep], take[keep]
    short = units - int(counts.sum())
    if short > 0:
        extra = np.resize(np.flatnonzero(cap > 0), short)
        nodes, counts = np.concatenate((nodes, extra)), np.concatenate((counts, np.ones(short, dtype=np.int64)))
    return nodes, counts


#: Most placements tried per (node, type) when the sweep for a hint has to backtrack.
PACK_BUDGET = 2000


def _pack(
    todo: Sequence[tuple[int, int, int, tuple[int, int, int]]],
    base: int,
    top: int,
    stair: Sequence[tuple[int, int]],
    budget: int = PACK_BUDGET,
) -> dict[tuple[int, int, int], int] | None:
    """Positions in [base, top) for boxes (start, end, height, key), one node and type: each box
    avoids the running staircase at its start (``stair``: (remaining, usage), longest first,
    stacked from ``base``) and the boxes placed before it that overlap it in time.

    Boxes are taken by start, longest first; each tries the highest free block first (the paper's
    best fit), then blocks touching a placed box or the staircase. The first path is the plain
    sweep; on a dead end (fragmentation, only possible with heights > 1) it backtracks, at most
    `budget` placements. None if nothing was found.
    """
    items = sorted(todo, key=lambda e: (e[0], -e[1], -e[2], e[3]))
    placed: list[tuple[int, int, int, int]] = []
    out: dict[tuple[int, int, int], int] = {}
    tries = 0

    def place(n: int) -> bool:
        nonlocal tries
        if n == len(items):
            return True
        s, e, a, key = items[n]
        low = base + sum(u for rem, u in stair if rem > s)
        busy = [(y0, y1) for (s0, e0, y0, y1) in placed if s0 < e and s < e0]
        seen: set[int] = set()
        candidates = [top - a, *sorted((y0 - a for y0, _ in busy), reverse=True), low, *sorted(y1 for _, y1 in busy)]
        for pos in candidates:
            if pos in seen or pos < low or pos + a > top or any(y0 < pos + a and pos < y1 for y0, y1 in busy):
                continue
            seen.add(pos)
            tries += 1
            if tries > budget:
                return False
            placed.append((s, e, pos, pos + a))
            out[key] = pos
            if place(n + 1):
                return True
            placed.pop()
        return False

    return out if place(0) else None


# --------------------------------------------------------------------------------------------
# The dispatcher
# --------------------------------------------------------------------------------------------


@registered()
class Pcp20Dispatcher(CpDispatcher):
    """PCP'20: fit-now selection of up to `q_length` jobs, slowdown priority (the paper's tie-break
    on shorter duration is the option `duration_tiebreak`), total slowdown objective, the model
    above; `time_policy=paper` is the PCP'20 wrapper's (1 s, then 0.5-s extensions while no
    solution, halving the queue length on failure)."""

    name = "pcp20"
    summary = ("PCP'20: joint scheduling and allocation, one NoOverlap2D per resource type (size independent "
               "of nodes); with the default reductions a type whose units all need 1 of it (every "
               "single-type SWF trace) gets a cumulative instead, nodes chosen after solving")
    objective_kind = "slowdown"
    paper_policy = "pcp20"
    options = cp_options(clamp=True, priority="slowdown", reallocate=True) + (
        Option("duration_tiebreak", False, "PCP'20's tie-break on shorter predicted duration before area (off: it "
                                          "lengthened waits at load factor 2 on generated Eurora workloads)"),
        Option("all_different", False, "the paper's all-different on unit positions instead of ordered units"),
        Option("implied_cumulative", True, "post the implied cumulative per resource type"),
        Option("sparse_domains", False, "exact no-straddling domains on positions (redundant; slower presolve)"),
        Option("reductions", True, "exact reductions: drop types that cannot bind; a cumulative instead of a "
                                   "NoOverlap2D on 1-unit types (false: the paper's model)"),
        Option("max_units", 128, "most units with positions in a model, else the greedy plan (0: no limit)"),
        Option("max_running_boxes", 0, "most fixed running boxes in a model, else the greedy plan (0: no limit)"),
        Option("stage2", 4, "second stage: re-place the jobs starting now, in a model with this many of the "
                            "queued jobs that do not start, when that lets one start earlier (0: off)"),
        Option("stage2_budget", 0.005, "second stage: CP-SAT deterministic-time budget per solve (two at most)"),
    )

    all_different: bool
    implied_cumulative: bool
    sparse_domains: bool
    reductions: bool
    max_units: int
    max_running_boxes: int
    stage2: int
    stage2_budget: float

    def __init__(self, **values: Any) -> None:
        super().__init__(**values)
        from .placement import SecondStage  # the stage builds this module's model

        if self.stage2 < 0 or self.stage2_budget <= 0:
            raise CpdispatchError(f"dispatcher {self.name}: stage2 must be >= 0 and stage2_budget > 0")
        self._stage2 = SecondStage(self, self.stage2, self.stage2_budget, self.fast_conflicts, self.reductions)

    def refine(
        self, snapshot: Snapshot, ordered: list[QueuedJob], starts: tuple[Start, ...]
    ) -> tuple[tuple[Start, ...], PlacementReport | None]:
        if not self.stage2:
            return starts, None
        return self._stage2(snapshot, ordered, starts)

    def placement_room(self, snapshot: Snapshot, starts: tuple[Start, ...]) -> PlacementReport:
        """Whether the second stage would move `starts` (decided by any dispatcher) so that one of
        the queued jobs starts earlier; nothing is enacted (the simulator's room probe)."""
        self._alloc.observe(snapshot)
        return self._stage2(snapshot, self.order(snapshot), starts)[1]

    def build(self, instance: Instance) -> BuiltModel:
        return Pcp20Model(
            instance, self.objective_kind,
            all_different=self.all_different, implied_cumulative=self.implied_cumulative,
            sparse_domains=self.sparse_domains, fluid=self.reductions, drop_dominated=self.reductions,
            max_units=self.max_units, max_running_boxes=self.max_running_boxes,
        )


__all__ = ["Axes", "Fold", "ModelTooLarge", "Pcp20Dispatcher", "Pcp20Model", "axes_of", "running_usage"]
