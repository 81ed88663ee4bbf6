"""The discrete-event simulator: replays a workload on a system and calls a dispatcher at every event.

Semantics are AccaSim's (so results compare with the papers): events are submissions and real
completions; at every event time with a non-empty queue the dispatcher is called once with the
whole queue; only "start now" decisions are enacted, each validated against the free capacity
(an invalid start is refused and recorded, never applied); jobs run their real run time. Options
add what a real system does: killing at the walltime, and charging the dispatcher's wall time.
"""

from __future__ import annotations

import heapq
import resource
import sys
import time
import weakref
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Generic, TypeVar

import numpy as np

from .dispatchers.base import Dispatcher
from .errors import CpdispatchError
from .gcpause import rare_gc
from .job import Job
from .predictors.base import Predictor
from .records import DecisionRecord, JobRecord, SimulationResult
from .snapshot import Allocation, Decision, LiveView, QueuedJob, RunningJob, Snapshot, Start
from .system import System
from .workloads.base import Workload

#: Attempts on an idle system with a non-empty queue before the remaining jobs are rejected.
STALL_ATTEMPTS = 3


@dataclass(frozen=True)
class SimOptions:
    """Simulation switches (defaults = AccaSim semantics)."""

    kill_at_walltime: bool = False
    charge_dispatch_time: bool = False
    progress: bool | None = None  # None: a progress bar only on a terminal


SnapshotHook = Callable[[Snapshot, Decision, float], None]


T = TypeVar("T")


class Logged(Generic[T]):
    """One of the simulator's dicts (queue, running jobs) with what its `LiveView`s need: the logs
    of items put in and taken out, and the last view, frozen before the dict changes if anyone
    still holds it (so a snapshot never changes, and building one costs O(1)).

    Once the logs outgrow the contents by far, they start afresh (new lists, holding the
    contents): memory stays proportional to the contents, and a dispatcher following the old
    lists sees new ones and reads the contents whole once.
    """

    #: Start new logs once they hold more than this + 4 x the contents.
    SLACK = 4096

    def __init__(self) -> None:
        self.items: dict[str, T] = {}
        self.added: list[T] = []
        self.removed: list[T] = []
        self._view: weakref.ref[LiveView[T]] | None = None

    def view(self) -> LiveView[T]:
        if len(self.added) > self.SLACK + 4 * len(self.items):
            self.added, self.removed = list(self.items.values()), []
        view = LiveView(self.items, self.added, self.removed)
        self._view = weakref.ref(view)
        return view

    def put(self, key: str, value: T) -> None:
        """Add (or replace) `key`; a replaced item is logged as taken out, then the new one as put in."""
        self._changing()
        old = self.items.get(key)
        if old is not None:
            self.removed.append(old)
        self.items[key] = value
        self.added.append(value)

    def pop(self, key: str) -> T:
        self._changing()
        value = self.items.pop(key)
        self.removed.append(value)
        return value

    def _changing(self) -> None:
        if self._view is not None:
            view = self._view()
            if view is not None:
                view.freeze()
            self._view = None


class Simulator:
    """One run: holds the mutable state the dispatcher never touches."""

    def __init__(
        self,
        system: System,
        workload: Workload,
        dispatcher: Dispatcher,
        predictor: Predictor,
        options: SimOptions | None = None,
        on_decision: SnapshotHook | None = None,
    ) -> None:
        self.system = system
        self.workload = workload
        self.dispatcher = dispatcher
        self.predictor = predictor
        self.options = options or SimOptions()
        self.on_decision = on_decision
        self.free = np.array(system.capacity, dtype=np.int64, copy=True)
        self.records = [JobRecord(job) for job in workload.jobs]
        self.index = {job.id: i for i, job in enumerate(workload.jobs)}
        if len(self.index) != len(workload.jobs):
            dup = Counter(j.id for j in workload.jobs).most_common(1)[0][0]
            raise CpdispatchError(f"{workload.source}: job id '{dup}' appears more than once")
        self.queue: Logged[QueuedJob] = Logged()  # insertion order = queue order
        self.running: Logged[RunningJob] = Logged()
        self._node_ints = tuple(range(system.n_nodes))
        self.completions: list[tuple[int, int, str]] = []  # (end, seq, job id)
        self.overruns: list[tuple[int, int, str]] = []  # (predicted end, seq, job id)
        self.decisions: list[DecisionRecord] = []
        self.refused: list[str] = []
        self._seq = 0
        self._charge_debt = 0.0
        self._fit_cache: dict[tuple[int, ...], int] = {}

    # -- events -------------------------------------------------------------------------------

    def _submit(self, job: Job, now: int) -> None:
        fit = self._fit_cache.get(job.req)
        if fit is None:
            fit = self._fit_cache[job.req] = self.system.max_units(job.req)
        if job.units > fit:
            rec = self.records[self.index[job.id]]
            rec.status = "rejected"
            want = ", ".join(f"{t} {a}" for t, a in zip(self.system.types, job.req) if a)
            rec.reason = (
                f"needs {job.units} units of {{{want}}} but at most {fit} fit on the empty system"
            )
            return
        try:
            predicted = max(0, int(self.predictor.predict(job, now)))
        except Exception as exc:
            exc.add_note(f"in predictor {self.predictor.name}.predict at simulated time {now}, job {job.id}")
            raise
        self.queue.put(job.id, QueuedJob(job, predicted))

    def _complete(self, job_id: str, now: int) -> None:
        run = self.running.pop(job_id)
        self._release(run.job, run.alloc)
        rec = self.records[self.index[job_id]]
        assert rec.start is not None
        try:
            self.predictor.observe(run.job, now - rec.start, now)
        except Exception as exc:
            exc.add_note(f"in predictor {self.predictor.name}.observe at simulated time {now}, job {job_id}")
            raise

    def _release(self, job: Job, alloc: Allocation) -> None:
        nodes, counts = alloc.nodes, alloc.counts
        if len(nodes) == 1:  # one node (most jobs): a row update without index arrays
            self.free[nodes[0]] += [counts[0] * a for a in job.req]
        else:
            self.free[list(nodes)] += np.asarray(counts, dtype=np.int64)[:, None] * np.asarray(job.req, dtype=np.int64)

    def _correct_overruns(self, now: int) -> None:
        """Give running jobs that outlived their prediction a new one (e.g. Tsafrir's correction)."""
        while self.overruns and self.overruns[0][0] <= now:
            _, _, job_id = heapq.heappop(self.overruns)
            run = self.running.items.get(job_id)
            if run is None or run.predicted_end > now:
                continue
            elapsed = now - run.start
            new = int(self.predictor.extend(run.job, elapsed, run.predicted))
            if new > elapsed:
                self.running.put(job_id, RunningJob(run.job, run.start, new, run.alloc))
                self._push(self.overruns, run.start + new, job_id)

    def _push(self, heap: list[tuple[int, int, str]], when: int, job_id: str) -> None:
        self._seq += 1
        heapq.heappush(heap, (when, self._seq, job_id))

    # -- dispatching ----------------------------------------------------------------------------

    def _dispatch(self, now: int) -> int:
        """Call the dispatcher once; returns the time the decided starts take effect."""
        if self.predictor.corrects_running:
            self._correct_overruns(now)
        free = self.free.copy()
        free.setflags(write=False)
        queued = self.queue.view()  # views read as tuples (see Snapshot)
        snap = Snapshot(now, self.system, queued, self.running.view(), free)
        w0, c0 = time.perf_counter(), time.process_time()
        try:
            decision = self.dispatcher.decide(snap)
        except Exception as exc:  # a bug in a dispatcher: stop, saying where (simulated time, queue)
            first = ", ".join(q.job.id for q in queued[:3]) + (", ..." if len(queued) > 3 else "")
            exc.add_note(f"in dispatcher {self.dispatcher.name} at simulated time {now}, deciding on "
                         f"{len(queued)} queued jobs ({first})")
            raise
        wall = time.perf_counter() - w0
        cpu = time.process_time() - c0
        if self.on_decision is not None:
            self.on_decision(snap, decision, wall)
        n_queued, n_running = len(queued), len(snap.running)
        del snap, queued  # unless someone keeps the view, it needs no copy when the queue changes
        start_at = now
        if self.options.charge_dispatch_time:
            self._charge_debt += wall
            delay = int(self._charge_debt)
            self._charge_debt -= delay
            start_at = now + delay
        started = self._apply(decision.starts, now, start_at)
        self.decisions.append(
            DecisionRecord(
                now, n_queued, n_running, started, wall * 1e3, cpu * 1e3,
                decision.status, decision.variables, decision.constraints, decision.objective,
            )
        )
        return start_at

    def _apply(self, starts: tuple[Start, ...], now: int, start_at: int) -> int:
        taken = 0
        for start in starts:
            checked = self._check(start)
            if isinstance(checked, str):
                self.refused.append(f"t={now}: start of job {start.job_id} refused: {checked}")
                continue
            queued, alloc, need = checked
            job = queued.job
            self.free[alloc.nodes[0] if len(alloc.nodes) == 1 else list(alloc.nodes)] -= need
            self.queue.pop(job.id)
            taken += 1
            rec = self.records[self.index[job.id]]
            rec.start, rec.predicted, rec.alloc = start_at, queued.predicted, alloc
            end, rec.status = start_at + job.runtime, "completed"
            wt = job.walltime
            if self.options.kill_at_walltime and wt is not None and job.runtime > wt:
                end, rec.status = start_at + wt, "killed"
                rec.reason = f"killed at its walltime of {wt} s (real run time {job.runtime} s)"
            rec.end = end
            self.running.put(job.id, RunningJob(job, start_at, queued.predicted, alloc))
            self._push(self.completions, end, job.id)
            if self.predictor.corrects_running:
                self._push(self.overruns, start_at + queued.predicted, job.id)
        return taken

    def _check(self, start: Start) -> tuple[QueuedJob, Allocation, np.ndarray | list[int]] | str:
        """The queued job, its allocation and the demand per node of it (one node: a list); or
        why the start cannot be applied."""
        queued = self.queue.items.get(start.job_id)
        if queued is None:
            return "job is not queued (or started twice)"
        job = queued.job
        if len(start.nodes) != job.units:
            return f"{len(start.nodes)} nodes given for {job.units} units"
        n_nodes = self.system.n_nodes
        if len(start.nodes) == 1:
            keys, counts = [start.nodes[0]], [1]
        else:
            pairs = Counter(start.nodes)
            keys, counts = list(pairs), list(pairs.values())
        for node in keys:
            if not (isinstance(node, int | np.integer) and 0 <= node < n_nodes):
                return f"no node with index {node!r} (node indices are 0..{n_nodes - 1})"
        if len(keys) == 1:  # one node (most jobs): compare plain ints
            node = int(keys[0])
            need1 = [counts[0] * a for a in job.req]
            for t, (have, want) in enumerate(zip(self.free[node].tolist(), need1)):
                if have < want:
                    return self._short(node, t, counts[0], want)
            # node indices as the shared int objects of `_node_ints` (records keep them all run)
            return queued, Allocation((self._node_ints[node],), (counts[0],)), need1
        by_node = sorted(zip(keys, counts))  # an Allocation lists its nodes in ascending order
        uniq = np.asarray([k for k, _ in by_node], dtype=np.int64)
        count = [c for _, c in by_node]
        need = np.asarray(count, dtype=np.int64)[:, None] * np.asarray(job.req, dtype=np.int64)
        short = self.free[uniq] < need
        if short.any():
            i, t = (int(x) for x in np.argwhere(short)[0])
            return self._short(int(uniq[i]), t, count[i], int(need[i, t]))
        return queued, Allocation(tuple(map(self._node_ints.__getitem__, uniq.tolist())), tuple(count)), need

    def _short(self, node: int, t: int, units: int, need: int) -> str:
        return (
            f"node {self.system.node_names[node]} has {self.free[node, t]} {self.system.types[t]} "
            f"free, {units} units need {need}"
        )

    # -- main loop ------------------------------------------------------------------------------

    def run(self) -> SimulationResult:
        t0 = time.perf_counter()
        jobs = self.workload.jobs
        n_jobs, nxt = len(jobs), 0
        now = jobs[0].submit if jobs else 0
        floor = now  # the clock never goes back (a charged decision moves it forward)
        stalls = 0
        bar = _progress(self.options.progress, len(self.records))
        done_before = 0
        while nxt < n_jobs or self.completions or self.queue.items:
            candidates = []
            if nxt < n_jobs:
                candidates.append(jobs[nxt].submit)
            if self.completions:
                candidates.append(self.completions[0][0])
            if candidates:
                now = max(floor, min(candidates))
                stalls = 0
            else:  # queued jobs, nothing running, nothing to come: give the dispatcher a new chance
                stalls += 1
                if stalls > STALL_ATTEMPTS:
                    self._reject_stalled(now)
                    break
                now = max(floor, now + 1)
            while self.completions and self.completions[0][0] <= now:
                _, _, job_id = heapq.heappop(self.completions)
                self._complete(job_id, now)
            while nxt < n_jobs and jobs[nxt].submit <= now:
                self._submit(jobs[nxt], now)
                nxt += 1
            if self.queue.items:
                floor = self._dispatch(now)
            if bar is not None:
                done = nxt - len(self.queue.items) - len(self.running.items)
                if done - done_before >= 2000:
                    bar.update(done - done_before)
                    bar.set_postfix_str(f"t={now - (jobs[0].submit if jobs else 0):,} s")
                    done_before = done
        if bar is not None:
            bar.update(len(self.records) - done_before)
            bar.close()
        return self._result(time.perf_counter() - t0)

    def _reject_stalled(self, now: int) -> None:
        for q in list(self.queue.items.values()):
            rec = self.records[self.index[q.job.id]]
            rec.status = "rejected"
            rec.reason = (
                f"dispatcher {self.dispatcher.name} started nothing on an idle system "
                f"({STALL_ATTEMPTS} attempts up to t={now})"
            )
            self.queue.pop(q.job.id)

    def _result(self, wall: float) -> SimulationResult:
        records = self.records + [
            JobRecord(r.job, status="rejected", reason=r.reason) for r in self.workload.rejected
        ]
        counts = Counter(r.status for r in records)
        loaded = len(self.workload.jobs) + len(self.workload.rejected)
        if counts["completed"] + counts["killed"] + counts["rejected"] != loaded:
            raise AssertionError(f"jobs lost: loaded {loaded}, accounted {dict(counts)}")
        return SimulationResult(
            system=self.system,
            dispatcher=self.dispatcher.name,
            predictor=self.predictor.name,
            records=records,
            decisions=self.decisions,
            options={
                **asdict(self.options),
                "dispatcher_options": {o.name: getattr(self.dispatcher, o.name) for o in self.dispatcher.options},
            },
            skipped=list(self.workload.skipped),
            refused=self.refused,
            notes=dict(self.workload.notes),
            sim_wall_s=wall,
            peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
        )


def simulate(
    system: System,
    workload: Workload,
    dispatcher: Dispatcher,
    predictor: Predictor,
    options: SimOptions | None = None,
    on_decision: SnapshotHook | None = None,
) -> SimulationResult:
    """Replay `workload` on `system`; every job ends completed, killed or rejected with a reason."""
    with rare_gc():
        return Simulator(system, workload, dispatcher, predictor, options, on_decision).run()


def _progress(enabled: bool | None, total: int) -> Any:
    if enabled is False or (enabled is None and not sys.stderr.isatty()):
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="job", desc="simulating", smoothing=0.05, file=sys.stderr)
