"""Run metrics (summary.json) and timelines, computed from a SimulationResult alone.

Definitions (AccaSim's where it has one, so numbers compare with the papers):

- wait = start - submit; run = end - start (the time the job actually held its resources, which
  is the trace runtime unless the job was killed at its walltime).
- slowdown = (wait + run) / run; a job with run 0 has slowdown max(1, wait) (AccaSim's rule).
  Not rounded per job (AccaSim rounds to 2 decimals; we round only when reporting).
- bounded slowdown = max(1, (wait + run) / max(run, 10)).
- Wait and slowdown statistics are over started jobs (completed + killed); rejected jobs never
  ran. A statistic over an empty set is None (null in JSON), never a made-up 0.
- makespan = last end - first start (AccaSim's "last completion - first dispatch").
- utilization[type] = sum(units * req * run) / (capacity * span), span = last end - first
  submit of the workload: the time-averaged share of capacity in use over the whole run.
  Dispatchers that finish the same jobs by the same last end all get the same value (the drain
  after the last submission dominates it), hence also
- utilization_submit[type]: the same share over the submit window (first to last submission, whose
  length is `submit_window`), which tells them apart; None when that window is empty.
- sd_* = sample standard deviation over jobs (ddof = 1; the papers' error bars), None below 2 jobs.
- by_duration: the same statistics per class of real run time, short < 1 h <= medium <= 5 h <
  long (CP'19 Fig. 4); by_queue: per queue of the trace (the 2014 paper's Tables 4-5; jobs
  without one under "-").
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from .accuracy import prediction_accuracy
from .records import SimulationResult

BOUND_S = 10  # bounded slowdown threshold, seconds
#: CP'19 Fig. 4's duration classes: upper bounds in seconds of short and medium (inclusive of 5 h)
SHORT_S, MEDIUM_S = 3600, 5 * 3600


def _stat(x: np.ndarray, fn: str, q: float = 50.0) -> float | None:
    """mean/max/percentile of x as a plain float, None when x is empty."""
    if x.size == 0:
        return None
    if fn == "mean":
        return float(x.mean())
    if fn == "max":
        return float(x.max())
    if fn == "sd":
        return float(x.std(ddof=1)) if x.size > 1 else None
    return float(np.percentile(x, q))


def _job_stats(a: dict[str, np.ndarray], mask: np.ndarray) -> dict[str, Any]:
    """Jobs, mean and sample sd of wait, slowdown and bounded slowdown over the jobs in `mask`."""
    out: dict[str, Any] = {"jobs": int(mask.sum())}
    for key, name in (("wait", "wait"), ("slowdown", "slowdown"), ("bounded_slowdown", "bounded_slowdown")):
        x = a[key][mask]
        out[f"avg_{name}"] = _stat(x, "mean")
        out[f"sd_{name}"] = _stat(x, "sd")
    return out


def duration_classes(run: np.ndarray) -> np.ndarray:
    """'short' / 'medium' / 'long' per job by real run time (CP'19 Fig. 4)."""
    return np.where(run < SHORT_S, "short", np.where(run <= MEDIUM_S, "medium", "long"))


def slowdowns(wait: np.ndarray, run: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Slowdown ((wait + run) / run; the wait itself, at least 1, for a zero run) and bounded
    slowdown (run at least BOUND_S, at least 1) per job: the one definition of both."""
    safe = np.where(run > 0, run, 1)
    slowdown = np.where(run > 0, (wait + run) / safe, np.maximum(1, wait)).astype(np.float64)
    return slowdown, np.maximum(1.0, (wait + run) / np.maximum(run, BOUND_S))


def job_arrays(result: SimulationResult) -> dict[str, np.ndarray]:
    """Per started job (completed + killed): submit, start, end, wait, run, slowdown, bsld and
    its queue ("-": none)."""
    started = [r for r in result.records if r.start is not None and r.end is not None]
    submit = np.fromiter((r.job.submit for r in started), dtype=np.int64, count=len(started))
    start = np.fromiter((r.start for r in started), dtype=np.int64, count=len(started))
    end = np.fromiter((r.end for r in started), dtype=np.int64, count=len(started))
    wait = start - submit
    run = end - start
    slowdown, bsld = slowdowns(wait, run)
    queue = np.array([r.job.queue or "-" for r in started], dtype=object)
    return {"submit": submit, "start": start, "end": end, "wait": wait, "run": run,
            "slowdown": slowdown, "bounded_slowdown": bsld, "queue": queue}


def _used_area(result: SimulationResult, window: tuple[int, int] | None = None) -> np.ndarray:
    """Per type, resource-seconds used by started jobs: sum of units * req * run (one matmul),
    counting only the part of each run inside `window` when one is given."""
    started = [r for r in result.records if r.start is not None and r.end is not None]
    if not started:
        return np.zeros(len(result.system.types), dtype=np.float64)
    req = np.array([r.job.req for r in started], dtype=np.float64).reshape(len(started), -1)
    start = np.array([r.start for r in started], dtype=np.float64)
    end = np.array([r.end for r in started], dtype=np.float64)
    if window is not None:
        start, end = np.clip(start, *window), np.clip(end, *window)
    weight = np.array([r.job.units for r in started], dtype=np.float64) * (end - start)
    return np.asarray(weight @ req, dtype=np.float64)


def _submit_utilization(result: SimulationResult) -> tuple[dict[str, float | None], int]:
    """Per type, the share of capacity in use from the first to the last submission, and that
    window's length (0, and None per type, without two distinct submit times)."""
    submits = [r.job.submit for r in result.records]
    window = (min(submits), max(submits)) if submits else (0, 0)
    length = window[1] - window[0]
    area = _used_area(result, window) if length > 0 else None
    return {t: (float(area[k] / (cap * length)) if area is not None and cap > 0 else None)
            for k, (t, cap) in enumerate(zip(result.system.types, result.system.totals, strict=True))}, length


def summarize(result: SimulationResult) -> dict[str, Any]:
    """The summary.json dictionary (plain JSON types only)."""
    a = job_arrays(result)
    return {
        "system": result.system.name,
        "dispatcher": result.dispatcher,
        "predictor": result.predictor,
        **_counts(result, a),
        **_job_statistics(a),
        **_span_and_utilization(result, a),
        **_dispatch_statistics(result),
        **({"room": dict(result.room)} if result.room is not None else {}),
        "prediction": prediction_accuracy(result.records),
        "sim_wall_s": float(result.sim_wall_s),
        "peak_rss_mb": float(result.peak_rss_mb),
        "options": dict(result.options),
        "notes": dict(result.notes),
    }


def _counts(result: SimulationResult, a: dict[str, np.ndarray]) -> dict[str, Any]:
    """Jobs per final status, and the lines and starts the run left out."""
    status = Counter(r.status for r in result.records)
    return {
        "jobs": len(result.records),
        "completed": status.get("completed", 0),
        "killed": status.get("killed", 0),
        "rejected": status.get("rejected", 0),
        **({"running": status.get("running", 0), "interrupted": result.interrupted} if result.interrupted else {}),
        "started": int(a["wait"].size),
        "skipped_lines": len(result.skipped),
        "refused_starts": len(result.refused),
    }


def _job_statistics(a: dict[str, np.ndarray]) -> dict[str, Any]:
    """Wait and slowdown statistics over started jobs, overall, per duration class and per queue."""
    wait = a["wait"]
    classes = duration_classes(a["run"])
    return {
        "avg_wait": _stat(wait, "mean"),
        "sd_wait": _stat(wait, "sd"),
        "max_wait": _stat(wait, "max"),
        "p50_wait": _stat(wait, "pct", 50),
        "p95_wait": _stat(wait, "pct", 95),
        "avg_slowdown": _stat(a["slowdown"], "mean"),
        "sd_slowdown": _stat(a["slowdown"], "sd"),
        "max_slowdown": _stat(a["slowdown"], "max"),
        "avg_bounded_slowdown": _stat(a["bounded_slowdown"], "mean"),
        "sd_bounded_slowdown": _stat(a["bounded_slowdown"], "sd"),
        "max_bounded_slowdown": _stat(a["bounded_slowdown"], "max"),
        "by_duration": {c: _job_stats(a, classes == c) for c in ("short", "medium", "long")},
        "by_queue": {q: _job_stats(a, a["queue"] == q) for q in sorted(set(a["queue"].tolist()))},
    }


def _span_and_utilization(result: SimulationResult, a: dict[str, np.ndarray]) -> dict[str, Any]:
    """First submit, first start, last end, makespan and the utilization shares (module docstring)."""
    types = result.system.types
    totals = result.system.totals
    first_submit = min((r.job.submit for r in result.records), default=None)
    last_end = int(a["end"].max()) if a["end"].size else None
    makespan = int(last_end - a["start"].min()) if last_end is not None else 0
    span = last_end - first_submit if last_end is not None and first_submit is not None else 0
    area = _used_area(result)
    utilization = {
        t: (float(area[k] / (totals[k] * span)) if span > 0 and totals[k] > 0 else 0.0)
        for k, t in enumerate(types)
    }
    submit_util, submit_window = _submit_utilization(result)
    return {
        "first_submit": first_submit,
        "first_start": int(a["start"].min()) if a["start"].size else None,
        "last_end": last_end,
        "makespan": makespan,
        "utilization": utilization,
        "utilization_span": int(span),
        "utilization_submit": submit_util,
        "submit_window": submit_window,
        "capacity": dict(zip(types, totals, strict=True)),
    }


def _dispatch_statistics(result: SimulationResult) -> dict[str, Any]:
    """The dispatcher's calls: wall and CPU time per decision, statuses, and the second stage's."""
    decisions = result.decisions
    wall = np.fromiter((d.wall_ms for d in decisions), dtype=np.float64, count=len(decisions))
    cpu = np.fromiter((d.cpu_ms for d in decisions), dtype=np.float64, count=len(decisions))
    dstatus = Counter(d.status for d in decisions)
    return {
        "dispatch_calls": len(decisions),
        "dispatch_ms_mean": _stat(wall, "mean"),
        "dispatch_ms_p50": _stat(wall, "pct", 50),
        "dispatch_ms_p99": _stat(wall, "pct", 99),
        "dispatch_ms_max": _stat(wall, "max"),
        "dispatch_cpu_ms_mean": _stat(cpu, "mean"),
        "dispatch_cpu_ms_p99": _stat(cpu, "pct", 99),
        "dispatch_cpu_ms_max": _stat(cpu, "max"),
        "decision_status": dict(sorted(dstatus.items())),
        **({"stage2": _stage2_summary(result)} if any(d.stage2 for d in decisions) else {}),
    }


def _stage2_summary(result: SimulationResult) -> dict[str, Any]:
    """The second stage's statuses (decisions per status), the queued jobs it let start earlier,
    and its time inside the decisions that ran it."""
    reports = [d.stage2 for d in result.decisions if d.stage2 is not None]
    ms = np.fromiter((s.ms for s in reports), dtype=np.float64, count=len(reports))
    return {
        "status": dict(sorted(Counter(s.status for s in reports).items())),
        "jobs_gained": sum(s.gained for s in reports),
        "ms_mean": _stat(ms, "mean"),
        "ms_p99": _stat(ms, "pct", 99),
        "ms_max": _stat(ms, "max"),
    }


def utilization_timeline(result: SimulationResult, type_name: str) -> tuple[np.ndarray, np.ndarray]:
    """Step function of the amount of `type_name` in use: `used[i]` holds from `times[i]` on.

    Absolute amounts (divide by `system.totals` for a share). Starts and ends at the same instant
    are netted, so zero-length jobs leave no spike.
    """
    k = result.system.type_index(type_name)
    starts, ends, amount = [], [], []
    for r in result.records:
        if r.start is not None and r.end is not None and r.end > r.start and r.job.req[k]:
            starts.append(r.start)
            ends.append(r.end)
            amount.append(r.job.units * r.job.req[k])
    if not starts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    amt = np.array(amount, dtype=np.int64)
    t = np.concatenate([np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64)])
    d = np.concatenate([amt, -amt])
    return _step(t, d)


def _step(t: np.ndarray, delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge deltas at equal times and accumulate: (unique times, level after each time)."""
    order = np.argsort(t, kind="stable")
    t, delta = t[order], delta[order]
    level = np.cumsum(delta)
    last = np.r_[t[1:] != t[:-1], True]  # last event of each distinct time
    return t[last], level[last]


def queue_timeline(result: SimulationResult) -> tuple[np.ndarray, np.ndarray]:
    """Step function of the queue length after each dispatcher call (queued - started).

    Between calls the queue only grows by submissions, each of which triggers a call, so the level
    after a call holds until the next call. Several calls at one time: the last one wins.
    """
    n = len(result.decisions)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    t = np.fromiter((d.time for d in result.decisions), dtype=np.int64, count=n)
    q = np.fromiter((max(0, d.queued - d.started) for d in result.decisions), dtype=np.int64, count=n)
    order = np.argsort(t, kind="stable")
    t, q = t[order], q[order]
    last = np.r_[t[1:] != t[:-1], True]
    return t[last], q[last]
