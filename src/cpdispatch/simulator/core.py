"""The discrete-event simulator: replays a workload on a system and calls a dispatcher at every event.

Semantics are AccaSim's (so results compare with the papers): events are submissions and real
completions; at every event time with a non-empty queue the dispatcher is called once with the
whole queue; only "start now" decisions are enacted, each validated against the free capacity
(an invalid start is refused and recorded, never applied); jobs run their real run time. Options
add what a real system does: killing at the walltime, and charging the dispatcher's wall time.

The parts: `EventClock` (what happens when), `Cluster` (free capacity, validation), `Ledger`
(every job's fate), `Logged` (queue and running jobs, seen by dispatchers through snapshots).
The dispatcher gets a read-only `Snapshot` and never this object.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Protocol

from .. import interrupt
from ..gcpause import rare_gc
from ..job import Job
from ..predictors.base import Predictor
from ..records import DecisionRecord, SimulationResult
from ..snapshot import Decision, QueuedJob, RunningJob, Snapshot, Start, as_decision
from ..system import System
from ..workloads.base import Workload
from .accounting import Ledger
from .clock import STALL_ATTEMPTS, EventClock
from .cluster import Cluster
from .logged import Logged
from .room import RoomAnswerer, RoomProbe


class _Named(Protocol):
    @property
    def name(self) -> str: ...


class Deciding(Protocol):
    """What the simulator asks of a dispatcher (a `dispatchers.Dispatcher` is one): its name, its
    options (recorded with their values, attributes of the same name) and its decisions. What
    `decide` returns is checked by `as_decision`."""

    @property
    def name(self) -> str: ...
    @property
    def options(self) -> Sequence[_Named]: ...
    def decide(self, snapshot: Snapshot) -> Decision: ...


@dataclass(frozen=True)
class SimOptions:
    """Simulation switches (defaults = AccaSim semantics)."""

    kill_at_walltime: bool = False
    charge_dispatch_time: bool = False
    progress: bool | None = None  # None: a progress bar only on a terminal
    room: bool = False  # a diagnostic, off unless asked: the room another placement would give (`room.RoomProbe`,
    # which asks the `room_answerer` given to the simulator)


SnapshotHook = Callable[[Snapshot, Decision, float], None]


class Simulator:
    """One run: the mutable state the dispatcher never touches, and the event loop."""

    def __init__(
        self,
        system: System,
        workload: Workload,
        dispatcher: Deciding,
        predictor: Predictor,
        options: SimOptions | None = None,
        on_decision: SnapshotHook | None = None,
        room_answerer: Callable[[], RoomAnswerer] | None = None,
    ) -> None:
        self.system = system
        self.dispatcher = dispatcher
        self.predictor = predictor
        self.options = options or SimOptions()
        self.on_decision = on_decision
        self.ledger = Ledger(workload)
        self.clock = EventClock(workload.jobs)
        self.cluster = Cluster(system)
        self.queue: Logged[QueuedJob] = Logged()  # insertion order = queue order
        self.running: Logged[RunningJob] = Logged()
        self._charge_debt = 0.0
        self.room: RoomProbe | None = None
        if self.options.room:
            if room_answerer is None:
                raise ValueError("the room probe (SimOptions room=True) needs a room_answerer to ask")
            self.room = RoomProbe(workload.jobs, room_answerer)

    # -- events -------------------------------------------------------------------------------

    def _submit(self, job: Job, now: int) -> None:
        fit = self.system.max_units(job.req, job.one_per_node)
        if job.units > fit:
            self.ledger.reject(job.id, self.system.unfit_reason(job.units, job.req, fit, job.one_per_node))
            return
        try:
            predicted = max(0, int(self.predictor.predict(job, now)))
        except Exception as exc:
            exc.add_note(f"in predictor {self.predictor.name}.predict at simulated time {now}, job {job.id}")
            raise
        self.queue.put(job.id, QueuedJob(job, predicted))

    def _complete(self, job_id: str, now: int) -> None:
        run = self.running.pop(job_id)
        self.cluster.release(job_id)
        try:
            self.predictor.observe(run.job, now - run.start, now)
        except Exception as exc:
            exc.add_note(f"in predictor {self.predictor.name}.observe at simulated time {now}, job {job_id}")
            raise

    def _correct_overruns(self, now: int) -> None:
        """Give running jobs that outlived their prediction a new one (e.g. Tsafrir's correction)."""
        for job_id in self.clock.due_overruns():
            run = self.running.items.get(job_id)
            if run is None or run.predicted_end > now:
                continue
            elapsed = now - run.start
            new = int(self.predictor.extend(run.job, elapsed, run.predicted))
            if new > elapsed:
                self.running.put(job_id, RunningJob(run.job, run.start, new, run.alloc))
                self.clock.at_overrun(run.start + new, job_id)

    # -- dispatching ----------------------------------------------------------------------------

    def _dispatch(self, now: int) -> int:
        """Call the dispatcher once; returns the time the decided starts take effect."""
        if self.predictor.corrects_running:
            self._correct_overruns(now)
        queued = self.queue.view()  # views read as tuples (see Snapshot)
        snap = Snapshot(now, self.system, queued, self.running.view(), self.cluster.frozen_free())
        w0, c0 = time.perf_counter(), time.process_time()
        try:
            decision = self.dispatcher.decide(snap)
        except Exception as exc:  # a bug in a dispatcher: stop, saying where (simulated time, queue)
            first = ", ".join(q.job.id for q in queued[:3]) + (", ..." if len(queued) > 3 else "")
            exc.add_note(f"in dispatcher {self.dispatcher.name} at simulated time {now}, deciding on "
                         f"{len(queued)} queued jobs ({first})")
            raise
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        decision = self._by_index(as_decision(decision, self.dispatcher.name, now))
        if self.on_decision is not None:
            self.on_decision(snap, decision, wall)
        if self.room is not None:
            self.room.observe(snap, decision)
        n_queued, n_running = len(queued), len(snap.running)
        del snap, queued  # unless someone keeps the view, it needs no copy when the queue changes
        start_at = now
        if self.options.charge_dispatch_time:
            self._charge_debt += wall
            delay = int(self._charge_debt)
            self._charge_debt -= delay
            start_at = now + delay
        started = self._apply(decision.starts, now, start_at) if decision.starts else 0
        self.ledger.decisions.append(DecisionRecord(
            now, n_queued, n_running, started, wall * 1e3, cpu * 1e3,
            decision.status, decision.variables, decision.constraints, decision.objective, decision.stage2,
        ))
        return start_at

    def _by_index(self, decision: Decision) -> Decision:
        """`decision` with the node names its starts give (a `Start` may name its nodes) replaced
        by their index; an unknown name stays, for `Cluster.check` to refuse by name."""
        if not next((True for s in decision.starts for n in s.nodes if isinstance(n, str)), False):
            return decision  # the usual case: indices only
        ids: dict[Any, Any] = self.system.node_index
        return replace(decision, starts=tuple(Start(s.job_id, tuple(ids.get(n, n) for n in s.nodes))
                                              for s in decision.starts))

    def _apply(self, starts: tuple[Start, ...], now: int, start_at: int) -> int:
        """Enact the valid starts (in order, each checked against what the earlier ones left)."""
        taken = 0
        for start in starts:
            queued = self.queue.items.get(start.job_id)
            checked = self.cluster.check(queued.job, start) if queued else "job is not queued (or started twice)"
            if isinstance(checked, str):
                self.ledger.refused.append(f"t={now}: start of job {start.job_id} refused: {checked}")
                continue
            assert queued is not None
            alloc, need = checked
            job = queued.job
            self.cluster.take(job.id, alloc, need)
            self.queue.pop(job.id)
            taken += 1
            end = self.ledger.start(job, start_at, queued.predicted, alloc, self.options.kill_at_walltime)
            self.running.put(job.id, RunningJob(job, start_at, queued.predicted, alloc))
            self.clock.at_completion(end, job.id)
            if self.predictor.corrects_running:
                self.clock.at_overrun(start_at + queued.predicted, job.id)
        return taken

    # -- main loop ------------------------------------------------------------------------------

    def run(self) -> SimulationResult:
        t0 = time.perf_counter()
        clock, queue = self.clock, self.queue
        bar = _Progress(self.options.progress, len(self.ledger.records), clock.now)
        while clock.pending() or queue.items:
            if interrupt.received is not None:  # stop here: what was decided is kept
                self.ledger.interrupt(interrupt.received, clock.now)
                break
            now = clock.advance()
            if now is None:  # queued jobs, nothing running, nothing to come, several chances given
                self._reject_stalled()
                break
            for job_id in clock.due_completions():
                self._complete(job_id, now)
            for job in clock.due_submissions():
                self._submit(job, now)
            if queue.items:
                clock.floor = self._dispatch(now)
            bar.update(clock.next_job - len(queue.items) - len(self.running.items), now)
        bar.close()
        options = {
            **asdict(self.options),
            "dispatcher_options": {o.name: getattr(self.dispatcher, o.name) for o in self.dispatcher.options},
        }
        result = self.ledger.result(
            self.system, self.dispatcher.name, self.predictor.name, options, time.perf_counter() - t0
        )
        result.room = self.room.summary() if self.room is not None else None
        return result

    def _reject_stalled(self) -> None:
        reason = (f"dispatcher {self.dispatcher.name} started nothing on an idle system "
                  f"({STALL_ATTEMPTS} attempts up to t={self.clock.now})")
        for job_id in list(self.queue.items):
            self.ledger.reject(job_id, reason)
            self.queue.pop(job_id)


def simulate(
    system: System,
    workload: Workload,
    dispatcher: Deciding,
    predictor: Predictor,
    options: SimOptions | None = None,
    on_decision: SnapshotHook | None = None,
    room_answerer: Callable[[], RoomAnswerer] | None = None,
) -> SimulationResult:
    """Replay `workload` on `system`; every job ends completed, killed or rejected with a reason.
    With `options.room`, `room_answerer` makes what the room probe asks (on its first question)."""
    with rare_gc():
        return Simulator(system, workload, dispatcher, predictor, options, on_decision, room_answerer).run()


class _Progress:
    """A progress bar in jobs done (only on a terminal unless asked), updated every 2,000 jobs."""

    STEP = 2000

    def __init__(self, enabled: bool | None, total: int, t0: int) -> None:
        self.bar: Any = None
        self.total, self.t0, self.done = total, t0, 0
        if enabled or (enabled is None and sys.stderr.isatty()):
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="job", desc="simulating", smoothing=0.05, file=sys.stderr)

    def update(self, done: int, now: int) -> None:
        if self.bar is not None and done - self.done >= self.STEP:
            self.bar.update(done - self.done)
            self.bar.set_postfix_str(f"t={now - self.t0:,} s")
            self.done = done

    def close(self) -> None:
        if self.bar is not None:
            self.bar.update(self.total - self.done)
            self.bar.close()
