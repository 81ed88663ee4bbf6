"""A job of a workload: an immutable trace record, already expressed in a system's resource types."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Job:
    """One job: `units` identical job units, each needing `req[k]` of the system's type k.

    `req` is aligned with `System.types`. `walltime` is the user's requested time (None when the
    trace has none); `runtime` is the real duration that drives the simulation and is never shown
    to a dispatcher. `line` is the source line, kept for error messages and reports. `default_walltime` is the
    documented stand-in a reader sets when the trace has no walltime (see `estimate`).
    `recorded_wait` is the wait the real system's scheduler gave the job (SWF field 3; None when
    unknown or meaningless, e.g. after rescaling arrivals): the `recorded` baseline replays it.
    `one_per_node`: its units must go to distinct nodes (Slurm's `-N K`: every listed node gets
    its part), which every dispatcher honours and the simulator checks.
    """

    id: str
    submit: int
    units: int
    req: tuple[int, ...]
    walltime: int | None
    runtime: int
    user: str = ""
    name: str = ""
    queue: str = ""
    line: int = 0
    default_walltime: int | None = None
    recorded_wait: int | None = None
    one_per_node: bool = False

    @property
    def estimate(self) -> int:
        """The user's estimate: the walltime, else the workload's documented default for jobs
        without one (readers always set one of the two; a hand-built job with neither is taken
        as exactly estimated)."""
        if self.walltime is not None:
            return self.walltime
        if self.default_walltime is not None:
            return self.default_walltime
        return self.runtime

    def total(self, k: int) -> int:
        """Total amount of type k the job asks for (all units)."""
        return self.units * self.req[k]


@dataclass(frozen=True, slots=True)
class Rejection:
    """A job of the workload that will never run, and why (reported, never dropped)."""

    job: Job
    reason: str
