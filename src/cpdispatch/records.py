"""What a simulation run produces: one record per job and one per dispatcher call."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import InputError
from .job import Job
from .snapshot import Allocation, PlacementReport
from .system import System


@dataclass(slots=True)
class JobRecord:
    """The fate of one job. `start`/`end` are None for rejected jobs; `alloc` is where it ran;
    `predicted` is the duration the dispatcher saw when the job started."""

    job: Job
    status: str = "queued"  # completed | killed | rejected (running: at the end of an interrupted run)
    start: int | None = None
    end: int | None = None
    predicted: int | None = None
    alloc: Allocation = Allocation()
    reason: str = ""

    @property
    def wait(self) -> int:
        assert self.start is not None
        return self.start - self.job.submit


@dataclass(slots=True)
class DecisionRecord:
    """One dispatcher call, as written to decisions.csv."""

    time: int
    queued: int
    running: int
    started: int
    wall_ms: float
    cpu_ms: float
    status: str
    variables: int | None = None
    constraints: int | None = None
    objective: float | None = None
    stage2: PlacementReport | None = None  # what the dispatcher's placement stage did


@dataclass
class SimulationResult:
    """Everything the output writers and metrics need. `records` follow the workload order
    (jobs, then jobs rejected while reading); `refused` lists invalid starts (never applied)."""

    system: System
    dispatcher: str
    predictor: str
    records: list[JobRecord]
    decisions: list[DecisionRecord]
    options: dict[str, Any] = field(default_factory=dict)
    skipped: list[InputError] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)
    sim_wall_s: float = 0.0
    peak_rss_mb: float = 0.0
    #: set when a signal stopped the run: {"signal", "simulated_time", "undecided"}; `records` then
    #: hold only the decided jobs (started ones still running at that time have status "running")
    interrupted: dict[str, Any] | None = None
    #: the room probe's counts (`simulator.room.RoomProbe.summary`); None when it was off
    room: dict[str, Any] | None = None
