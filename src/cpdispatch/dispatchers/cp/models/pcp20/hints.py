"""A complete plan (a start and a node per unit of every job) as a hint on every variable of
PCP'20's model: the solver starts from the greedy plan, and a complete hint bounds the objective.

Positions are computed independently per (node, type) by a sweep in start order (`_pack`): each
unit takes a block of its node free of the running staircase at its start and of the units
already placed that overlap it in time. With amounts of 1 the plain sweep always succeeds when the
plan respects node capacities; with larger amounts a node can become fragmented, and the sweep
backtracks within a budget. If it still fails, the positions of that job and type stay unhinted
(the hint is then incomplete). Positions of a job's units are sorted to satisfy the unit order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np
from ortools.sat.python import cp_model

from ...instance import Plan
from .axes import Axes
from .job_vars import JobVars
from .running import RunningUsage

#: Most placements tried per (node, type) when the sweep for a hint has to backtrack.
PACK_BUDGET = 2000

#: A box to place: (start, end, height, key), the key being (job order, unit, requested type number)
_Box = tuple[int, int, int, tuple[int, int, int]]


def hint_plan(
    m: cp_model.CpModel, jobs: Sequence[JobVars], run: RunningUsage, axes: Axes, walls: Sequence[cp_model.IntVar],
    plan: Plan,
) -> bool:
    """Hint every start, node, piece literal, position and wall from `plan`; whether every
    position found its place. Positions come from `plan.positions` when it gives every job's."""
    boxes = _hint_starts_and_nodes(m, jobs, plan)
    if all(jv.job.id in plan.positions for jv in jobs if jv.positions):
        for jv in jobs:
            for unit, ys in zip(jv.positions, plan.positions.get(jv.job.id, ())):
                for var, y in zip(unit, ys):
                    m.add_hint(var, y)
        for wall in walls:
            m.add_hint(wall, -1)
        return True
    found: dict[tuple[int, int, int], int] = {}
    complete = True
    for (k, t), todo in boxes.items():
        lo_row, hi_row = (int(x) for x in np.searchsorted(run.node, [k, k + 1]))
        stair = list(zip(run.remaining[lo_row:hi_row].tolist(), run.usage[lo_row:hi_row, t].tolist()))
        base = int(axes.first[k, t])
        placed = _pack(todo, base, base + int(axes.capacity[k, t]), stair)
        if placed is None:
            complete = False
        else:
            found.update(placed)
    for order, jv in enumerate(jobs):
        for n in range(len(jv.geo.types) if jv.positions else 0):
            keys = [(order, i, n) for i in range(jv.job.units)]
            if all(key in found for key in keys):
                for unit, pos in zip(jv.positions, sorted(found[key] for key in keys)):
                    m.add_hint(unit[n], pos)
    for wall in walls:
        m.add_hint(wall, -1)
    return complete


def _hint_starts_and_nodes(
    m: cp_model.CpModel, jobs: Sequence[JobVars], plan: Plan
) -> dict[tuple[int, int], list[_Box]]:
    """Hint the starts, node variables and piece literals; the boxes to place per (node, type)."""
    boxes: dict[tuple[int, int], list[_Box]] = defaultdict(list)
    for order, jv in enumerate(jobs):
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
                boxes[k, t].append((s, end, a, (order, i, n)))
    return boxes


def _pack(
    todo: Sequence[_Box], base: int, top: int, stair: Sequence[tuple[int, int]], budget: int = PACK_BUDGET,
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

