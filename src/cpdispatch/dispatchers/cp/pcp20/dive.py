"""The first dive of the authors' interleaved search, computed outside the solver (`search=dive`).

The authors' search (reference notes 3.3, their C++ is not public) goes job by job in priority
order: it gives the job's start its smallest value, then assigns the job's positions, each time
"the allocation variable with the minimum domain, its maximum value (best fit)"; with their
``sched_bt`` flag a failure re-opens only start decisions. CP-SAT cannot run that search: its fixed
strategies step position bounds one unit at a time and re-open everything. So the first solution
that search reaches is computed here and handed to CP-SAT as its first solution (a complete hint,
which CP-SAT checks and reports at once); CP-SAT's search continues from it within the paper's limits.

The rules, as implemented here and by the plain depth-first search of the tests:

1. Jobs in priority order (the paper's "that can start first" is not modelled: the order is static).
2. A job's start: the smallest ``t`` in ``[0, horizon]`` at which step 3 succeeds.
3. Its positions, one variable at a time: the one with the fewest values in its domain (ties: list
   order, types in the system's order, then units), its largest value. The domain of the position
   of unit ``u`` on type ``r``: the positions whose block of ``a_r`` lies in one node, overlaps no
   box in the job's time window (running jobs, jobs placed before, this job's assigned units), and
   whose node can still host the unit: the node of ``u``'s assigned types if any; else a node whose
   free blocks can hold, on every requested type, one block more than the units already there
   still miss (what the no-overlap constraint infers within a node), and, for a job spread over
   distinct nodes, none of its units.
4. ``sched_bt``: an empty domain fails the start, never re-opens a position: back to step 2, ``t+1``.

Step 3 takes each block at the top of a free run, so a node's room for more units drops by one per
unit: the dive fails a start only when the nodes cannot hold the job then, and every job fits by
the end of the horizon (all durations): it never backtracks across jobs. Only times where a box
leaves or enters the job's window can change step 3's outcome; the others are skipped. Models with
fluid types (our reductions) have no positions to dive on: no dive.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from ..instance import Plan
from .axes import Axes, spread
from .job_vars import JobShape
from .running import RunningUsage

#: a box on one type's axis: (x0, x1, y0, y1), half-open
Box = tuple[int, int, int, int]


@dataclass
class Dive:
    """The dive's solution: a start per job, a position per unit and requested type."""

    starts: dict[str, int] = field(default_factory=dict)
    positions: dict[str, list[list[int]]] = field(default_factory=dict)  # [unit][requested type number]

    def plan(self, shapes: list[JobShape], axes: Axes) -> Plan:
        out = Plan(starts=dict(self.starts))
        for sh in shapes:
            units = self.positions.get(sh.job.id)
            if units is None:
                out.nodes[sh.job.id] = (0,) * sh.job.units
            else:
                t = sh.geo.types[0]
                out.nodes[sh.job.id] = tuple(int(k) for k in axes.node_of(t, np.array([u[0] for u in units])))
        return out


class Occupancy:
    """The boxes on every type's axis: the running jobs' staircases and the jobs placed so far."""

    def __init__(self, axes: Axes, running: RunningUsage) -> None:
        self.axes = axes
        self.run_rows: dict[int, list[tuple[int, np.ndarray]]] = defaultdict(list)  # node -> (rem, usage)
        for k, rem, usage in zip(running.node.tolist(), running.remaining.tolist(), running.usage):
            self.run_rows[k].append((rem, usage))
        self.running = running
        self.placed: dict[tuple[int, int], list[Box]] = defaultdict(list)  # (node, type) -> boxes
        self.events: set[int] = {0, *running.remaining.tolist()}  # times where some box ends
        self.rows: list[tuple[int, int, int, int, int]] = []  # (node, type, x0, x1, height) of `placed`
        self._arrays = np.zeros((0, 5), dtype=np.int64)

    def place(self, k: int, r: int, box: Box) -> None:
        self.placed[k, r].append(box)
        self.events.add(box[1])
        self.rows.append((k, r, box[0], box[1], box[3] - box[2]))

    def candidate_times(self, d: int, horizon: int) -> list[int]:
        """The times where the set of boxes overlapping a window of length `d` changes."""
        if len(self._arrays) != len(self.rows):
            self._arrays = np.array(self.rows, dtype=np.int64).reshape(-1, 5)
        enters = set((self._arrays[:, 2] - d + 1).tolist())
        return sorted(x for x in self.events | enters if 0 <= x <= horizon)

    def free_upper(self, t: int, d: int) -> np.ndarray:
        """Per (node, type): what is free at both ends of the window [t, t+d), an upper bound of
        what is free all along it; vectorised over nodes."""
        run, p = self.running, self._arrays  # the placed boxes, as of `candidate_times`
        used = []
        for x in (t, t + d - 1):
            at = np.zeros_like(self.axes.capacity)
            alive = run.remaining > x
            np.add.at(at, run.node[alive], run.usage[alive])
            hit = (p[:, 2] <= x) & (x < p[:, 3])
            np.add.at(at, (p[hit, 0], p[hit, 1]), p[hit, 4])
            used.append(at)
        return self.axes.capacity - np.maximum(*used)

    def segments(self, k: int, r: int, t: int, d: int) -> list[list[int]]:
        """The free blocks [lo, hi) of node k on type r over the window [t, t+d), ascending."""
        lo = int(self.axes.first[k, r])
        hi = lo + int(self.axes.capacity[k, r])
        lo += sum(int(u[r]) for rem, u in self.run_rows.get(k, ()) if rem > t)  # the staircase is a prefix
        busy = sorted((y0, y1) for x0, x1, y0, y1 in self.placed.get((k, r), ()) if x0 < t + d and t < x1)
        out = []
        for y0, y1 in busy:
            if y0 > lo:
                out.append([lo, min(y0, hi)])
            lo = max(lo, y1)
        if lo < hi:
            out.append([lo, hi])
        return [s for s in out if s[0] < s[1]]


def first_dive(shapes: list[JobShape], running: RunningUsage, axes: Axes, horizon: int) -> Dive | None:
    """The dive of the module docstring over the jobs of `shapes` (priority order); None when a
    job is fluid (no positions) or fits nowhere up to the horizon."""
    if any(sh.fluid for sh in shapes):
        return None
    occ = Occupancy(axes, running)
    dive = Dive()
    for sh in shapes:
        job, geo = sh.job, sh.geo
        d = max(1, job.duration)
        if not geo.types:
            dive.starts[job.id] = 0
            continue
        for t in occ.candidate_times(d, horizon):
            units = _allocate(sh, occ, t, d)
            if units is not None:
                break
        else:
            return None
        dive.starts[job.id] = t
        for unit in units:
            k = int(axes.node_of(geo.types[0], np.array([unit[0]]))[0])
            for r, a, y in zip(geo.types, geo.amounts, unit):
                occ.place(k, r, (t, t + d, y, y + a))
        dive.positions[job.id] = _canonical(units, axes, geo.types)
    return dive


def _canonical(units: list[list[int]], axes: Axes, types: tuple[int, ...]) -> list[list[int]]:
    """The units sorted by node and, per type, their positions sorted: the same solution (units
    are interchangeable), in the order the model's unit-ordering constraints accept."""
    columns = [sorted(u[n] for u in units) for n in range(len(types))]
    return [list(c) for c in zip(*columns)]


def _allocate(sh: JobShape, occ: Occupancy, t: int, d: int) -> list[list[int]] | None:
    """Step 3 of the module docstring at start `t`: the positions [unit][type number], or None."""
    job, geo = sh.job, sh.geo
    n, types, amounts = job.units, geo.types, geo.amounts
    free = occ.free_upper(t, d)[:, list(types)]
    fits = np.min(free // np.array(amounts), axis=1)
    if (np.minimum(fits, 1) if spread(job) else fits).sum() < n:
        return None  # not even by capacity: no allocation exists
    nodes = [int(k) for k in np.flatnonzero(fits > 0) if any(p.start <= k <= p.end for p in geo.pieces)]
    return _Allocation(occ, nodes, types, amounts, t, d, spread(job)).run(n)


class _Allocation:
    """Step 3 at one start: the free blocks of the candidate nodes, the units each node still
    owes a block of each type (`pending`), and the fresh units' domain sizes (`total`)."""

    def __init__(self, occ: Occupancy, nodes: list[int], types: tuple[int, ...], amounts: tuple[int, ...],
                 t: int, d: int, one_per_node: bool) -> None:
        self.amounts, self.width, self.one_per_node = amounts, len(types), one_per_node
        self.segs = {(k, n): occ.segments(k, r, t, d) for k in nodes for n, r in enumerate(types)}
        self.pending = dict.fromkeys(self.segs, 0)
        self.count = {key: self._count(key) for key in self.segs}
        self.used: set[int] = set()  # nodes holding a unit of the job
        self.nodes = nodes  # ascending: positions ascend with nodes on every axis
        self.host = {k: self._hosts(k) for k in nodes}
        self.total = [sum(self.count[k, n] for k in nodes if self.host[k]) for n in range(self.width)]
        self.top = len(nodes) - 1  # nodes above this index host no fresh unit

    def _count(self, key: tuple[int, int]) -> int:
        """The number of positions of a block on (node, type number)."""
        a = self.amounts[key[1]]
        return sum(max(0, hi - lo - a + 1) for lo, hi in self.segs[key])

    def _hosts(self, k: int) -> bool:
        """Whether node k can take one more unit."""
        if self.one_per_node and k in self.used:
            return False
        return all(sum((hi - lo) // a for lo, hi in self.segs[k, n]) > self.pending[k, n]
                   for n, a in enumerate(self.amounts))

    def run(self, units: int) -> list[list[int]] | None:
        width = self.width
        pos: list[list[int]] = [[-1] * width for _ in range(units)]
        node_of: dict[int, int] = {}  # unit -> node, once it has a position
        fresh = 0  # units below this index have a position
        for _ in range(units * width):
            choices = [(self.count[node_of[u], n], n * units + u, u, n)
                       for u in node_of for n in range(width) if pos[u][n] < 0]
            if fresh < units:
                choices += [(self.total[n], n * units + fresh, fresh, n) for n in range(width)]
            size, _, u, n = min(choices)
            if size == 0:
                return None
            if u == fresh:
                fresh += 1
                while not self.host[self.nodes[self.top]]:
                    self.top -= 1
                node_of[u] = k = self.nodes[self.top]
                self._leave(k)
                self.used.add(k)
                for m in range(width):
                    self.pending[k, m] += m != n
            else:
                k = node_of[u]
                self._leave(k)
                self.pending[k, n] -= 1
            pos[u][n] = self._take(k, n)
            self._join(k)
        return pos

    def _take(self, k: int, n: int) -> int:
        """The largest free position of type number n on node k; its block is then busy."""
        a, segs = self.amounts[n], self.segs[k, n]
        i = max(i for i, (lo, hi) in enumerate(segs) if hi - lo >= a)
        y = segs[i][1] = segs[i][1] - a
        if segs[i][0] == y:
            del segs[i]
        self.count[k, n] = self._count((k, n))
        return y

    def _leave(self, k: int) -> None:
        """Take node k out of the fresh units' domain sizes (before it changes)."""
        if self.host[k]:
            for n in range(self.width):
                self.total[n] -= self.count[k, n]

    def _join(self, k: int) -> None:
        """Put node k back into the fresh units' domain sizes if it still hosts one."""
        self.host[k] = self._hosts(k)
        if self.host[k]:
            for n in range(self.width):
                self.total[n] += self.count[k, n]
