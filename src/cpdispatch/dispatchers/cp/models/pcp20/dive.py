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

from ...instance import Plan
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
        out = Plan(starts=dict(self.starts), positions=self.positions)
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
        self.touched = np.zeros(axes.capacity.shape, dtype=bool)  # (node, type) holds a placed box
        self._arrays = np.zeros((0, 5), dtype=np.int64)

    def place(self, k: int, r: int, box: Box) -> None:
        self.placed[k, r].append(box)
        self.events.add(box[1])
        self.rows.append((k, r, box[0], box[1], box[3] - box[2]))
        self.touched[k, r] = True

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

    def free_runs(self, k: int, r: int, t: int, d: int, free: int) -> list[list[int]]:
        """`segments`, given what is free at the window's ends (`free_upper`): on a node and type no
        placed box touches, the running staircase alone leaves one run at the top of the node."""
        if not self.touched[k, r]:
            top = int(self.axes.first[k, r] + self.axes.capacity[k, r])
            return [[top - free, top]] if free > 0 else []
        return self.segments(k, r, t, d)

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
    n, types, amounts = job.units, geo.types, np.array(geo.amounts)
    free = occ.free_upper(t, d)[:, list(types)]
    fits = np.min(free // amounts, axis=1)
    if (np.minimum(fits, 1) if spread(job) else fits).sum() < n:
        return None  # not even by capacity: no allocation exists
    hosting = np.zeros(len(fits), dtype=bool)
    for p in geo.pieces:
        hosting[p.start:p.end + 1] = True
    nodes = np.flatnonzero((fits > 0) & hosting)
    return _Allocation(occ, nodes, types, amounts, free[nodes], t, d, spread(job)).run(n)


class _Allocation:
    """Step 3 at one start over the candidate nodes (index j into `nodes`): per (node, type number)
    the positions (`count`) and blocks (`slots`) of the free runs, the blocks its units still owe
    (`pending`), and the fresh units' domain sizes (`total`). A node no placed box touches has one
    free run, its free amount at the top of the node: its runs are listed (`segs`) only once a unit
    goes there, which keeps a dive over thousands of idle nodes vectorised."""

    def __init__(self, occ: Occupancy, nodes: np.ndarray, types: tuple[int, ...], amounts: np.ndarray,
                 free: np.ndarray, t: int, d: int, one_per_node: bool) -> None:
        self.occ, self.nodes, self.types, self.t, self.d = occ, nodes, types, t, d
        self.amounts, self.width, self.one_per_node = amounts, len(types), one_per_node
        self.free = free
        self.count = np.maximum(free - amounts + 1, 0)
        self.slots = free // amounts
        self.segs: dict[tuple[int, int], list[list[int]]] = {}  # (j, type number) -> free runs, ascending
        for j in np.flatnonzero(occ.touched[nodes][:, list(types)].any(axis=1)).tolist():
            self._list_runs(j)
        self.pending = np.zeros_like(self.count)
        self.used = np.zeros(len(nodes), dtype=bool)  # holds a unit of the job
        self.host = (self.slots > self.pending).all(axis=1)
        self.total = [int(x) for x in (self.count * self.host[:, None]).sum(axis=0)]
        self.top = len(nodes) - 1  # nodes above this index host no fresh unit

    def _list_runs(self, j: int) -> None:
        if (j, 0) in self.segs:
            return
        k = int(self.nodes[j])
        for n, r in enumerate(self.types):
            self.segs[j, n] = self.occ.free_runs(k, r, self.t, self.d, int(self.free[j, n]))
            self._recount(j, n)

    def _recount(self, j: int, n: int) -> None:
        a = int(self.amounts[n])
        self.count[j, n] = sum(max(0, hi - lo - a + 1) for lo, hi in self.segs[j, n])
        self.slots[j, n] = sum((hi - lo) // a for lo, hi in self.segs[j, n])

    def _hosts(self, j: int) -> bool:
        """Whether node j can take one more unit."""
        return not (self.one_per_node and self.used[j]) and bool((self.slots[j] > self.pending[j]).all())

    def run(self, units: int) -> list[list[int]] | None:
        width = self.width
        pos: list[list[int]] = [[-1] * width for _ in range(units)]
        partial: dict[int, int] = {}  # unit with some positions but not all -> its node index j
        fresh = 0  # units below this index have a position
        for _ in range(units * width):
            choices = [(int(self.count[j, n]), n * units + u, u, n)
                       for u, j in partial.items() for n in range(width) if pos[u][n] < 0]
            if fresh < units:
                choices += [(self.total[n], n * units + fresh, fresh, n) for n in range(width)]
            size, _, u, n = min(choices)
            if size == 0:
                return None
            if u == fresh:
                fresh += 1
                while not self.host[self.top]:
                    self.top -= 1
                partial[u] = j = self.top
                self._leave(j)
                self.used[j] = True
                self.pending[j] += 1
                self.pending[j, n] -= 1
            else:
                j = partial[u]
                self._leave(j)
                self.pending[j, n] -= 1
            pos[u][n] = self._take(j, n)
            self._join(j)
            if min(pos[u]) >= 0:
                del partial[u]
        return pos

    def _take(self, j: int, n: int) -> int:
        """The largest free position of type number n on node j; its block is then busy."""
        self._list_runs(j)
        a, segs = int(self.amounts[n]), self.segs[j, n]
        i = max(i for i, (lo, hi) in enumerate(segs) if hi - lo >= a)
        y = segs[i][1] = segs[i][1] - a
        if segs[i][0] == y:
            del segs[i]
        self._recount(j, n)
        return y

    def _leave(self, j: int) -> None:
        """Take node j out of the fresh units' domain sizes (before it changes)."""
        if self.host[j]:
            for n in range(self.width):
                self.total[n] -= int(self.count[j, n])

    def _join(self, j: int) -> None:
        """Put node j back into the fresh units' domain sizes if it still hosts one."""
        self.host[j] = self._hosts(j)
        if self.host[j]:
            for n in range(self.width):
                self.total[n] += int(self.count[j, n])
