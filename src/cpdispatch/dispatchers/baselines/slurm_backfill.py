"""Slurm's sched/backfill with priority/multifactor, as a simulated dispatcher.

Jobs are ordered by Slurm's multifactor priority (age, job size, fair share by user with a
decaying usage; partition, QOS, association and TRES factors are 0 for a trace's single
partition), as Slurm 22.05 computes it (priority_multifactor.c, fair_tree.c): the job-size factor
is (nodes / N + cpus / C) / 2, a job's nodes being its processors over the mean processors per
node; the weights are the slurm.conf example's (Slurm's built-in default, 0, makes it FIFO). Then,
in that order and for at most `bf_max_job_test` jobs, each job starts now if it delays no
reservation made before it, or reserves its earliest start within `bf_window` (one
`ReservingPass`, the conservative pass, limited). Slurm's main scheduler (priority order, stop at
the first job that cannot start) is subsumed: it starts nothing this pass would not.

Where this differs from a real slurmctld, each to Slurm's advantage or neutral (docs/dispatchers.md):
the pass runs at every event, not every `bf_interval` s; priorities are recomputed at every call,
not every PriorityCalcPeriod; a job's usage accrues from its start to the call that no longer
sees it running (exact while jobs are queued, since every end is then a call); reservations hold
resource amounts, not whole nodes, and times are rounded up to `bf_resolution` where Slurm floors
them; Slurm plans with time limits, which is `--predictor walltime` here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ...job import Job
from ...snapshot import LiveView, RunningJob, Snapshot
from ..base import Option, registered
from .conservative import ReservingPass
from .easy import ALLOCATOR_OPTION
from .queue_cache import LiveQueueCache

_MINUTE, _DAY = 60, 86_400


class UserUsage:
    """Each user's decayed usage (processor-seconds, half-life `half_life` s) from the running jobs
    the dispatcher sees, with the processors each user is running now; users by first sight."""

    def __init__(self, half_life: float) -> None:
        self.rate = math.log(2) / half_life if half_life > 0 else 0.0
        self.ids: dict[str, int] = {}
        self.usage = np.zeros(0)
        self.running = np.zeros(0)  # processors in use per user
        self._t: int | None = None
        self._added: list[RunningJob] | None = None
        self._n_added = self._n_removed = 0

    def user(self, name: str) -> int:
        uid = self.ids.setdefault(name, len(self.ids))
        if uid == len(self.usage):
            grow = max(16, len(self.usage))
            self.usage = np.concatenate((self.usage, np.zeros(grow)))
            self.running = np.concatenate((self.running, np.zeros(grow)))
        return uid

    def advance(self, now: int, running: Sequence[RunningJob]) -> None:
        """Decay and accrue up to `now` with the processors in use since the last call, then take
        the jobs started and ended since then into account."""
        if self._t is not None and now > self._t:
            dt = now - self._t
            if self.rate:
                keep = math.exp(-self.rate * dt)
                self.usage = self.usage * keep + self.running * (1 - keep) / self.rate
            else:
                self.usage = self.usage + self.running * dt
        self._t = now
        view = running if isinstance(running, LiveView) else None
        if view is not None and view.added is self._added and view.n_added >= self._n_added:
            for r in view.added[self._n_added : view.n_added]:
                self.running[self.user(r.job.user)] += _processors(r.job)
            for r in view.removed[self._n_removed : view.n_removed]:
                self.running[self.user(r.job.user)] -= _processors(r.job)
        else:
            self.running[:] = 0
            for r in running:
                self.running[self.user(r.job.user)] += _processors(r.job)
        if view is not None:
            self._added, self._n_added, self._n_removed = view.added, view.n_added, view.n_removed

    def fair_tree(self) -> np.ndarray:
        """Fair Tree's factor per user for users with equal shares under one account: users ranked
        by level fair share (share / share of usage: the least used first), factor = 1 for the
        first rank down to 1 / n for the last; equal usage, equal rank."""
        n = len(self.ids)
        usage = self.usage[:n]
        if n == 0:
            return usage
        # distinct usages in increasing order are the ranks (equal usage -> equal rank)
        levels, rank = np.unique(usage, return_inverse=True)
        return (n - _dense_to_competition(rank, levels.size)) / n


def _dense_to_competition(rank: np.ndarray, levels: int) -> np.ndarray:
    """Dense ranks (0, 1, 1, 2) -> competition ranks (0, 1, 1, 3): how many users rank above."""
    counts = np.bincount(rank, minlength=levels)
    before = np.concatenate(([0], np.cumsum(counts)[:-1]))
    return before[rank]


def _processors(job: Job) -> int:
    """Processors (the first resource type: cores on every preset) a job holds."""
    return job.units * (job.req[0] if job.req else 1)


@registered()
class SlurmBackfill(ReservingPass):
    name = "slurm-backfill"
    summary = ("Slurm's sched/backfill with priority/multifactor (age, job size, fair share by user): reservations "
               "for the first bf_max_job_test jobs within bf_window, times in bf_resolution steps")
    options = (
        Option("bf_max_job_test", 500, "jobs tested per pass in priority order (Slurm's default: 500)"),
        Option("bf_window", 1440, "minutes ahead a reservation may start (Slurm's default: 1440, one day)"),
        Option("bf_resolution", 60, "seconds: reservation and end times rounded up to this (Slurm's default: 60)"),
        Option("weight_age", 1000, "PriorityWeightAge"),
        Option("weight_fairshare", 10000, "PriorityWeightFairshare"),
        Option("weight_jobsize", 1000, "PriorityWeightJobSize"),
        Option("max_age", 7 * 1440, "PriorityMaxAge in minutes: the age factor reaches 1 (Slurm's default: 7 days)"),
        Option("decay_half_life", 7 * 1440, "PriorityDecayHalfLife in minutes, 0: no decay (Slurm's default: 7 days)"),
        Option("favor_small", False, "PriorityFavorSmall: the job-size factor favours small jobs"),
        ALLOCATOR_OPTION,
    )
    bf_max_job_test: int
    bf_window: int
    bf_resolution: int
    weight_age: int
    weight_fairshare: int
    weight_jobsize: int
    max_age: int
    decay_half_life: int
    favor_small: bool

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self.depth = self.bf_max_job_test
        self.window = self.bf_window * _MINUTE
        self.resolution = max(1, self.bf_resolution)
        self._usage = UserUsage(self.decay_half_life * _MINUTE)
        self._queue = LiveQueueCache(lambda job: self._usage.user(job.user))

    def priority(self, snapshot: Snapshot, positions: np.ndarray) -> np.ndarray:
        """Multifactor priority of the queued jobs at `positions`, truncated to an integer and at
        least 1 as Slurm stores it (so near ties fall to submit time, as in Slurm's queue)."""
        cache, system = self._queue, snapshot.system
        age = np.minimum((snapshot.time - cache.submit[positions]) / max(self.max_age * _MINUTE, 1), 1.0)
        cpus = cache.totals[0, positions].astype(np.float64)
        total, nodes = max(int(system.totals[0]), 1), system.n_nodes
        size = (np.ceil(cpus * nodes / total) / nodes + cpus / total) / 2  # (nodes/N + cpus/C) / 2
        if self.favor_small:
            size = 1.0 - size
        fair = self._usage.fair_tree()[cache.extra[positions]]
        prio = self.weight_age * age + self.weight_jobsize * np.minimum(size, 1.0) + self.weight_fairshare * fair
        return np.maximum(np.floor(prio), 1.0)

    def order(self, snapshot: Snapshot) -> np.ndarray | None:
        self._usage.advance(snapshot.time, snapshot.running)
        cache = self._queue
        live = np.flatnonzero(cache.live)
        prio = self.priority(snapshot, live)
        return live[np.lexsort((live, cache.submit[live], -prio))]  # ties: submit time, queue order
