"""The live loop: read Slurm, build the snapshot the simulator would build, call the same
dispatcher, and apply its starts by pinning each job to its complete node list and releasing
the batch. Slurm holds the state, so the driver can be killed at any moment: a new one rebuilds
everything from `squeue`/`sinfo` (held = undecided, released and pinned but not started =
committed, running) and from the journal of finished jobs' run times.
"""

from __future__ import annotations

import os
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from .. import interrupt
from ..dispatchers.base import Dispatcher
from ..errors import CpdispatchError
from ..job import Job
from ..predictors.base import Predictor
from ..snapshot import Allocation, QueuedJob, RunningJob, Snapshot
from ..system import System
from .commands import SlurmCommands
from .failsafe import FailSafe, check_lease_file
from .figures import RoundFigures, Tally
from .hostlist import expand
from .intents import Journal, job_from_record, job_record, read_journal
from .metrics import Metrics
from .placement import LATER, NOT_OFFERED, StartChecker, committed_units
from .priority import check_priority, slurm_weights
from .state import (
    STUCK_REASONS,
    TAG,
    Node,
    SlurmJob,
    build_system,
    read_node,
    up_partitions,
)
from .status import KEEP_ROUNDS, write_status
from .upkeep import Upkeep

MAX_REFUSALS = 3  # Slurm refusing a pin this often means a request the driver does not model


class Driver:
    """Drives the cluster `commands` talks to with `dispatcher` and `predictor`."""

    def __init__(self, dispatcher: Dispatcher, predictor: Predictor, commands: SlurmCommands, state_dir: Path, *,
                 shadow: bool = False, rehold_after: float = 3.0, default_walltime: int = 3600,
                 failsafe: FailSafe | None = None, metrics: Metrics | None = None, journal_max_bytes: int = 0,
                 max_starts: int = 0, priority: str = "papers", log: TextIO = sys.stderr,
                 clock: Callable[[], float] = time.time) -> None:
        self.dispatcher, self.predictor, self.commands = dispatcher, predictor, commands
        self.shadow, self.rehold_after, self.default_walltime = shadow, rehold_after, default_walltime
        self.failsafe = None if shadow else failsafe  # a shadow driver must not look alive
        if self.failsafe is not None:
            check_lease_file(self.failsafe.path)
        self.metrics, self.state_dir = metrics, state_dir
        self.max_starts = max_starts  # most starts applied per round (0: all); pins cost Slurm ~2 ms each
        check_priority(priority, dispatcher)
        self.priority = priority
        self.recent: deque[dict[str, Any]] = deque(maxlen=KEEP_ROUNDS)  # for status.json
        self.why: dict[str, str] = {}  # each job not started: why, this round
        self.poll = 1.0  # seconds between rounds (`run` sets it)
        self.clock, self.log = clock, log
        self.journal = Journal(state_dir / "journal.jsonl", journal_max_bytes)
        self.upkeep = Upkeep(self.failsafe, commands, self.journal)
        self.finished_log = Journal(state_dir / "finished.jsonl")
        self.tally = Tally(shadow)
        self.predicted: dict[str, int] = {}
        self.released: dict[str, float] = {}  # job -> when this driver released it
        self.unplaceable: set[str] = set()  # held jobs found unplaceable (said once each)
        self.refused_said: set[str] = set()
        self.refusals: dict[str, int] = {}  # job -> times Slurm refused it where pinned
        self.refused_pins: set[tuple[str, str]] = set()
        self.jobs: dict[str, SlurmJob] = {}  # the jobs of the last round
        self.system: System | None = None
        self.observed: set[tuple[str, int]] = set()  # finished jobs learnt from, among those Slurm shows
        self.learnt = 0
        for rec in read_journal(state_dir / "finished.jsonl"):  # learn again what was learnt
            try:
                job, runtime, end = job_from_record(rec)
            except (KeyError, TypeError, ValueError):
                continue  # not a record this driver wrote
            self.observed.add((job.id, job.submit))
            self.predictor.observe(job, runtime, end)
            self.learnt += 1
        fs = self.failsafe
        self.journal.write("start", dispatcher=dispatcher.name, predictor=predictor.name, shadow=shadow,
                           learnt=self.learnt, failsafe=fs.mode if fs else None, lease_s=fs.seconds if fs else None,
                           lease_file=str(fs.path) if fs else None)

    def say(self, text: str) -> None:
        print(text, file=self.log, flush=True)

    # -- reading -------------------------------------------------------------------------------

    def _system(self, nodes: list[Node]) -> System:
        sys_ = build_system([n for n in nodes if not n.unusable], "slurm", nodes)
        old = self.system
        if old is None or old.node_names != sys_.node_names or old.types != sys_.types or \
                not np.array_equal(old.capacity, sys_.capacity):
            self.system = sys_
            self.say(f"cluster: {sys_.describe().splitlines()[0]}")
        assert self.system is not None
        return self.system

    def _learn(self, jobs: list[SlurmJob], types: tuple[str, ...]) -> None:
        """Finished jobs' real run times go to the predictor, once each, in order of end."""
        done = [j for j in jobs if j.kind == "finished" and j.nodes and j.start > 0 and j.end >= j.start
                and (j.id, j.submit) not in self.observed]  # (a job cancelled while queued never ran)
        for j in sorted(done, key=lambda j: (j.end, j.id)):
            job = j.job(types, self.default_walltime)
            self.finished_log.write("finished", **job_record(job, j.end - j.start, j.end), state=j.state,
                                    nodes=list(j.nodes))
            self.observed.add((j.id, j.submit))
            self.predictor.observe(job, j.end - j.start, j.end)
            self.learnt += 1
        # what a long-running driver remembers is bounded by what Slurm shows
        self.observed &= {(j.id, j.submit) for j in jobs if j.kind == "finished"}
        live = {j.id for j in jobs if j.kind != "finished"}
        for per_job in (self.predicted, self.released, self.refusals):
            for gone in per_job.keys() - live:
                del per_job[gone]
        self.unplaceable &= live
        self.refused_pins = {p for p in self.refused_pins if p[0] in live}
        self.refused_said &= live
        self.tally.forget(live)

    def _predict(self, job: Job, now: int) -> int:
        if job.id not in self.predicted:
            self.predicted[job.id] = max(0, int(self.predictor.predict(job, now)))
        return self.predicted[job.id]

    # -- one round -----------------------------------------------------------------------------

    def round(self) -> RoundFigures:
        t0 = time.perf_counter()
        if self.failsafe is not None:  # before reading: jobs submitted from now on wait for this driver
            self.failsafe.renew(self.clock())
            if self.metrics is not None:
                self.metrics.renewed = self.clock()
        jobs, raw_nodes, parts = self.commands.jobs(), self.commands.nodes(), self.commands.partitions()
        now_f = self.clock()
        now = int(now_f)
        fig = RoundFigures(self.tally.rounds + 1, now, shadow=self.shadow)
        partitions = up_partitions(parts)
        nodes = [read_node(n, set(partitions)) for n in raw_nodes]
        system = self._system(nodes)
        index = system.node_index
        self.jobs = {j.id: j for j in jobs}
        self._learn(jobs, system.types)
        committed = [j for j in jobs if j.kind == "committed"]
        stuck = [j for j in committed if self._stuck(j, now_f - self.released.get(j.id, j.pinned_at))]
        if stuck:  # their capacity stays taken this round: one may have started since the read
            fig.reheld = self._take_back(stuck)
        for j in jobs:  # Slurm refused a pin: it holds the job itself (BadConstraints) or we did
            refused = (j.kind == "held" or j in stuck) and any(j.reason.startswith(r) for r in STUCK_REASONS)
            if refused and j.admin_comment.startswith(TAG) and (j.id, j.admin_comment) not in self.refused_pins:
                self.refused_pins.add((j.id, j.admin_comment))  # each pin counted once
                self.refusals[j.id] = self.refusals.get(j.id, 0) + 1
        snapshot, offered = self._snapshot(now, system, index, nodes, jobs, committed, partitions)
        fig.read_s = time.perf_counter() - t0
        fig.queued, fig.running, fig.committed = len(snapshot.queued), len(snapshot.running), len(committed)
        t1 = time.perf_counter()
        decision = self.dispatcher.decide(snapshot) if snapshot.queued else None
        fig.decide_s = time.perf_counter() - t1
        t2 = time.perf_counter()
        if decision is not None and decision.starts and interrupt.received is None:  # not a cut solve
            self._apply(fig, snapshot, offered, decision.starts, decision.status, partitions, index, nodes)
        if self.failsafe is not None:
            fig.taken, fig.deferred = self.upkeep.keep(jobs, now_f, set(fig.starts) | set(fig.reheld), self.poll)
        fig.apply_s = time.perf_counter() - t2
        acted = any(fig.actions().values())
        if acted or fig.queued or fig.round % 60 == 1:  # idle rounds: one in 60 (the journal grows less)
            self.journal.write("round", round=fig.round, now=now, queued=fig.queued, running=fig.running,
                               committed=fig.committed, read_s=round(fig.read_s, 4),
                               decide_s=round(fig.decide_s, 4), apply_s=round(fig.apply_s, 4), starts=fig.starts,
                               reheld=fig.reheld, taken=fig.taken, deferred=fig.deferred)
        self.tally.count(fig)
        self._report(fig)
        if acted:
            self.say(fig.line())
        return fig

    def _report(self, fig: RoundFigures) -> None:
        """status.json (for `slurm status`) and the metrics, once per round."""
        if self.metrics is not None:
            self.metrics.observe(fig)
        self.recent.append({"round": fig.round, "time": fig.time, "queued": fig.queued, "running": fig.running,
                            "started": len(fig.starts), "read_ms": fig.read_s * 1e3, "decide_ms": fig.decide_s * 1e3,
                            "apply_ms": fig.apply_s * 1e3})
        fs = self.failsafe
        started = set(fig.starts)
        write_status(self.state_dir, {
            "t": self.clock(), "round": fig.round, "pid": os.getpid(), "dispatcher": self.dispatcher.name,
            "predictor": self.predictor.name, "shadow": self.shadow,
            "failsafe": {"mode": fs.mode, "seconds": fs.seconds, "file": str(fs.path)} if fs else None,
            "rounds": list(self.recent), "counts": self.tally.counts,
            "waiting": [{"job": j, "why": w} for j, w in self.why.items() if j not in started],
        })

    def _stuck(self, job: SlurmJob, age: float) -> bool:
        """A released job that should go back to the queue: Slurm says it cannot run where it
        is pinned (after its next tick); or it waits for its nodes (`Resources`) past `rehold_after`; or, not yet looked
        at by Slurm's scheduler (reason None), past 4 x `rehold_after` (a loaded controller)."""
        if any(job.reason.startswith(r) for r in STUCK_REASONS):
            return age >= 1.0  # a reason older than our release (Slurm's next tick renews it) is not a verdict
        return age > (4 * self.rehold_after if job.reason in ("None", "") else self.rehold_after)

    def _take_back(self, stuck: list[SlurmJob]) -> list[str]:
        """Released jobs that did not start (their nodes are not free, or Slurm says they cannot
        run there) return to the queue (`Upkeep.take_back`)."""
        ids = [j.id for j in stuck]
        self.journal.write("rehold", jobs=ids, reasons=[j.reason for j in stuck], shadow=self.shadow)
        if self.shadow:
            return []
        for i in ids:
            self.released.pop(i, None)
        return self.upkeep.take_back(stuck)

    def _snapshot(self, now: int, system: System, index: dict[str, int], nodes: list[Node], jobs: list[SlurmJob],
                  committed: list[SlurmJob], partitions: dict[str, list[str]]
                  ) -> tuple[Snapshot, dict[str, SlurmJob]]:
        """What the simulator would show the dispatcher now. Capacity that Slurm's counters do not
        yet include (released, not started) is taken off the free amounts and shown as running."""
        usable = [n for n in nodes if not n.unusable]
        free = system.capacity - np.array([[n.used.get(t, 0) for t in system.types] for n in usable],
                                          dtype=np.int64).reshape(system.capacity.shape)
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
            self.why[j.id] = why or f"offered to {self.dispatcher.name}, which did not start it"
            if why:
                if j.id not in self.unplaceable:
                    self.unplaceable.add(j.id)
                    self.say(f"job {j.id} stays held: {why}")
                    self.journal.write("unplaceable", job=j.id, reason=why)
                continue
            queued.append(QueuedJob(job, self._predict(job, now)))
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
        pred = self._predict(j.job(system.types, self.default_walltime), now)
        if self.predictor.corrects_running and j.start + pred <= now:
            pred = self.predicted[j.id] = int(self.predictor.extend(job, now - j.start, pred))
        return [RunningJob(job, j.start, pred, Allocation(tuple(on), (1,) * len(on)))]

    def _committed(self, j: SlurmJob, now: int, system: System, index: dict[str, int],
                   free: np.ndarray) -> list[RunningJob]:
        """A released job not yet started, as running from now on its pinned nodes (taken off
        `free`: `committed_units`)."""
        on, counts = committed_units(j, system, index, free)
        if not on:
            return []
        job = j.job(system.types, self.default_walltime)
        pred = self._predict(job, now)
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

    def _apply(self, fig: RoundFigures, snapshot: Snapshot, offered: dict[str, SlurmJob], starts: Any,
               status: str, partitions: dict[str, list[str]], index: dict[str, int], nodes: list[Node]) -> None:
        """Check each start against what the starts before it leave; pin and release the good ones."""
        system = snapshot.system
        checker = StartChecker(snapshot, offered, partitions, index, nodes)
        pinned: list[tuple[str, list[str]]] = []
        waits: list[str] = []  # LATER: decided again next round
        for s in starts:
            units, why = checker.check(s)
            if why == LATER:
                waits.append(s.job_id)
            elif units is None:
                fig.refused.append(s.job_id)
                self.journal.write("refused", job=s.job_id, reason=why, **({} if why == NOT_OFFERED else
                                                                         {"nodes": list(s.nodes)}))
                if why != NOT_OFFERED and s.job_id not in self.refused_said:  # said once; journal: each round
                    self.refused_said.add(s.job_id)
                    self.say(f"job {s.job_id}: not started where the dispatcher chose, {why}; it stays held")
            if units is None:
                continue
            if why:
                fig.adjusted.append(s.job_id)
                self.journal.write("adjusted", job=s.job_id, chosen=[system.node_names[n] for n in s.nodes],
                                   nodes=[system.node_names[n] for n in units], reason=why)
            pinned.append((s.job_id, [system.node_names[n] for n in sorted(set(units))]))
        later = pinned[self.max_starts:] if self.max_starts else []  # decided again next round
        pinned = pinned[:len(pinned) - len(later)]
        self.journal.write("decision", round=fig.round, status=status, shadow=self.shadow, next_round=[
            i for i, _ in later] + waits, starts=[{"job": i, "nodes": n} for i, n in pinned])
        fig.starts = [i for i, _ in pinned] if self.shadow else self._pin_and_release(fig, pinned)

    def _pin_and_release(self, fig: RoundFigures, pinned: list[tuple[str, list[str]]]) -> list[str]:
        """The jobs pinned (journalled before the command runs), those whose pin took (read back)
        released in one command; returns those released."""
        if not pinned:
            return []
        comment = f"{TAG}{self.dispatcher.name}:{int(self.clock())}:{fig.round}"
        self.journal.write("pins", starts=[{"job": j, "nodes": n} for j, n in pinned], comment=comment)
        out = self.commands.pin(pinned, comment)
        self.journal.write("result", command="pin", jobs=[j for j, _ in pinned], rc=out.returncode,
                           stderr=out.stderr[-300:])
        have = self._read_back()
        ok = [j for j, names in pinned if sorted(expand(have.get(j, ""))) == sorted(names)]
        fig.failed = [j for j, _ in pinned if j not in set(ok)]
        if fig.failed:  # (a job that started or was cancelled meanwhile, a node gone)
            self.say(f"{len(fig.failed)} pin(s) did not take (first: job {fig.failed[0]}): {out.stderr[-200:]}")
        if ok:
            self.journal.write("release", jobs=ok)
            out = self.commands.release(ok)
            self.journal.write("result", command="release", jobs=ok, rc=out.returncode, stderr=out.stderr[-300:])
            if not out.ok:
                self.say(f"release of {len(ok)} jobs: exit {out.returncode}: {out.stderr[-200:]}")
            released_at = self.clock()
            for job_id in ok:
                self.released[job_id] = released_at
        return ok

    def _read_back(self) -> dict[str, str]:
        try:
            return self.commands.required_nodes()
        except CpdispatchError:  # nothing is released that may not be pinned
            return {}

    # -- the loop ------------------------------------------------------------------------------

    def run(self, poll: float = 1.0, once: bool = False) -> dict[str, Any]:
        """Rounds every `poll` seconds until a signal (or after one round with `once`); returns
        the summary. A round whose reading fails (slurmctld restarting, a timeout) is skipped:
        Slurm keeps every job, and the next round reads again."""
        self.poll = poll
        while True:
            t0 = time.monotonic()
            try:
                self.round()
            except CpdispatchError as exc:
                if once:
                    raise
                self.tally.failed_reads += 1
                if self.metrics is not None:
                    self.metrics.failed_reads.inc()
                self.journal.write("read_failed", error=str(exc)[-300:])
                self.say(f"round skipped: {exc}")
            if once or interrupt.received is not None:
                break
            while time.monotonic() - t0 < poll and interrupt.received is None:
                time.sleep(min(0.05, poll))
            if interrupt.received is not None:
                break
        return self.summary()

    def summary(self) -> dict[str, Any]:
        out = self.tally.summary()
        self.journal.write("summary", **out)
        return out

    def close(self) -> None:
        self.journal.close()
        self.finished_log.close()
