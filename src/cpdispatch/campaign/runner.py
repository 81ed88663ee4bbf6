"""Running a campaign: each run is one Dask task that calls `cpd.simulate` and writes its folder.

A run is complete when `runs/<key>/run.json` exists: the task writes everything into a temporary
folder and renames it when done, so an interrupted or killed run leaves no folder that looks
complete, and the next `campaign run` does it again. A failed run leaves `runs/<key>.failed.json`
(error and traceback): never a result, retried by the next `campaign run` unless told not to.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..system import load_system
from .spec import Campaign, run_key, versions

RUNS = "runs"


def run_dir(out: Path, key: str) -> Path:
    return out / RUNS / key


def failed_file(out: Path, key: str) -> Path:
    return out / RUNS / f"{key}.failed.json"


def is_done(out: Path, key: str) -> bool:
    return (run_dir(out, key) / "run.json").is_file()


def complete_runs(out: Path) -> list[Path]:
    """The `run.json` of every complete run, sorted. A run cut short between writing its run.json
    and its rename is a hidden `.partial` folder, which a plain `*` glob also matches."""
    return sorted(p for p in (out / RUNS).glob("*/run.json") if not p.parent.name.startswith("."))


@lru_cache(maxsize=2)
def _read(path: str, system: str, fmt: str, limit: int | None, skip: int) -> Any:
    """A worker reads each trace once, whatever the number of its runs (results never change
    the workload: simulate copies what it scales)."""
    from .. import api

    return api.read_workload(path, load_system(system), fmt=fmt, limit=limit, skip=skip)


def build_workload(settings: dict[str, Any]) -> Any:
    """The run's jobs: generator seed = replica; a trace's submit times jittered by ± `jitter` s
    (seed = replica), then sorted again."""
    from ..workloads import stretch_durations
    from ..workloads.generator import generate_eurora

    w = settings["workload"]
    if "generate" in w:
        return stretch_durations(generate_eurora(w["jobs"], settings["replica"], w.get("gpu_share"),
                                                 w.get("mix", "eurora")), w.get("duration_factor", 1.0))
    workload = _read(w["path"], w["system"], w["format"], w["limit_jobs"], w["skip_jobs"])
    jitter = settings["jitter"]
    if not jitter:
        return workload
    rng = np.random.default_rng(settings["replica"])
    shifts = rng.integers(-jitter, jitter + 1, size=len(workload.jobs))
    jobs = [replace(j, submit=max(0, j.submit + int(d)), recorded_wait=None) for j, d in zip(workload.jobs, shifts)]
    jobs.sort(key=lambda j: j.submit)
    return replace(workload, jobs=jobs, origin=None, notes={**workload.notes, "jitter": f"± {jitter} s, seed "
                                                                                      f"{settings['replica']}"})


def run_one(settings: dict[str, Any], out: str) -> dict[str, Any]:
    """The Dask task: simulate one run and write `runs/<key>/` (schedule, decisions, summary and
    run.json). Returns {key, status, error, wall_s}; never raises for a failing run."""
    from .. import api

    key = run_key(settings)
    root = Path(out)
    t0 = time.perf_counter()
    tmp = root / RUNS / f".{key}.{uuid.uuid4().hex[:8]}.partial"
    try:
        d = settings["dispatcher"]
        result = api.simulate(
            load_system(settings["workload"]["system"]),
            build_workload(settings), d["name"], settings["predictor"], d["options"],
            load_factor=settings["load_factor"], seed=settings["replica"],
            kill_at_walltime=settings["kill_at_walltime"], room=settings.get("room", False),
            charge_dispatch_time=settings.get("charge_dispatch_time", False),
        )
        result.save(tmp, parquet=True, plots=False)
        (tmp / "schedule.csv").unlink()  # the parquet holds the same table, 5-10x smaller
        record = {"key": key, "settings": settings, "versions": versions(), "status": "done",
                  "solver": result.summary["options"].get("dispatcher_options", {}),
                  "wall_s": time.perf_counter() - t0, "host": os.uname().nodename, "worker": _worker_name()}
        (tmp / "run.json").write_text(json.dumps(record, indent=2, sort_keys=True, default=str) + "\n")
        final = run_dir(root, key)
        if final.exists():  # done meanwhile by another worker (a retried task): keep the first
            shutil.rmtree(tmp)
        else:
            os.replace(tmp, final)
        failed_file(root, key).unlink(missing_ok=True)
        return {"key": key, "status": "done", "error": "", "wall_s": record["wall_s"]}
    except Exception as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        return record_failure(root, settings, f"{type(exc).__name__}: {exc}", traceback.format_exc(),
                              time.perf_counter() - t0)


def _worker_name() -> str | None:
    """The Dask worker running this task (None outside Dask)."""
    try:
        from distributed import get_worker

        return str(get_worker().name)
    except (ImportError, ValueError):
        return None


def plan(campaign: Campaign, out: Path, retry_failed: bool = True) -> tuple[list[dict[str, Any]], int, int]:
    """The runs still to do, and how many are complete and failed-but-not-retried."""
    todo, done, skipped = [], 0, 0
    for settings in campaign.runs:
        key = run_key(settings)
        if is_done(out, key):
            done += 1
        elif not retry_failed and failed_file(out, key).exists():
            skipped += 1
        else:
            todo.append(settings)
    return todo, done, skipped


def execute(
    todo: list[dict[str, Any]], out: Path, workers: int | None, scheduler: str | None,
    on_result: Callable[[dict[str, Any]], None],
) -> None:
    """Run `todo` as Dask tasks (a LocalCluster of `workers` processes, or the scheduler at
    `scheduler`); call `on_result` as each ends. An exception here (Ctrl-C: `Interrupted`)
    cancels the tasks not yet done; complete runs stay complete."""
    from dask.distributed import Client, LocalCluster, as_completed

    cluster = None
    if scheduler is None:
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                               dashboard_address=None)
    try:
        with Client(scheduler or cluster) as client:
            by_key = {f"run-{run_key(s)}": s for s in todo}
            futures = [client.submit(run_one, s, str(out), key=k, pure=False) for k, s in by_key.items()]
            try:
                for future in as_completed(futures):
                    try:
                        outcome = future.result()
                    except Exception as exc:  # the task's workers died too often: Dask gave up on it
                        outcome = record_failure(out, by_key[str(future.key)], f"{type(exc).__name__}: {exc}",
                                                 traceback.format_exc())
                    outcome["running"] = sum(len(tasks) for tasks in client.processing().values())
                    on_result(outcome)
            finally:
                client.cancel(futures)
    finally:
        if cluster is not None:
            cluster.close()


def record_failure(out: Path, settings: dict[str, Any], error: str, trace: str, wall_s: float = 0.0
                   ) -> dict[str, Any]:
    """Write `runs/<key>.failed.json` (whole: temporary name, then rename); return the outcome."""
    key = run_key(settings)
    text = json.dumps({"key": key, "settings": settings, "versions": versions(), "status": "failed",
                       "error": error, "traceback": trace}, indent=2, default=str)
    part = failed_file(out, key).with_suffix(".partial")
    part.write_text(text + "\n")
    os.replace(part, failed_file(out, key))
    return {"key": key, "status": "failed", "error": error, "wall_s": wall_s}


def clean_partial(out: Path) -> int:
    """Remove what runs cut short left behind (one `campaign run` per folder at a time)."""
    gone = 0
    for path in (out / RUNS).glob(".*.partial"):
        shutil.rmtree(path, ignore_errors=True)
        gone += 1
    for path in (out / RUNS).glob("*.failed.partial"):
        path.unlink(missing_ok=True)
    return gone
