"""The priority-list schedule: the hint every CP model starts from and the plan used when the
solver has nothing better.

Jobs are taken in priority order; each starts at its earliest feasible time given the running
jobs (released at their remaining time) and the jobs already planned, on nodes chosen by best fit
(demand-aware when the instance has weights) over the amounts free during its whole interval
[s, s + d). The result is valid for the per-node PCP models (no node and type is ever over
capacity) and therefore also for HCP's totals. Per-node limits (`greedy_plan(limits=...)`) give
the plan of PCP'19's model, whose jobs may only use their candidate nodes, up to a cap each.

Why a segment profile: the free amounts only change at a running job's release or a planned
job's start or end, so the future is a list of segments with one (nodes x types) array each.
Candidate starts are segment starts (the earliest feasible start is always one: availability
within a segment is constant). A candidate is rejected on the per-type totals first (cheap), then
on the nodes of its first segment (a chunk of candidates in one numpy call), and only then on
the nodes over its whole window. Segment arrays live in one buffer (planning a job is one numpy update), are built
lazily and keep only the types some job asks for, so systems of thousands of nodes stay cheap
(CEA-Curie size, 400 running and 100 queued jobs: a few hundred ms, see tests/test_greedy.py).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from ...allocators import best_fit
from ...system import units_fitting
from .instance import CpJob, Instance, Plan

#: A window of at most this many (segment x node x type) amounts is reduced with one dense numpy
#: minimum; larger ones visit only the nodes that change inside them. Dense is faster below it
#: (HPC2N: 120 nodes, windows of ~200 segments; CEA-Curie's 5,544 nodes stay sparse).
DENSE_WINDOW = 1 << 16
#: Candidate starts are first tested in chunks of 8, 32, 128, ... (see `_Profile.windows`).
FIRST_CHUNK, CHUNK_GROWTH = 8, 4


class _Profile:
    """Free amounts (restricted to the requested types) over segments [times[i], times[i+1]).

    Segment i's array (nodes x types) is row `rows[i]` of one buffer, so that planning a job is a
    single numpy update over all the segments it spans; arrays exist for the first `len(rows)`
    segments, later ones are derived on demand from their predecessor plus the running jobs
    released at their start. `totals` (segments x types) is always complete: it drives the cheap
    rejection of candidates. `changed[i]` lists the nodes whose amounts may differ from segment
    i - 1, so the minimum over a window only visits those.
    """

    def __init__(self, instance: Instance, kinds: list[int]) -> None:
        self.kinds = kinds
        self.capacity = np.ascontiguousarray(instance.capacity[:, kinds], dtype=np.int64)
        free0 = np.array(instance.free[:, kinds], dtype=np.int64)
        self.releases: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}  # time -> (nodes, amounts)
        total_release: dict[int, np.ndarray] = {}
        for r in instance.running:
            req = np.array([r.req[k] for k in kinds], dtype=np.int64)
            if not r.alloc.nodes or not req.any():
                continue
            t = max(1, r.remaining)  # a running job still holds its nodes now, whatever its prediction
            uniq = np.asarray(r.alloc.nodes, dtype=np.intp)
            counts = np.asarray(r.alloc.counts, dtype=np.int64)
            self.releases.setdefault(t, []).append((uniq, counts[:, None] * req))
            total_release[t] = total_release.get(t, 0) + r.units * req
        self.times: list[int] = [0, *sorted(self.releases)]
        rows = [free0.sum(axis=0)]
        for t in self.times[1:]:
            rows.append(rows[-1] + total_release[t])
        self.totals = np.array(rows, dtype=np.int64).reshape(len(self.times), len(kinds))
        self.changed: list[list[np.ndarray]] = [[]] + [[u for u, _ in self.releases[t]] for t in self.times[1:]]
        self._buf = np.zeros((len(self.times) + len(instance.jobs) + 1, *free0.shape), dtype=np.int64)
        self._buf[0] = free0
        self.rows: list[int] = [0]

    def _new_row(self) -> int:
        row = len(self.rows)
        if row == len(self._buf):
            self._buf = np.concatenate([self._buf, np.zeros_like(self._buf)])
        return row

    def array(self, i: int) -> np.ndarray:
        """Segment i's free amounts (materialising the segments before it as needed)."""
        while len(self.rows) <= i:
            row = self._new_row()
            a = self._buf[row]
            a[:] = self._buf[self.rows[-1]]
            for uniq, amount in self.releases.get(self.times[len(self.rows)], ()):
                a[uniq] += amount
            self.rows.append(row)
        return self._buf[self.rows[i]]

    def split(self, t: int) -> int:
        """Make `t` a segment start; return its index."""
        i = bisect_left(self.times, t)
        if i < len(self.times) and self.times[i] == t:
            return i
        c = i - 1  # the segment containing t; no release happens at t, so t's state is c's state
        prev = self.array(c)
        row = self._new_row()
        self._buf[row] = prev
        self.rows.insert(i, row)
        self.times.insert(i, t)
        self.changed.insert(i, [])
        self.totals = np.insert(self.totals, i, self.totals[c], axis=0)
        return i

    def candidates(self, need: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
        """Segment indices whose window [t, t + d) passes the totals test, and each window's end."""
        times = np.asarray(self.times, dtype=np.int64)
        ends = np.searchsorted(times, times + d, side="left")
        bad = np.concatenate(([0], np.cumsum(~(self.totals >= need).all(axis=1))))
        good = bad[ends] == bad[np.arange(len(times))]
        idx = np.flatnonzero(good)
        return idx, ends[idx]

    def windows(
        self, req: tuple[int, ...], units: int, d: int, one_per_node: bool = False, limit: np.ndarray | None = None
    ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """In time order, the segments i at which `units` units of `req` (on distinct nodes with
        `one_per_node`, at most `limit[k]` on node k) could start for `d`, with the nodes that
        have room for a unit through the whole window and their minimum free amounts. Stop
        iterating before changing the profile.

        Most candidates that pass the totals test fail at their own first segment (on congested
        HPC2N instances, 800 of 870 per plan), so that test is done for a chunk of candidates at
        once, on the stacked segment arrays, before any window is scanned. With a `limit` (PCP'19's
        candidate nodes) both tests count only the units the limit allows: a job held to the
        nodes free now would otherwise have most windows scanned in vain."""
        cap = units if limit is None else np.minimum(limit, units)
        idx, ends = self.candidates(np.asarray(req, dtype=np.int64) * units, d)
        pos, chunk = 0, FIRST_CHUNK
        while pos < len(idx):
            ci, ce = idx[pos:pos + chunk], ends[pos:pos + chunk]
            pos, chunk = pos + chunk, chunk * CHUNK_GROWTH
            self.array(int(ci[-1]))
            rows = np.fromiter((self.rows[i] for i in ci.tolist()), np.intp, len(ci))
            ok = np.minimum(units_fitting(self._buf[rows], req, one_per_node), cap).sum(axis=1) >= units
            for i, end in zip(ci[ok].tolist(), ce[ok].tolist()):
                room = self._window_room(i, end, req, units, one_per_node, cap)
                if room is not None:
                    yield i, *room

    def _window_room(
        self, i: int, end: int, req: tuple[int, ...], units: int, one_per_node: bool, cap: int | np.ndarray
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """Nodes with room for a unit through segments [i, end) and their minimum free amounts,
        or None when fewer than `units` units fit through the window (at most `cap` a node)."""
        a = self.array(i)
        self.array(end - 1)
        if (end - i) * a.size <= DENSE_WINDOW:
            low = self._buf[np.fromiter(self.rows[i:end], np.intp, end - i)].min(axis=0)
        else:
            parts = [(self.rows[seg], nodes) for seg in range(i + 1, end) for nodes in self.changed[seg]]
            low = a
            if parts:
                nodes = np.concatenate([n for _, n in parts])
                rows = np.repeat(np.array([r for r, _ in parts], dtype=np.intp), [len(n) for _, n in parts])
                low = a.copy()
                np.minimum.at(low, nodes, self._buf[rows, nodes])
        fit = units_fitting(low, req, one_per_node)
        cand = np.flatnonzero(fit > 0)
        capped = np.minimum(fit[cand], cap[cand] if isinstance(cap, np.ndarray) else cap)
        if int(capped.sum()) < units:
            return None
        return cand, low[cand]

    def occupy(self, t: int, d: int, nodes: tuple[int, ...], req: tuple[int, ...]) -> None:
        """Plan a job on `nodes` (one entry per unit) over [t, t + d)."""
        end_i = self.split(t + d)
        self.array(end_i)  # derived lazily after this, segment end_i would inherit the job's usage
        start_i = bisect_left(self.times, t)
        vec = np.asarray(req, dtype=np.int64)
        uniq, counts = _count(nodes)
        self._buf[np.ix_(np.asarray(self.rows[start_i:end_i], dtype=np.intp), uniq)] -= counts[:, None] * vec
        self.totals[start_i:end_i] -= len(nodes) * vec
        self.changed[start_i].append(uniq)
        self.changed[end_i].append(uniq)


def _count(nodes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Distinct node indices and how many units sit on each."""
    if len(nodes) == 1:
        return np.array(nodes, dtype=np.intp), np.ones(1, dtype=np.int64)
    uniq, counts = np.unique(np.asarray(nodes, dtype=np.intp), return_counts=True)
    return uniq, counts.astype(np.int64)


def profile_kinds(instance: Instance, jobs: Sequence[CpJob]) -> list[int]:
    """The types a profile must follow: those some job asks for, and those the allocation weighs
    (the demand-aware best fit avoids wasting them)."""
    w = instance.weights
    return [k for k in range(len(instance.system.types))
            if any(j.req[k] > 0 for j in jobs) or (w is not None and w[k] > 0)]


class NoStart(ValueError):
    """A job fits at no time (an inconsistent instance), or at none by the latest start allowed."""


def greedy_plan(
    instance: Instance, jobs: Sequence[CpJob] | None = None, *,
    limits: Mapping[str, np.ndarray] | None = None, latest: int | None = None,
) -> Plan:
    """Schedule `jobs` (default: `instance.jobs`) in their (priority) order, each at its earliest
    feasible start.

    `limits` restricts where each job may go: per job id, the most units each node may take (0:
    not a candidate), as PCP'19's model restricts its candidate nodes; `latest` is the last start
    allowed. A job occupies at least one time unit even if its duration is 0 (clamp off), so what
    is planned at 0 really fits now. Raises `NoStart` if a job fits at no time (by `latest`).
    """
    jobs = instance.jobs if jobs is None else tuple(jobs)
    kinds = profile_kinds(instance, jobs)
    weights = None if instance.weights is None else instance.weights[kinds]
    prof = _Profile(instance, kinds)
    plan = Plan()
    for job in jobs:
        req = tuple(job.req[k] for k in kinds)
        limit = None if limits is None else limits[job.id]
        start, nodes = _first_fit(prof, job, req, weights, limit, latest)
        prof.occupy(start, max(1, job.duration), nodes, req)
        plan.starts[job.id] = start
        plan.nodes[job.id] = nodes
    return plan


def left_shifted(instance: Instance, plan: Plan) -> Plan | None:
    """`plan`'s jobs in the order of their starts (ties in priority order), each at its earliest
    feasible start (`greedy_plan`), or None if one fits at no time. On one pool of a resource no
    job starts later than in `plan`, so a regular objective can only improve; across nodes the
    best fit may place jobs differently, and the caller compares values."""
    rank = {j.id: i for i, j in enumerate(instance.jobs)}
    order = sorted(instance.jobs, key=lambda j: (plan.starts[j.id], rank[j.id]))
    try:
        return greedy_plan(instance, order)
    except NoStart:
        return None


def _first_fit(
    prof: _Profile, job: CpJob, req: tuple[int, ...], weights: np.ndarray | None, limit: np.ndarray | None,
    latest: int | None,
) -> tuple[int, tuple[int, ...]]:
    """The earliest start of `job` and its nodes by best fit (within `limit` units per node)."""
    for i, cand, low in prof.windows(req, job.units, max(1, job.duration), job.one_per_node, limit):
        start = prof.times[i]
        if latest is not None and start > latest:
            break
        if limit is None:
            low = low.copy()
        else:
            cand, low = _within(cand, low, limit[cand], req)
        picked = best_fit(low, prof.capacity[cand], req, job.units, weights, job.one_per_node)
        if picked is not None:  # None only with limits: `windows` checked the unit count
            return start, tuple(cand[list(picked)].tolist()) if picked else ()
    if latest is not None:
        raise NoStart(f"job {job.id} fits at no time up to {latest}")
    raise NoStart(f"job {job.id} fits at no time, not even once everything has ended")


def _within(
    cand: np.ndarray, low: np.ndarray, allowed: np.ndarray, req: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """The candidate nodes allowed at least one unit, their free amounts capped so that best fit
    puts at most `allowed` units on each."""
    keep = allowed > 0
    vec = np.asarray(req, dtype=np.int64)
    capped = np.where(vec > 0, np.minimum(low[keep], allowed[keep][:, None] * vec), low[keep])
    return cand[keep], capped
