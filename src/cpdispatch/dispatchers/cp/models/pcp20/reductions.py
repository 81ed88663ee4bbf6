"""The exact reductions of a PCP'20 model (not in the paper): which types need constraints of
their own, computed once per model into a `Reductions` value that everything after it reads.

- *Dominated types* leave the model: a type r cannot bind when every unit (queued or running)
  asking for r also asks for a kept type c with ``a_r / a_c <= cap_r(k) / cap_c(k)`` on every
  node (memory, on most of HPC2N's queues).
- *Folds*: a type r that every queued unit asks for in one proportion to another type c (HPC2N:
  400 MB per core) is folded into c (`Fold`), even when running jobs hold more of r per c: the
  queued units fit iff their c-amount fits in ``min(free_c, floor(free_r / ratio))``, so the
  running jobs hold that *effective* amount of c on each node (`running.running_usage`). Dropping
  dominated types and folding are one switch (`drop`): both take a type out of the model.
- *Fluid types*: on a type whose queued units all need exactly 1 of it and nothing else (SWF
  traces: one core per unit), unit-height boxes pack exactly when the cumulative holds
  (interval-graph colouring; the running staircase only shrinks), so the type gets the cumulative
  alone, no positions, and nodes are chosen after solving (`fluid`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .....allocators import one_unit_of_one_type
from .....job import Job
from ...instance import CpJob
from .axes import Axes, spread


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
    """The exact reductions of one model (module docstring): the dominated types, the folds, and
    the fluid types; `dropped` are the types left out of the model (dominated or folded)."""

    dominated: frozenset[int]
    folds: tuple[Fold, ...]
    fluid: frozenset[int]
    dropped: frozenset[int] = field(init=False)
    _requests: dict[tuple[int, ...], tuple[int, ...]] = field(default_factory=dict, init=False, compare=False,
                                                               repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "dropped", self.dominated | {f.r for f in self.folds})

    def request(self, req: tuple[int, ...]) -> tuple[int, ...]:
        """A per-unit request on the modelled types (a queue holds few distinct requests, asked
        for several times per job: remembered)."""
        if not self.dropped:
            return req
        out = self._requests.get(req)
        if out is None:
            out = self._requests[req] = tuple(0 if t in self.dropped else a for t, a in enumerate(req))
        return out

    def placement_free(self, reqs: Sequence[tuple[int, ...]]) -> bool:
        """Whether every unit of these requests is fluid or asks for nothing modelled: then where
        the units go cannot change when anything fits (the cumulative is exact on fluid types).
        The per-model form of `allocators.placement_cannot_matter`, which says it of jobs before
        any model, for a whole workload or queue."""
        return all(not any(q) or (one_unit_of_one_type(q) and q.index(1) in self.fluid)
                   for q in map(self.request, reqs))


def reductions_for(
    axes: Axes, jobs: Sequence[CpJob | Job], running: Sequence[tuple[int, ...]], on: bool = True
) -> Reductions:
    """The reductions of a model of queued `jobs` beside running units asking `running` (their
    per-unit requests, of the running jobs placed on nodes): all of them, or none (`on` false:
    the paper's model)."""
    return reductions_of(axes, [j.req for j in jobs], running, [j.req for j in jobs if spread(j)], drop=on, fluid=on)


def reductions_of(
    axes: Axes, queued: Sequence[tuple[int, ...]], running: Sequence[tuple[int, ...]],
    spread: Sequence[tuple[int, ...]] = (), *, drop: bool = True, fluid: bool = True,
) -> Reductions:
    """The reductions of a model of queued units asking `queued` beside running units asking
    `running` (per-unit requests). `drop`: leave out dominated types and fold proportional ones;
    `fluid`: find the fluid types (both: the default). The types of `spread` requests (jobs whose
    units need distinct nodes) are never fluid: the cumulative alone would let two of a job's
    units share a node."""
    dominated = _dominated_types(axes, set(queued) | set(running)) if drop else frozenset()
    folds = _folds(axes, {tuple(0 if t in dominated else a for t, a in enumerate(q)) for q in queued},
                   dominated) if drop else ()
    red = Reductions(dominated, folds, frozenset())
    if not fluid:
        return red
    return Reductions(dominated, folds, _fluid_types(red, queued, spread))


def _fluid_types(
    red: Reductions, queued: Sequence[tuple[int, ...]], spread: Sequence[tuple[int, ...]]
) -> frozenset[int]:
    """The modelled types whose queued units all ask for 1 of them and nothing else, minus the
    types of `spread` requests."""
    is_fluid: dict[int, bool] = {}
    for req in map(red.request, queued):
        types = [t for t, a in enumerate(req) if a > 0]
        single = one_unit_of_one_type(req)
        for t in types:
            is_fluid[t] = is_fluid.get(t, True) and single
    for req in map(red.request, spread):
        for t, a in enumerate(req):
            if a > 0:
                is_fluid[t] = False
    return frozenset(t for t, ok in is_fluid.items() if ok)


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
