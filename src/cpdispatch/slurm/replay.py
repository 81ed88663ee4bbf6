"""`cpdispatch slurm replay`: a trace's jobs submitted to a real Slurm as sleep jobs at their
(compressed) submit times, dispatched live, and the realised schedule compared job by job with
the simulator's on the same jobs: how faithful is the simulation?"""

from __future__ import annotations

import json
import math
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from .. import interrupt
from ..dispatchers.base import Dispatcher
from ..errors import CpdispatchError
from ..job import Job
from ..metrics import slowdowns
from ..predictors.base import Predictor
from ..system import System
from . import local_cluster
from .commands import SlurmCommands
from .driver import Driver
from .failsafe import FailSafe
from .figures import format_summary
from .state import SlurmJob, build_system, read_node, up_partitions

MAX_LOCAL_NODES = 64
TAG_NAME = "cpd-replay-"


@dataclass(frozen=True)
class Planned:
    """A trace job as it is replayed: offsets from the replay's start, in seconds."""

    job: Job
    at: float
    sleep: int
    limit_min: int


def plan(jobs: list[Job], scale: float) -> list[Planned]:
    """Submit times and run times divided by `scale`; walltimes too, rounded up to Slurm's whole
    minutes (at least 1); a run time never outlives its walltime (Slurm would kill it late)."""
    t0 = jobs[0].submit if jobs else 0
    out = []
    for j in jobs:
        limit = max(1, math.ceil(j.estimate / scale / 60))
        out.append(Planned(j, (j.submit - t0) / scale, min(max(1, round(j.runtime / scale)), limit * 60), limit))
    return out


def fits(job: Job, system: System) -> bool:
    """Whether the job, submitted as `sbatch_request` asks, can ever run on `system` (GPU jobs
    take one node per unit)."""
    one_per_node = bool(dict(zip(system.types, job.req)).get("gpu"))
    return system.max_units(job.req, one_per_node) >= job.units


def specs_for(system: System) -> list[local_cluster.NodeSpec]:
    """Local-cluster nodes shaped like `system`'s (core, mem in MB, gpu; at least 100 MB per core,
    Slurm's default per CPU there)."""
    extra = set(system.types) - {"core", "mem", "gpu"}
    if extra or "core" not in system.types:
        raise CpdispatchError(f"system {system.name}: a local cluster has core, mem and gpu only (not "
                              f"{', '.join(sorted(extra)) or 'without core'})")
    if system.n_nodes > MAX_LOCAL_NODES:
        raise CpdispatchError(f"system {system.name}: {system.n_nodes} nodes, but a local cluster runs at most "
                              f"{MAX_LOCAL_NODES} slurmd; use a smaller system or a running cluster (--system cluster)")
    get = {t: system.capacity[:, system.types.index(t)] if t in system.types else np.zeros(system.n_nodes, int)
           for t in ("core", "mem", "gpu")}
    return [local_cluster.NodeSpec(f"n{i + 1}", int(get["core"][i]), max(int(get["mem"][i]), 100 * int(get["core"][i])),
                                   int(get["gpu"][i])) for i in range(system.n_nodes)]


def cluster_system(commands: SlurmCommands) -> System:
    parts = up_partitions(commands.partitions())
    nodes = [read_node(n, set(parts)) for n in commands.nodes()]
    return build_system([n for n in nodes if not n.unusable], "slurm")


def sbatch_request(job: Job, types: tuple[str, ...]) -> list[str]:
    """sbatch options asking for the job's units: tasks of its cores (and memory per core), or,
    with GPUs, one node per unit (Slurm has no per-task GPU count that fits free placement)."""
    per = dict(zip(types, job.req))
    cores = max(1, per.get("core", 1))
    out = ["-c", str(cores)]
    if per.get("mem"):
        out += [f"--mem-per-cpu={math.ceil(per['mem'] / cores)}"]
    if per.get("gpu"):
        return [*out, "-N", str(job.units), "--ntasks-per-node=1", f"--gres=gpu:{per['gpu']}"]
    return [*out, "-n", str(job.units)]


class Replay:
    """Submits `planned` jobs on time while `driver` dispatches; then compares with the simulator."""

    def __init__(self, planned: list[Planned], driver: Driver, commands: SlurmCommands, types: tuple[str, ...],
                 poll: float) -> None:
        self.planned, self.driver, self.commands, self.types, self.poll = planned, driver, commands, types, poll
        self.slurm_id: dict[str, str] = {}  # trace job -> Slurm job
        self.seen: dict[str, SlurmJob] = {}  # Slurm job -> its last state seen by the driver
        self.origin = 0.0

    def _submit(self, p: Planned) -> None:
        ask = sbatch_request(p.job, self.types)
        out = self.commands.run("sbatch", "--parsable", "-J", f"{TAG_NAME}{p.job.id}", *ask, "-t", str(p.limit_min),
                                "-o", "/dev/null", "--chdir", tempfile.gettempdir(), "--wrap", f"sleep {p.sleep}")
        if not out.ok:
            raise CpdispatchError(f"sbatch of trace job {p.job.id} failed: {out.stderr[-300:]}")
        self.slurm_id[p.job.id] = out.stdout.strip().split(";")[0]

    def _settled(self, slurm_id: str) -> bool:
        """Finished, or held for good (the driver found it can never be placed)."""
        job = self.seen.get(slurm_id)
        return job is not None and (job.kind == "finished" or slurm_id in self.driver.unplaceable)

    def _done(self) -> bool:
        return len(self.slurm_id) == len(self.planned) and all(map(self._settled, self.slurm_id.values()))

    def ran(self) -> list[Planned]:
        """The replayed jobs that ran (the others stayed held for good)."""
        return [p for p in self.planned if (s := self.seen[self.slurm_id[p.job.id]]).kind == "finished" and s.nodes]

    def run(self, timeout: float) -> None:
        self.origin = time.time() + 1.0
        todo = list(self.planned)
        deadline = time.monotonic() + timeout
        while interrupt.received is None:
            t0 = time.monotonic()
            while todo and time.time() >= self.origin + todo[0].at:
                self._submit(todo.pop(0))
            self.driver.round()
            self.seen.update(self.driver.jobs)
            if self._done():
                never = [self.slurm_id[p.job.id] for p in self.planned if p not in self.ran()]
                if never:
                    self.commands.run("scancel", *never)
                return
            if time.monotonic() > deadline:
                raise CpdispatchError(f"replay not finished after {timeout:g} s ({len(self.slurm_id)} of "
                                      f"{len(self.planned)} jobs submitted); its jobs are cancelled")
            while time.monotonic() - t0 < self.poll and interrupt.received is None:
                time.sleep(0.05)

    def cancel(self) -> None:
        """Stop what this replay submitted (on an interrupted replay)."""
        if self.slurm_id:
            self.commands.run("scancel", *self.slurm_id.values())

    def _offset(self, submit: int) -> int:
        """A Slurm submit time as seconds after the replay's start (the simulator's clock)."""
        return max(0, int(round(submit - self.origin)))

    def rows(self, simulated: dict[str, tuple[int, int, str]]) -> list[dict[str, Any]]:
        """Per job: submit offset, and live and simulated wait, run time and nodes."""
        out = []
        for p in self.ran():
            s = self.seen[self.slurm_id[p.job.id]]
            sub = self._offset(s.submit)
            sim_start, sim_end, sim_nodes = simulated[p.job.id]
            out.append({"job": p.job.id, "slurm_id": s.id, "units": p.job.units, "submit_s": sub,
                        "sleep_s": p.sleep, "state": s.state, "live_wait": s.start - s.submit,
                        "sim_wait": sim_start - sub, "live_run": s.end - s.start,
                        "sim_run": sim_end - sim_start, "live_nodes": ",".join(sorted(set(s.nodes))),
                        "sim_nodes": sim_nodes})
        return out

    def simulated_jobs(self, types: tuple[str, ...]) -> list[Job]:
        """The jobs as Slurm saw them (requests read by the driver), at their real submit offsets
        and with their real run times: the simulator's input."""
        jobs = []
        for p in self.ran():
            s = self.seen[self.slurm_id[p.job.id]]
            job = s.job(types, p.limit_min * 60)
            jobs.append(replace(job, id=p.job.id, submit=self._offset(s.submit), runtime=p.sleep))
        return sorted(jobs, key=lambda j: (j.submit, j.id))


def compare(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals of the per-job comparison (waits, bounded slowdown, start differences, makespan)."""
    if not rows:
        raise CpdispatchError("no replayed job ran, so there is nothing to compare (check --skip-jobs, "
                              "--limit-jobs and the cluster's size)")
    def arr(key: str) -> np.ndarray:
        return np.array([r[key] for r in rows], dtype=float)

    live_w, sim_w, live_r, sim_r = arr("live_wait"), arr("sim_wait"), arr("live_run"), arr("sim_run")
    sub = arr("submit_s")
    live_b, sim_b = slowdowns(live_w, live_r)[1], slowdowns(sim_w, sim_r)[1]
    start_diff = (sub + live_w) - (sub + sim_w)
    return {
        "jobs": len(rows), "mean_wait_live": float(live_w.mean()), "mean_wait_sim": float(sim_w.mean()),
        "p50_wait_live": float(np.median(live_w)), "p50_wait_sim": float(np.median(sim_w)),
        "mean_bsld_live": float(live_b.mean()), "mean_bsld_sim": float(sim_b.mean()),
        "makespan_live": float((sub + live_w + live_r).max()), "makespan_sim": float((sub + sim_w + sim_r).max()),
        "mean_abs_start_diff": float(np.abs(start_diff).mean()), "p90_abs_start_diff":
            float(np.percentile(np.abs(start_diff), 90)), "mean_start_diff": float(start_diff.mean()),
        "same_nodes": float(np.mean([r["live_nodes"] == r["sim_nodes"] for r in rows])),
        "mean_run_excess": float((live_r - sim_r).mean()),
    }


def format_comparison(totals: dict[str, Any], rejected: int, held: int) -> str:
    t = totals
    lines = [f"{t['jobs']} jobs compared, live Slurm vs simulator ({rejected} never fit the system: not "
             f"submitted; {held} held for good by the driver: cancelled)",
             f"{'':<26}{'live':>10}{'simulated':>11}",
             f"{'mean wait (s)':<26}{t['mean_wait_live']:>10.1f}{t['mean_wait_sim']:>11.1f}",
             f"{'median wait (s)':<26}{t['p50_wait_live']:>10.1f}{t['p50_wait_sim']:>11.1f}",
             f"{'mean bounded slowdown':<26}{t['mean_bsld_live']:>10.2f}{t['mean_bsld_sim']:>11.2f}",
             f"{'makespan (s)':<26}{t['makespan_live']:>10.1f}{t['makespan_sim']:>11.1f}",
             f"start: live - simulated, mean {t['mean_start_diff']:+.1f} s, mean |.| {t['mean_abs_start_diff']:.1f} s, "
             f"p90 |.| {t['p90_abs_start_diff']:.1f} s; run time excess {t['mean_run_excess']:+.2f} s; "
             f"same nodes {100 * t['same_nodes']:.0f}%"]
    return "\n".join(lines)


def simulate_same(system: System, jobs: list[Job], dispatcher: Dispatcher, predictor: Predictor
                  ) -> dict[str, tuple[int, int, str]]:
    """The simulator's start, end and nodes for each job."""
    from ..api import simulate

    result = simulate(system, jobs, dispatcher, predictor)
    names = system.node_names
    return {r.job.id: (int(r.start or 0), int(r.end or 0), ",".join(sorted({names[n] for n in r.alloc.nodes})))
            for r in result.raw.records if r.start is not None}


def local_or_running(system_name: str, base: Path | None) -> tuple[str | None, Path | None]:
    """`cluster`: the running cluster ($SLURM_CONF); else start a local one shaped like the system.
    Returns (its slurm.conf or None, the folder of a cluster started here)."""
    from ..system import load_system

    if system_name == "cluster":
        return None, None
    specs = specs_for(load_system(system_name))
    root = base or Path(tempfile.mkdtemp(prefix="cpdispatch-replay-"))
    return str(local_cluster.start(specs, root)), root


@dataclass(frozen=True)
class ReplayRun:
    """What `cpdispatch slurm replay` was asked for, checked by the command line."""

    trace: str
    system: str  # "cluster" (the running one) or a preset or TOML file for a local cluster
    conf: str | None  # the running cluster's slurm.conf (None: $SLURM_CONF)
    time_scale: float
    limit_jobs: int
    skip_jobs: int
    timeout: float
    poll: float
    rehold_after: float
    state_dir: Path | None  # None: a temporary folder, removed after a replay that finished
    out: Path | None


#: a fresh, untaught dispatcher and predictor (the driver's, then the simulator's own)
Parts = Callable[[], tuple[Dispatcher, Predictor]]


def replay_trace(run: ReplayRun, parts: Parts, failsafe: Callable[[str | None], FailSafe]) -> int:
    """Replay `run.trace` on the cluster, dispatched live, then compare with the simulator; returns
    the exit code. A local cluster started here is stopped whatever happens; an interrupted or
    failed replay cancels its jobs and keeps a temporary journal to look into."""
    state_dir = run.state_dir or Path(tempfile.mkdtemp(prefix="cpdispatch-replay-state-"))
    conf, root = local_or_running(run.system, None)
    finished = False
    try:
        commands = SlurmCommands(conf or run.conf)
        system = cluster_system(commands)
        jobs = _read(run, system)
        fit = [j for j in jobs if fits(j, system)]
        planned = plan(fit, run.time_scale)
        print(f"replaying {len(planned)} jobs ({len(jobs) - len(fit)} never fit this cluster) over "
              f"{planned[-1].at if planned else 0:.0f} s of submissions; journal in {state_dir}", file=sys.stderr)
        driver = Driver(*parts(), commands, state_dir, rehold_after=run.rehold_after, failsafe=failsafe(conf))
        replay = Replay(planned, driver, commands, system.types, run.poll)
        rounds = _dispatch_live(replay, driver, run.timeout)
        if interrupt.received is not None:
            print("cpdispatch: replay interrupted; its jobs were cancelled", file=sys.stderr)
            return interrupt.exit_code(interrupt.received)
        finished = True
        _compare_with_simulator(replay, system, parts, rounds, run.out, len(jobs) - len(fit))
        return 0
    finally:
        if root is not None and conf is not None:
            local_cluster.stop(conf)
            shutil.rmtree(root, ignore_errors=True)
        if run.state_dir is None:  # a temporary journal: kept only to look into a failed replay
            if finished:
                shutil.rmtree(state_dir, ignore_errors=True)
            else:
                print(f"cpdispatch: the replay's journal is kept in {state_dir}", file=sys.stderr)


def _read(run: ReplayRun, system: System) -> list[Job]:
    from ..api import read_workload

    return read_workload(run.trace, system, limit=run.limit_jobs, skip=run.skip_jobs).jobs


def _dispatch_live(replay: Replay, driver: Driver, timeout: float) -> dict[str, Any]:
    """Run the replay until it ends or a signal comes; the driver's summary. Unless it finished,
    its jobs are cancelled: they must not wait held forever."""
    finished = False
    try:
        with interrupt.stopping_gracefully():
            replay.run(timeout)
        rounds = driver.summary()
        finished = interrupt.received is None
    finally:
        driver.close()
        if not finished:
            replay.cancel()
    return rounds


def _compare_with_simulator(replay: Replay, system: System, parts: Parts, rounds: dict[str, Any],
                            out: Path | None, never_fit: int) -> None:
    """Simulate the jobs that ran, as Slurm saw them; print the driver's `rounds` and the
    comparison (also written to `out`)."""
    import pandas as pd

    simulated = simulate_same(system, replay.simulated_jobs(system.types), *parts())
    rows = replay.rows(simulated)
    totals = compare(rows)
    print(format_summary(rounds))
    print(format_comparison(totals, never_fit, len(replay.planned) - len(replay.ran())))
    if out is not None:
        pd.DataFrame(rows).to_csv(out / "comparison.csv", index=False)
        (out / "comparison.json").write_text(json.dumps(totals, indent=1) + "\n")
        print(f"per-job comparison in {out}/comparison.csv")
