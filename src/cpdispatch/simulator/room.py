"""The room probe: could a different placement of the jobs a decision starts now let a queued job
start earlier? It tells a user whether allocation can matter on a workload at all.

Each decision that starts jobs while others stay queued is asked once. A dispatcher with its own
placement stage (pcp20's second stage) answers for itself: its report counts, measured against
its first stage's placement. Any other dispatcher's starts are given to a `RoomAnswerer` that the
caller hands over, made on the first question (`api.simulate` gives pcp20's second stage in probe
mode, nothing enacted: "moved" there means room). When no queue of the workload can leave room
(every job asks 1 unit of one type: where a unit goes cannot matter), the answer is known once for
the run, and no answerer is made. The probe's time is not the dispatcher's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from ..allocators import placement_cannot_matter, take
from ..job import Job
from ..snapshot import Decision, PlacementReport, Snapshot, Start


class RoomAnswerer(Protocol):
    """Says whether another placement of `starts` would let a queued job of `snapshot` start
    earlier (its report's `room` and `gained`), without enacting anything."""

    def placement_room(self, snapshot: Snapshot, starts: tuple[Start, ...]) -> PlacementReport: ...


class RoomProbe:
    """Counts, over a run, the decisions with room and the queued jobs that would gain, among the
    jobs of `workload`; `answerer` makes what it asks, on the first question that needs one."""

    def __init__(self, workload: Sequence[Job], answerer: Callable[[], RoomAnswerer]) -> None:
        self._make_answerer = answerer
        self._answerer: RoomAnswerer | None = None
        self._workload = workload
        self._never: bool | None = None  # no queue of the workload can leave room (known at first ask)
        self.source = ""
        self.checked = self.with_room = self.gained = 0
        self.ms: list[float] = []

    def observe(self, snapshot: Snapshot, decision: Decision) -> None:
        if not decision.starts or len(snapshot.queued) <= len(decision.starts):
            return
        report = decision.stage2
        if report is None:
            report = self._ask(snapshot, decision.starts)
            self.ms.append(report.ms)
            self.source = self.source or "probe"
        else:
            self.source = "stage2"
        self.checked += 1
        self.with_room += report.room
        self.gained += report.gained

    def _ask(self, snapshot: Snapshot, starts: tuple[Start, ...]) -> PlacementReport:
        if self._never is None:
            self._never = placement_cannot_matter(self._workload)
        if self._never:
            return PlacementReport("fluid", 0.0, None, 0)
        if self._answerer is None:  # made only for workloads where placement can matter (pcp20: CP-SAT)
            self._answerer = self._make_answerer()
        return self._answerer.placement_room(snapshot, _valid(snapshot, starts))

    def summary(self) -> dict[str, Any]:
        """For summary.json: decisions asked, those with room (count and share), queued jobs that
        would start earlier, who answered, and the probe's own time."""
        ms = np.asarray(self.ms, dtype=np.float64)
        return {
            "decisions": self.checked,
            "with_room": self.with_room,
            "share": self.with_room / self.checked if self.checked else 0.0,
            "jobs_gained": self.gained,
            "source": self.source or "none",
            "probe_ms_mean": float(ms.mean()) if ms.size else 0.0,
            "probe_ms_max": float(ms.max()) if ms.size else 0.0,
        }


def _valid(snapshot: Snapshot, starts: tuple[Start, ...]) -> tuple[Start, ...]:
    """The starts the simulator will enact: each checked against what the earlier ones left."""
    wanted = {s.job_id for s in starts}
    jobs = {q.job.id: q.job for q in snapshot.queued if q.job.id in wanted}
    free = np.array(snapshot.free, dtype=np.int64)
    out: list[Start] = []
    for start in starts:
        job = jobs.pop(start.job_id, None)  # a job started twice: only its first start counts
        if job is not None and take(free, start.nodes, job):
            out.append(start)
    return tuple(out)
