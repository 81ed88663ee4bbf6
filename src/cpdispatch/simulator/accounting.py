"""Job accounting: the fate of every job of the workload, and the run's records.

Every job ends completed, killed or rejected with a reason; `result` checks that none was lost.
"""

from __future__ import annotations

import resource
import signal
from collections import Counter
from typing import Any

from ..errors import CpdispatchError
from ..job import Job
from ..records import DecisionRecord, JobRecord, SimulationResult
from ..snapshot import Allocation
from ..system import System
from ..workloads.base import Workload


class Ledger:
    """One JobRecord per job (workload order), the dispatcher calls, and refused starts."""

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self.records = [JobRecord(job) for job in workload.jobs]
        self.index = {job.id: i for i, job in enumerate(workload.jobs)}
        if len(self.index) != len(workload.jobs):
            dup = Counter(j.id for j in workload.jobs).most_common(1)[0][0]
            raise CpdispatchError(f"{workload.source}: job id '{dup}' appears more than once")
        self.decisions: list[DecisionRecord] = []
        self.refused: list[str] = []
        self.interrupted: dict[str, Any] | None = None

    def record(self, job_id: str) -> JobRecord:
        return self.records[self.index[job_id]]

    def reject(self, job_id: str, reason: str) -> None:
        rec = self.record(job_id)
        rec.status, rec.reason = "rejected", reason

    def start(self, job: Job, at: int, predicted: int, alloc: Allocation, kill_at_walltime: bool) -> int:
        """Record the start of `job`; returns when it ends (its run time, or its walltime if killed)."""
        rec = self.record(job.id)
        rec.start, rec.predicted, rec.alloc = at, predicted, alloc
        end, rec.status = at + job.runtime, "completed"
        wt = job.walltime
        if kill_at_walltime and wt is not None and job.runtime > wt:
            end, rec.status = at + wt, "killed"
            rec.reason = f"killed at its walltime of {wt} s (real run time {job.runtime} s)"
        rec.end = end
        return end

    def interrupt(self, signum: int, now: int) -> None:
        """A signal stopped the run at simulated time `now`: keep the decided jobs only (started
        or rejected); those started and not yet ended are "running"."""
        decided = [r for r in self.records if r.start is not None or r.status == "rejected"]
        for r in decided:
            if r.end is not None and r.end > now:
                r.status = "running"
        self.interrupted = {"signal": signal.Signals(signum).name, "simulated_time": now,
                            "undecided": len(self.records) - len(decided)}
        self.records = decided

    def result(
        self, system: System, dispatcher: str, predictor: str, options: dict[str, Any], wall: float
    ) -> SimulationResult:
        """The run's result, after checking that every job is accounted for."""
        records = self.records + [
            JobRecord(r.job, status="rejected", reason=r.reason) for r in self.workload.rejected
        ]
        counts = Counter(r.status for r in records)
        loaded = len(self.workload.jobs) + len(self.workload.rejected)
        undecided = self.interrupted["undecided"] if self.interrupted else 0
        if sum(counts[s] for s in ("completed", "killed", "rejected", "running")) + undecided != loaded:
            raise AssertionError(f"jobs lost: loaded {loaded}, accounted {dict(counts)}")
        return SimulationResult(
            system=system,
            dispatcher=dispatcher,
            predictor=predictor,
            records=records,
            decisions=self.decisions,
            options=options,
            skipped=list(self.workload.skipped),
            refused=self.refused,
            notes=dict(self.workload.notes),
            sim_wall_s=wall,
            peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
            interrupted=self.interrupted,
        )
