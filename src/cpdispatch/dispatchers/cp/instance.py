"""A dispatching instance as CP models see it: selected queued jobs in priority order, running
jobs as fixed intervals from now, per-node capacities and free amounts. Times are relative to now
(0 = the dispatching time), so models stay small and comparable across instances."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ...snapshot import Allocation
from ...system import System


class CpJob(NamedTuple):
    """A queued job in the model. `duration` is what the model plans with (the prediction, clamped
    to >= 1 unless the ablation turns the clamp off); `wait` = now - submit; `ewt` is the expected
    waiting time of its queue (for the EWT objectives); `weight` multiplies the job's term of the
    objective (`QueuedJob.weight`). A named tuple: hundreds are made at nearly every decision, and
    a frozen dataclass costs three times as much to make."""

    id: str
    units: int
    req: tuple[int, ...]
    duration: int
    wait: int
    ewt: int = 1800
    queue: str = ""
    one_per_node: bool = False
    weight: float = 1.0


class CpRunning(NamedTuple):
    """A running job as a fixed interval [0, remaining) on its nodes (a named tuple, as `CpJob`).
    `remaining` is the predicted remaining time, clamped to >= 1 by the underestimation fix (may
    be <= 0 without it)."""

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


@dataclass
class Plan:
    """A (possibly partial) solution: relative start of each job, and node index per unit for the
    jobs whose allocation is known (every job for PCP models; HCP allocates only at start 0)."""

    starts: dict[str, int] = field(default_factory=dict)
    nodes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    #: per job, [unit][requested type] positions on PCP'20's axes, when the plan fixes them (its dive)
    positions: dict[str, list[list[int]]] = field(default_factory=dict)
