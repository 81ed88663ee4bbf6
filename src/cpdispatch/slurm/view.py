"""The dispatcher's view of a Slurm cluster: the Snapshot the simulator would build from what
Slurm shows this round, and for each job not offered, why (said once, journalled). It keeps what
the view needs from round to round: the predictions of live jobs, the jobs found unplaceable, and
how often Slurm refused a job where it was pinned."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from ..job import Job
from ..predictors.base import Predictor
from ..snapshot import Allocation, QueuedJob, RunningJob, Snapshot
from ..system import System
from .failsafe import FailSafe
from .intents import Journal
from .placement import committed_units
from .priority import slurm_weights
from .state import STUCK_REASONS, TAG, Node, SlurmJob

MAX_REFUSALS = 3  # Slurm refusing a pin this often means a request the driver does not model


class ClusterView:
    """Builds each round's Snapshot for the dispatcher named `dispatcher`."""

    def __init__(self, dispatcher: str, predictor: Predictor, default_walltime: int, priority: str,
                 failsafe: FailSafe | None, journal: Journal, say: Callable[[str], None]) -> None:
        self.dispatcher, self.predictor, self.default_walltime = dispatcher, predictor, default_walltime
        self.priority, self.failsafe, self.journal, self.say = priority, failsafe, journal, say
        self.why: dict[str, str] = {}  # each job not started: why, this round
        self.predicted: dict[str, int] = {}
        self.unplaceable: set[str] = set()  # held jobs found unplaceable (said once each)
        self.refusals: dict[str, int] = {}  # job -> times Slurm refused it where pinned
        self.refused_pins: set[tuple[str, str]] = set()
        self.room = np.zeros((0, 0), dtype=np.int64)  # this round's free amounts by Slurm's counters

    def forget(self, live: set[str]) -> None:
        """Drop what is kept about jobs Slurm no longer shows as live."""
        for per_job in (self.predicted, self.refusals):
            for gone in per_job.keys() - live:
                del per_job[gone]
        self.unplaceable &= live
        self.refused_pins = {p for p in self.refused_pins if p[0] in live}

    def count_refusals(self, jobs: list[SlurmJob], stuck: list[SlurmJob]) -> None:
        """Slurm refused a pin: it holds the job itself (BadConstraints) or we did; each pin counted once."""
        for j in jobs:
            refused = (j.kind == "held" or j in stuck) and any(j.reason.startswith(r) for r in STUCK_REASONS)
            if refused and j.admin_comment.startswith(TAG) and (j.id, j.admin_comment) not in self.refused_pins:
                self.refused_pins.add((j.id, j.admin_comment))
                self.refusals[j.id] = self.refusals.get(j.id, 0) + 1

    def predict(self, job: Job, now: int) -> int:
        if job.id not in self.predicted:
            self.predicted[job.id] = max(0, int(self.predictor.predict(job, now)))
        return self.predicted[job.id]

    def snapshot(self, now: int, system: System, index: dict[str, int], nodes: list[Node], jobs: list[SlurmJob],
                 committed: list[SlurmJob], partitions: dict[str, list[str]]
                 ) -> tuple[Snapshot, dict[str, SlurmJob]]:
        """What the simulator would show the dispatcher now. Capacity that Slurm's counters do not
        yet include (released, not started) is taken off the free amounts and shown as running."""
        usable = [n for n in nodes if not n.unusable]
        free = system.capacity - np.array([[n.used.get(t, 0) for t in system.types] for n in usable],
                                          dtype=np.int64).reshape(system.capacity.shape)
        self.room = free.copy()
        self.room.setflags(write=False)
        running = [r for j in jobs if j.kind == "running" for r in self._running(j, now, system, index)]
        running += [r for j in committed for r in self._committed(j, now, system, index, free)]
        np.clip(free, 0, None, out=free)
        free.setflags(write=False)
        queued, offered = [], {}
        self.why = {}
        for j in sorted((j for j in jobs if j.kind in ("held", "waiting", "blocked")), key=lambda j: (j.submit, j.id)):
            if j.begin_after > now:  # its user's --begin: offered from then on
                self.why[j.id] = f"its --begin is {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(j.begin_after))}"
                continue
            job = j.job(system.types, self.default_walltime)
            why = self._never(j, job, system, partitions)
            self.why[j.id] = why or f"offered to {self.dispatcher}, which did not start it"
            if why:
                if j.id not in self.unplaceable:
                    self.unplaceable.add(j.id)
                    self.say(f"job {j.id} stays held: {why}")
                    self.journal.write("unplaceable", job=j.id, reason=why)
                continue
            queued.append(QueuedJob(job, self.predict(job, now)))
            offered[j.id] = j
        if self.priority == "slurm":
            weights = slurm_weights([offered[q.job.id].priority for q in queued])
            queued = [replace(q, weight=w) for q, w in zip(queued, weights)]
        return Snapshot(now, system, tuple(queued), tuple(running), free), offered

    def _running(self, j: SlurmJob, now: int, system: System, index: dict[str, int]) -> list[RunningJob]:
        """A running job on its usable nodes, as one unit per node holding the most it holds on
        any of them (conservative for planning)."""
        on = sorted(index[n] for n in j.nodes if n in index)
        if not on:
            return []
        hull = tuple(max(j.usage.get(system.node_names[i], {}).get(t, 0) for i in on) for t in system.types)
        job = Job(id=j.id, submit=j.submit, units=len(on), req=hull, walltime=j.time_limit_s,
                  runtime=j.time_limit_s or self.default_walltime, user=j.user, name=j.name)
        pred = self.predict(j.job(system.types, self.default_walltime), now)
        if self.predictor.corrects_running and j.start + pred <= now:
            pred = self.predicted[j.id] = int(self.predictor.extend(job, now - j.start, pred))
        return [RunningJob(job, j.start, pred, Allocation(tuple(on), (1,) * len(on)))]

    def _committed(self, j: SlurmJob, now: int, system: System, index: dict[str, int],
                   free: np.ndarray) -> list[RunningJob]:
        """A released job not yet started, as running from now on its pinned nodes (taken off
        `free`: `committed_units`)."""
        on, counts = committed_units(j, system, index, self.room, free)
        if not on:
            return []
        job = j.job(system.types, self.default_walltime)
        pred = self.predict(job, now)
        return [RunningJob(replace(job, units=sum(counts)), now, pred, Allocation(tuple(on), tuple(counts)))]

    def _never(self, j: SlurmJob, job: Job, system: System, partitions: dict[str, list[str]]) -> str:
        """Why a held job cannot be offered to the dispatcher now ("" = it can)."""
        if j.kind == "blocked":
            return f"dependency not met ({j.dependency})"
        if j.priority == 0 and not j.tagged and self.failsafe is not None and self.failsafe.open:
            return "held by its user (submitted with --hold); only root can release it"
        if not any(p in partitions for p in j.partition.split(",")):
            return f"partition {j.partition} is not UP"
        if self.refusals.get(j.id, 0) >= MAX_REFUSALS:
            return (f"Slurm refused it {MAX_REFUSALS} times where it was pinned; its request has something this "
                    "driver does not model (e.g. typed GPUs, --gpus-per-task, --begin): fix or release it by hand")
        fit = system.max_units(job.req, job.one_per_node)
        if fit < job.units:
            return system.unfit_reason(job.units, job.req, fit, job.one_per_node)
        return ""
