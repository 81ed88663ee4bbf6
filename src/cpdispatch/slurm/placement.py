"""Where Slurm can start what the dispatcher chose: each start checked in decision order against
the free amounts the starts before it leave, and moved to the nearest valid placement when Slurm
cannot honour the dispatcher's nodes (the job's partitions and features, one task per node for
`-N` jobs, an idle node for `--exclusive`); and how much of its nodes Slurm may give a job
released but not yet started (`committed_units`)."""

from __future__ import annotations

import numpy as np

from ..snapshot import Allocation, Snapshot, Start
from ..system import System, units_fitting
from .state import Node, Request, SlurmJob, feature_match

#: why a start is refused when its job was not offered this round (unknown, or started twice)
NOT_OFFERED = "not a held job of this round"
#: why a start waits a round: it may not fit beside this round's multi-node `-n` jobs, whose
#: tasks per node Slurm lays out itself, in its own order of the round's jobs (a job then waits
#: on its nodes, or a `-n` job gets a node the dispatcher did not choose)
LATER = "it shares a node with a job whose tasks Slurm lays out this round"


def holds(free: np.ndarray, cap: np.ndarray, node: int, count: int, req: tuple[int, ...], exclusive: bool) -> bool:
    """Whether `count` units of `req` fit on `node` now (its whole capacity idle for `--exclusive`)."""
    if exclusive and (free[node] != cap[node]).any():
        return False
    return bool((free[node] >= np.asarray(req) * count).all())


def place(nodes: tuple[int, ...], request: Request, req: tuple[int, ...], free: np.ndarray, cap: np.ndarray,
          allowed: np.ndarray) -> tuple[list[int] | None, str]:
    """The dispatcher's nodes (one per unit) if Slurm can honour them now; else the nearest
    valid placement (its nodes first, then the others in order) with why it moved, or None."""
    def fits(node: int, count: int) -> bool:
        if not allowed[node] or (request.distinct and count > 1):
            return False
        return holds(free, cap, node, count, req, request.exclusive)

    counts: dict[int, int] = {}
    for n in nodes:
        counts[n] = counts.get(n, 0) + 1
    valid_index = all(0 <= n < len(free) for n in counts)
    if valid_index and len(nodes) == request.units and all(fits(n, c) for n, c in counts.items()):
        return list(nodes), ""
    why = ("units share a node but Slurm gives each listed node its own part" if request.distinct and
           any(c > 1 for c in counts.values()) else "the chosen nodes cannot hold it now")
    order = list(dict.fromkeys(n for n in nodes if 0 <= n < len(free)))
    order += [n for n in range(len(free)) if n not in counts]
    placed: list[int] = []
    for n in order:
        if len(placed) == request.units:
            break
        if not fits(n, 1):
            continue
        k = 1 if request.distinct else int(units_fitting(free[n:n + 1], req)[0])
        placed += [n] * min(k, request.units - len(placed))
    return (placed, why) if len(placed) == request.units else (None, why)


class StartChecker:
    """One round's starts checked in order on a working copy of the snapshot's free amounts.

    Slurm starts the round's released jobs in its own order, not the dispatcher's, so a start is
    taken only if it fits beside the most every start before it may hold: its exact amounts, or
    for a multi-node `-n` job whatever layout Slurm may give it. Each start then fits whichever
    of them Slurm starts first."""

    def __init__(self, snapshot: Snapshot, room: np.ndarray, offered: dict[str, SlurmJob],
                 partitions: dict[str, list[str]], index: dict[str, int], nodes: list[Node]) -> None:
        self.system, self.offered, self.partitions, self.index = snapshot.system, offered, partitions, index
        self.features = {n.name: n.features for n in nodes}
        self.room = room  # Slurm's free amounts (released jobs not started left in)
        self.free = snapshot.free.copy()
        self.worst = snapshot.free.copy()  # as `free`, less the most each start may hold
        self.queued = {q.job.id: q.job for q in snapshot.queued}
        self.masks: dict[tuple[str, str], np.ndarray] = {}  # (partitions, features) -> nodes allowed

    def _allowed(self, queue: str, wanted: str) -> np.ndarray:
        allowed = self.masks.get((queue, wanted))
        if allowed is None:
            index, features = self.index, self.features
            allowed = self.masks[queue, wanted] = np.zeros(self.system.n_nodes, dtype=bool)
            allowed[[index[n] for p in queue.split(",") for n in self.partitions.get(p, []) if n in index
                     and feature_match(wanted, features[n])]] = True
        return allowed

    def check(self, start: Start) -> tuple[list[int] | None, str]:
        """Where `start` goes, one node per unit (None: refused, or `LATER`), and why it moved or
        was refused ("": as chosen). A placed start's amounts leave the working free amounts."""
        job = self.queued.pop(start.job_id, None)
        if job is None:
            return None, NOT_OFFERED
        request = self.offered[start.job_id].request
        allowed = self._allowed(job.queue, self.offered[start.job_id].features)
        units, why = place(tuple(start.nodes), request, job.req, self.free, self.system.capacity, allowed)
        if units is None:
            return units, why
        alloc = Allocation.of_units(units)
        most = Allocation(alloc.nodes, most_units(request, alloc.nodes, self.room, job.req))
        if not all(holds(self.worst, self.system.capacity, n, k, job.req, request.exclusive)
                   for n, k in zip(most.nodes, most.counts)):
            return None, LATER  # the dispatcher decides it again next round, on Slurm's real layout
        self._take(self.free, alloc, job.req, request.exclusive)
        self._take(self.worst, most, job.req, request.exclusive)
        return units, why

    @staticmethod
    def _take(free: np.ndarray, alloc: Allocation, req: tuple[int, ...], exclusive: bool) -> None:
        free[list(alloc.nodes)] -= np.asarray(alloc.counts, dtype=np.int64)[:, None] * np.asarray(req)
        if exclusive:
            free[list(alloc.nodes)] = 0


def most_units(request: Request, nodes: tuple[int, ...] | list[int], room: np.ndarray,
               req: tuple[int, ...]) -> tuple[int, ...]:
    """The most units Slurm may give a job pinned to `nodes` on each, whatever its order of the
    jobs it starts: one per node for `-N` jobs, all on a single node; else (Slurm lays out the
    tasks) all but one per other node, on any node whose `room` holds them."""
    if request.distinct:
        return (1,) * len(nodes)
    if len(nodes) == 1:
        return (request.units,)
    spare = request.units - len(nodes) + 1
    return tuple(max(1, min(spare, int(units_fitting(room[n:n + 1], req)[0]))) for n in nodes)


def committed_units(j: SlurmJob, system: System, index: dict[str, int], room: np.ndarray, free: np.ndarray
                    ) -> tuple[list[int], list[int]]:
    """The usable nodes a released job is pinned to, and the most units Slurm may give it on each
    (`most_units` in Slurm's `room`); taken off `free` (the whole node for `--exclusive`)."""
    req = j.request.req(system.types)
    on = sorted(index[x] for x in j.required if x in index)
    counts = list(most_units(j.request, on, room, req)) if on else []
    need = np.asarray(req)
    for n, k in zip(on, counts):
        free[n] = 0 if j.request.exclusive else free[n] - need * k
    return on, counts
