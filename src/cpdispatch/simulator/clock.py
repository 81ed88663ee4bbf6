"""The event clock: which simulated time comes next, and what happens then.

Events are submissions (the workload, in submit order) and completions (a heap); a third heap
holds the times at which running jobs outlive their predicted duration (for predictors that
correct running jobs). Equal times keep the order they were pushed in.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence

from ..job import Job

#: Attempts on an idle system with a non-empty queue before the remaining jobs are rejected.
STALL_ATTEMPTS = 3


class EventClock:
    """Submissions, completions and overruns in time order; the time never goes back."""

    def __init__(self, jobs: Sequence[Job]) -> None:
        self.jobs = jobs
        self.next_job = 0  # index of the next submission
        self.completions: list[tuple[int, int, str]] = []  # (end, seq, job id)
        self.overruns: list[tuple[int, int, str]] = []  # (predicted end, seq, job id)
        self.now = jobs[0].submit if jobs else 0
        self.floor = self.now  # a charged decision moves this forward
        self.stalls = 0
        self._seq = 0

    def pending(self) -> bool:
        """Whether a submission or a completion is still to come."""
        return self.next_job < len(self.jobs) or bool(self.completions)

    def advance(self) -> int | None:
        """Move to the next event time; with no event to come, one second on (the dispatcher's
        new chance on an idle system), or None after STALL_ATTEMPTS such seconds."""
        nxt = self.jobs[self.next_job].submit if self.next_job < len(self.jobs) else None
        if self.completions and (nxt is None or self.completions[0][0] < nxt):
            nxt = self.completions[0][0]
        if nxt is not None:
            self.stalls = 0
            self.now = max(self.floor, nxt)
        else:
            self.stalls += 1
            if self.stalls > STALL_ATTEMPTS:
                return None
            self.now = max(self.floor, self.now + 1)
        return self.now

    def due_completions(self) -> Iterator[str]:
        """Ids of the jobs that end by now, in end order."""
        heap, now = self.completions, self.now
        while heap and heap[0][0] <= now:
            yield heapq.heappop(heap)[2]

    def due_submissions(self) -> Iterator[Job]:
        jobs, now = self.jobs, self.now
        while self.next_job < len(jobs) and jobs[self.next_job].submit <= now:
            self.next_job += 1
            yield jobs[self.next_job - 1]

    def due_overruns(self) -> Iterator[str]:
        """Ids of the running jobs whose predicted end is now or past (some may have ended)."""
        heap, now = self.overruns, self.now
        while heap and heap[0][0] <= now:
            yield heapq.heappop(heap)[2]

    def at_completion(self, when: int, job_id: str) -> None:
        self._seq += 1
        heapq.heappush(self.completions, (when, self._seq, job_id))

    def at_overrun(self, when: int, job_id: str) -> None:
        self._seq += 1
        heapq.heappush(self.overruns, (when, self._seq, job_id))
