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
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from .. import interrupt
from ..dispatchers.base import Dispatcher
from ..errors import CpdispatchError
from ..predictors.base import Predictor
from ..system import System
from .commands import SlurmCommands
from .failsafe import FailSafe, check_lease_file
from .figures import RoundFigures, Tally
from .intents import Journal, job_from_record, job_record, read_journal
from .metrics import Metrics
from .priority import check_priority
from .releases import Releaser
from .state import Node, SlurmJob, build_system, read_node, up_partitions
from .status import KEEP_ROUNDS, write_status
from .upkeep import Upkeep
from .view import ClusterView


class Driver:
    """Drives the cluster `commands` talks to with `dispatcher` and `predictor`."""

    def __init__(self, dispatcher: Dispatcher, predictor: Predictor, commands: SlurmCommands, state_dir: Path, *,
                 shadow: bool = False, rehold_after: float = 3.0, default_walltime: int = 3600,
                 failsafe: FailSafe | None = None, metrics: Metrics | None = None, journal_max_bytes: int = 0,
                 max_starts: int = 0, priority: str = "papers", log: TextIO = sys.stderr,
                 clock: Callable[[], float] = time.time) -> None:
        self.dispatcher, self.predictor, self.commands = dispatcher, predictor, commands
        self.shadow, self.default_walltime = shadow, default_walltime
        self.failsafe = None if shadow else failsafe  # a shadow driver must not look alive
        if self.failsafe is not None:
            check_lease_file(self.failsafe.path)
        self.metrics, self.state_dir = metrics, state_dir
        check_priority(priority, dispatcher)
        self.priority = priority
        self.recent: deque[dict[str, Any]] = deque(maxlen=KEEP_ROUNDS)  # for status.json
        self.poll = 1.0  # seconds between rounds (`run` sets it)
        self.clock, self.log = clock, log
        self.journal = Journal(state_dir / "journal.jsonl", journal_max_bytes)
        self.upkeep = Upkeep(self.failsafe, commands, self.journal)
        self.finished_log = Journal(state_dir / "finished.jsonl")
        self.tally = Tally(shadow)
        self.view = ClusterView(dispatcher.name, predictor, default_walltime, priority, self.failsafe, self.journal,
                                self.say)
        self.releaser = Releaser(dispatcher.name, commands, self.journal, self.view, self.upkeep, self.say, clock,
                                 shadow=shadow, rehold_after=rehold_after, max_starts=max_starts)
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

    @property
    def unplaceable(self) -> set[str]:
        """Held jobs found unplaceable (they stay held until fixed by hand)."""
        return self.view.unplaceable

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
        self.view.forget(live)
        self.releaser.forget(live)
        self.tally.forget(live)

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
        stuck = self.releaser.stuck(committed, now_f)
        if stuck:  # their capacity stays taken this round: one may have started since the read
            fig.reheld = self.releaser.take_back(stuck)
        self.view.count_refusals(jobs, stuck)
        snapshot, offered = self.view.snapshot(now, system, index, nodes, jobs, committed, partitions)
        fig.read_s = time.perf_counter() - t0
        fig.queued, fig.running, fig.committed = len(snapshot.queued), len(snapshot.running), len(committed)
        t1 = time.perf_counter()
        decision = self.dispatcher.decide(snapshot) if snapshot.queued else None
        fig.decide_s = time.perf_counter() - t1
        t2 = time.perf_counter()
        if decision is not None and decision.starts and interrupt.received is None:  # not a cut solve
            self.releaser.apply(fig, snapshot, offered, decision.starts, decision.status, partitions, index, nodes)
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
            "waiting": [{"job": j, "why": w} for j, w in self.view.why.items() if j not in started],
        })

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
