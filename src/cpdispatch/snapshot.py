"""What a dispatcher sees (Snapshot) and what it returns (Decision). Both immutable."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from .job import Job
from .system import System


@dataclass(frozen=True, slots=True)
class QueuedJob:
    """A waiting job and the duration the predictor gives it (what dispatchers plan with)."""

    job: Job
    predicted: int


@dataclass(frozen=True, slots=True)
class RunningJob:
    """A running job: start, predicted duration from its start, node index of each unit."""

    job: Job
    start: int
    predicted: int
    nodes: tuple[int, ...]

    @property
    def predicted_end(self) -> int:
        return self.start + self.predicted


@dataclass(frozen=True)
class Snapshot:
    """The state at dispatching time `time`: a dispatcher is a pure function of this.

    `queued` is in queue order (submission order). `free` is a read-only (nodes x types) array of
    the amounts free now, aligned with `system.types`.
    """

    time: int
    system: System
    queued: tuple[QueuedJob, ...]
    running: tuple[RunningJob, ...]
    free: np.ndarray


@dataclass(frozen=True, slots=True)
class Start:
    """Start job `job_id` now, unit i on node index `nodes[i]` (repetitions allowed)."""

    job_id: str
    nodes: tuple[int, ...]


@dataclass(frozen=True)
class Decision:
    """The jobs to start now, plus what the dispatcher wants recorded about how it decided.

    `status` is a short word for decisions.csv (e.g. heuristic, optimal, feasible, fastpath,
    fallback); solver fields stay None for non-CP dispatchers. `plan` optionally gives the planned
    start time of other queued jobs (absolute times), for reports and the Slurm adapter.
    """

    starts: tuple[Start, ...] = ()
    status: str = "heuristic"
    variables: int | None = None
    constraints: int | None = None
    objective: float | None = None
    plan: Mapping[str, int] = field(default_factory=dict)
