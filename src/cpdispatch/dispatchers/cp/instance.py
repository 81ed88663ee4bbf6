"""A dispatching instance as CP models see it: selected queued jobs in priority order, running
jobs as fixed intervals from now, per-node capacities and free amounts. Times are relative to now
(0 = the dispatching time), so models stay small and comparable across instances."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...snapshot import Allocation
from ...system import System


@dataclass(frozen=True, slots=True)
class CpJob:
    """A queued job in the model. `duration` is what the model plans with (the prediction,
    clamped to >= 1 unless the ablation turns the clamp off); `wait` = now - submit; `ewt` is the
    expected waiting time of its queue (for the EWT objectives); `weight` multiplies the job's
    term of the objective (`QueuedJob.weight`)."""

    id: str
    units: int
    req: tuple[int, ...]
    duration: int
    wait: int
    ewt: int = 1800
    queue: str = ""
    one_per_node: bool = False
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class CpRunning:
    """A running job as a fixed interval [0, remaining) on its nodes. `remaining` is the predicted
    remaining time, clamped to >= 1 by the underestimation fix (may be <= 0 without it)."""

    id: str
    units: int
    req: tuple[int, ...]
    remaining: int
    alloc: Allocation
    elapsed: int = 0


@dataclass(frozen=True)
class Instance:
    """Everything a model builder needs. `jobs` are in priority order (highest first).

    `capacity` and `free` are (nodes x types) arrays aligned with `system.types`; `free` is the
    amount free now (capacity minus running usage). `horizon` bounds every start: the sum of all
    durations (running remaining + queued), as in the papers' end of horizon. `weights` are the
    allocator's per-type scarcity weights (`allocators.best_fit`; None: plain best fit), for
    every allocation the front end and the greedy plan make outside the model. `postponed` are
    the queued jobs HCP base keeps in its model beyond the first m, fixed at the end of the
    horizon ([horizon - d, horizon), CP'19 Sect. 2.2); their durations are in `horizon`.
    """

    time: int
    system: System
    jobs: tuple[CpJob, ...]
    running: tuple[CpRunning, ...]
    free: np.ndarray
    horizon: int
    weights: np.ndarray | None = None
    postponed: tuple[CpJob, ...] = ()

    @property
    def capacity(self) -> np.ndarray:
        return self.system.capacity


class ModelTooLarge(ValueError):
    """The allocation part would exceed a model's size guard (pcp20's `max_units` or
    `max_running_boxes`): solve nothing, enact the greedy plan (status `greedy:too-large`). Measured
    on HPC2N: beyond ~100 units with positions, CP-SAT never improved on the greedy plan within a
    second, and such models cost 0.1-1 s each."""


@dataclass
class Plan:
    """A (possibly partial) solution: relative start of each job, and node index per unit for the
    jobs whose allocation is known (every job for PCP models; HCP allocates only at start 0)."""

    starts: dict[str, int] = field(default_factory=dict)
    nodes: dict[str, tuple[int, ...]] = field(default_factory=dict)


class BuiltModel:
    """A CP-SAT model built for one instance, with the hooks the front end needs.

    Builders (`hcp`, `pcp19`, `pcp20`, `eurora14`) subclass this: they fill `model` and
    `start_vars` (one start variable per queued job, relative time), and implement `add_hint`
    (map a complete greedy plan onto *every* model variable) and `extract` (read a plan back from
    a solved model; `complete` may add what is derived from it, e.g. pcp20's fluid placements, once
    for the plan kept rather than at every solution found). `until`: the caller needs the nodes of
    the jobs starting at or before it only (the front end: those starting now); None: every job.
    `objective_kind` names the objective from `objectives.KINDS`.
    """

    def __init__(self, instance: Instance, objective_kind: str) -> None:
        from ortools.sat.python import cp_model

        self.instance = instance
        self.objective_kind = objective_kind
        self.model = cp_model.CpModel()
        self.start_vars: dict[str, cp_model.IntVar] = {}

    def greedy_plan(self, until: int | None = None) -> Plan:
        """The priority-list plan the solver starts from (`greedy.greedy_plan`); a model may
        compute it faster from what it knows of the instance. Raises ValueError if some job fits
        at no time."""
        from .greedy import greedy_plan

        return greedy_plan(self.instance)

    def post(self) -> None:
        """Post the variables and constraints if the builder deferred them (pcp20 does, so that
        a greedy plan that starts every job now costs no model); the front end calls it before
        solving."""

    def add_hint(self, plan: Plan) -> None:
        raise NotImplementedError

    def extract(self, solver: object) -> Plan:
        raise NotImplementedError

    def complete(self, plan: Plan, until: int | None = None) -> Plan:
        return plan

    def add_search(self) -> None:
        """Optional: post the model's decision strategy (used when the search is 'fixed')."""

    @property
    def solver_parameters(self) -> dict[str, object]:
        """CP-SAT parameters this model solves best with; the front end applies them to every solve."""
        return {}

    @property
    def variables(self) -> int:
        return len(self.model.Proto().variables)

    @property
    def constraints(self) -> int:
        return len(self.model.Proto().constraints)
