"""Workloads: read any supported trace onto a system, write the native CSV, describe a workload.

Formats: `swf` (Parallel Workloads Archive), `alibaba` (GPU trace v2023 pod list), `native` (the
project's CSV). Every reader returns a `Workload` whose jobs are sorted by submit time, with the
jobs that can never run in `rejected` (with a reason) and malformed lines in `skipped` (or an
InputError at the first one in strict mode). Plain or gzip files, chosen by the `.gz` extension.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import CpdispatchError, InputError
from ..job import Job
from ..system import System
from .alibaba import read_alibaba
from .base import Workload
from .native import read_native, write_native
from .reading import MAX_VALUE, first_line
from .swf import read_swf

__all__ = [
    "FORMATS", "Workload", "detect_format", "format_stats", "load_workload", "scale_arrivals", "workload_stats",
    "write_native",
]

FORMATS = ("swf", "alibaba", "native")
HOUR = 3600


def detect_format(path: str) -> str:
    """`.swf[.gz]` is SWF; otherwise the first line decides (the alibaba or native header, an SWF
    comment or an 18-field line)."""
    low = path.lower()
    if low.removesuffix(".gz").endswith(".swf"):
        return "swf"
    head = first_line(path)
    if head.startswith("name,cpu_milli"):
        return "alibaba"
    if head.startswith("job_id,"):
        return "native"
    if head.startswith(";") or len(head.split()) == 18:
        return "swf"
    raise InputError(
        path, 1, None,
        "cannot tell the workload format (not .swf, no alibaba or native header); give it explicitly",
    )


def load_workload(
    path: str | Path,
    system: System,
    fmt: str = "auto",
    strict: bool = False,
    limit: int | None = None,
    skip: int = 0,
) -> Workload:
    """Read a workload onto `system`. `limit` (>= 1) keeps the first N jobs of the file (rejected
    ones included, in file order), and stops reading there; `skip` first drops the N jobs before
    them (a slice of a long trace: a congested period, say)."""
    if skip < 0:
        raise ValueError(f"skip must be >= 0, got {skip}")
    if skip:
        whole = load_workload(path, system, fmt, strict, None if limit is None else skip + limit)
        first = sorted([j.line for j in whole.jobs] + [r.job.line for r in whole.rejected])[:skip]
        cut = first[-1] if len(first) == skip else float("inf")
        whole.jobs = [j for j in whole.jobs if j.line > cut]
        whole.rejected = [r for r in whole.rejected if r.job.line > cut]
        whole.notes["slice"] = f"jobs after the first {skip:,} of the file"
        if not whole.jobs and not whole.rejected:
            raise InputError(str(path), None, None, f"no job left after skipping the first {skip:,}")
        return whole
    path = str(path)
    if fmt == "auto":
        fmt = detect_format(path)
    readers = {"swf": read_swf, "alibaba": read_alibaba, "native": read_native}
    if fmt not in readers:
        raise ValueError(f"unknown workload format {fmt!r} (known: auto, {', '.join(FORMATS)})")
    workload = readers[fmt](path, system, strict=strict, limit=limit)
    if not workload.jobs and not workload.rejected:  # nothing to simulate is a failure, not a result
        bad = workload.skipped
        raise InputError(path, None, None, f"no job could be read ({len(bad):,} malformed line(s) skipped"
                                           + (f"; the first: {bad[0]})" if bad else ")"))
    return workload


#: Load factors accepted: beyond, the workload is either one burst or spread over millennia.
LOAD_FACTOR_RANGE = (1e-3, 1e3)


def scale_arrivals(workload: Workload, factor: float) -> Workload:
    """The workload with its inter-arrival times divided by `factor` (2: twice the offered load),
    from its first submission on; run times, requests and order are unchanged.

    The usual way to load a lightly used system (the Alibaba GPU trace offers 0.3% of its GPUs)
    or to stress a dispatcher. Submit times are rounded down to whole seconds."""
    if not LOAD_FACTOR_RANGE[0] <= factor <= LOAD_FACTOR_RANGE[1]:
        raise CpdispatchError(f"load factor must be between {LOAD_FACTOR_RANGE[0]:g} and {LOAD_FACTOR_RANGE[1]:g}, "
                              f"got {factor:g}")
    if factor == 1:
        return workload
    everyone = [j.submit for j in workload.jobs] + [r.job.submit for r in workload.rejected]
    if not everyone:
        return workload
    t0 = min(everyone)
    if (max(everyone) - t0) / factor > MAX_VALUE:
        raise CpdispatchError(f"load factor {factor:g} spreads the submissions over more than 2^40 s")

    def scaled(job: Job) -> Job:
        return replace(job, submit=t0 + int((job.submit - t0) / factor), recorded_wait=None)

    notes = {**workload.notes, "load_factor": f"inter-arrival times divided by {factor:g}"}
    return Workload(
        workload.source, [scaled(j) for j in workload.jobs],
        [replace(r, job=scaled(r.job)) for r in workload.rejected], workload.skipped, notes, workload.origin,
        workload.read_s,
    )


def stretch_durations(workload: Workload, factor: float) -> Workload:
    """The workload with every run time and requested walltime multiplied by `factor`, arrivals
    unchanged: more work for the same arrivals. Why: no arrival rate makes a thousand generated
    Eurora jobs wait as long as the papers' traces did (docs/paper-profile.md, "The papers'
    contention"); in relative terms it equals a higher load factor over a longer run."""
    if not factor > 0:
        raise CpdispatchError(f"duration factor must be > 0, got {factor:g}")
    if factor == 1:
        return workload

    def longer(job: Job) -> Job:
        walltime = None if job.walltime is None else max(1, round(job.walltime * factor))
        return replace(job, runtime=round(job.runtime * factor), walltime=walltime, recorded_wait=None)

    notes = {**workload.notes, "duration_factor": f"run times and walltimes multiplied by {factor:g}"}
    return Workload(workload.source, [longer(j) for j in workload.jobs],
                    [replace(r, job=longer(r.job)) for r in workload.rejected], workload.skipped, notes,
                    workload.origin, workload.read_s)


# ---------------------------------------------------------------- statistics (cpdispatch inspect)

_PCTS = (10, 25, 50, 75, 90, 99)


def _percentiles(values: np.ndarray) -> dict[str, float]:
    if values.size == 0:
        return {}
    out = {f"p{p}": float(v) for p, v in zip(_PCTS, np.percentile(values, _PCTS))}
    out["mean"] = float(values.mean())
    out["max"] = float(values.max())
    return out


def _size_bucket(units: int) -> str:
    """Power-of-two size classes: 1, 2, 3-4, 5-8, 9-16, ..."""
    if units <= 2:
        return str(units)
    hi = 1 << (units - 1).bit_length()
    return f"{hi // 2 + 1}-{hi}"


def workload_stats(workload: Workload, system: System) -> dict[str, Any]:
    """Facts an operator checks before simulating a workload (JSON-serialisable)."""
    jobs = workload.jobs
    n = len(jobs)
    submit = np.fromiter((j.submit for j in jobs), dtype=np.int64, count=n)
    runtime = np.fromiter((j.runtime for j in jobs), dtype=np.int64, count=n)
    units = np.fromiter((j.units for j in jobs), dtype=np.int64, count=n)
    req = np.array([j.req for j in jobs], dtype=np.int64).reshape(n, len(system.types))
    span = int(submit.max() - submit.min()) if n else 0
    stats: dict[str, Any] = {
        "source": workload.source,
        "system": system.name,
        "jobs": n,
        "rejected": len(workload.rejected),
        "rejected_reasons": dict(Counter(r.reason for r in workload.rejected).most_common()),
        "skipped": len(workload.skipped),
        "users": len({j.user for j in jobs if j.user}),
        "queues": dict(Counter(j.queue or "(none)" for j in jobs).most_common()),
        "span": {
            "first_submit": int(submit.min()) if n else None,
            "last_submit": int(submit.max()) if n else None,
            "seconds": span,
            "days": round(span / 86400, 2),
        },
        "runtime": _percentiles(runtime.astype(float)),
        "share_under_1h": float((runtime < HOUR).mean()) if n else None,
        "share_1h_to_5h": float(((runtime >= HOUR) & (runtime <= 5 * HOUR)).mean()) if n else None,
        "share_over_5h": float((runtime > 5 * HOUR).mean()) if n else None,
        "units": {
            **_percentiles(units.astype(float)),
            "histogram": {k: v for k, v in sorted(Counter(_size_bucket(int(u)) for u in units).items(),
                                                  key=lambda kv: int(kv[0].split("-")[0]))},
        },
    }
    demand: dict[str, Any] = {}
    for k, t in enumerate(system.types):
        total = units * req[:, k] if n else np.zeros(0, dtype=np.int64)
        cap = system.totals[k]
        asking = int((total > 0).sum())
        demand[t] = {
            "jobs_asking": asking,
            "share_asking": asking / n if n else 0.0,
            "mean_total_when_asking": float(total[total > 0].mean()) if asking else 0.0,
            "max_total": int(total.max()) if n else 0,
            # amount x time asked, over capacity x submit span: > 1 means the system cannot keep up
            "offered_load": float((total * runtime).sum() / (cap * span)) if cap and span else None,
        }
    stats["demand"] = demand
    given = [(j.runtime, j.walltime) for j in jobs if j.walltime is not None]
    ratio = np.array([r / w for r, w in given if w > 0], dtype=float)
    stats["walltime"] = {
        "given": len(given),
        "default": sum(1 for j in jobs if j.walltime is None),
        "runtime_over_walltime": _percentiles(ratio),
        "overruns": sum(1 for r, w in given if r > w),
    }
    stats["unfit"] = sum(system.max_units(j.req, j.one_per_node) < j.units for j in jobs)
    stats["notes"] = {k: v for k, v in workload.notes.items() if k != "header"}
    return stats


def _dur(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < HOUR:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // HOUR}h{s % HOUR // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // HOUR:02d}h"


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def format_stats(stats: dict[str, Any]) -> str:
    """The statistics as a short human-readable report."""
    rt, un, wt, span = stats["runtime"], stats["units"], stats["walltime"], stats["span"]
    out = [
        f"{stats['source']} on {stats['system']}",
        f"  jobs {stats['jobs']:,}   rejected {stats['rejected']:,}   skipped lines {stats['skipped']:,}"
        f"   not fitting the empty system {stats['unfit']:,}",
    ]
    for reason, count in stats["rejected_reasons"].items():
        out.append(f"    rejected: {reason}: {count:,}")
    queues = ", ".join(f"{q} {c:,}" for q, c in list(stats["queues"].items())[:8])
    more = " ..." if len(stats["queues"]) > 8 else ""
    out += [
        f"  users {stats['users']:,}   queues {len(stats['queues'])} ({queues}{more})",
        f"  submit span {_dur(span['seconds'])} ({span['days']} days)",
    ]
    if rt:
        out.append(
            "  run time  " + "  ".join(f"{k} {_dur(rt[k])}" for k in ("p10", "p50", "p90", "p99", "max", "mean"))
        )
        out.append(
            f"  under 1 h {_pct(stats['share_under_1h'])}   1-5 h {_pct(stats['share_1h_to_5h'])}"
            f"   over 5 h {_pct(stats['share_over_5h'])}"
        )
    if "p50" in un:
        hist = ", ".join(f"{k}: {v:,}" for k, v in un["histogram"].items())
        out.append(f"  units  p50 {un['p50']:.0f}  p90 {un['p90']:.0f}  max {un['max']:.0f}   ({hist})")
    for t, d in stats["demand"].items():
        x = d["offered_load"]
        load = "-" if x is None else f"{x:.2f}" if x >= 0.01 or x == 0 else f"{x:.2g}"
        out.append(
            f"  {t:>5}: asked by {d['jobs_asking']:,} jobs ({_pct(d['share_asking'])}),"
            f" mean {d['mean_total_when_asking']:,.1f}, max {d['max_total']:,} per job; offered load {load}"
        )
    ratio = wt["runtime_over_walltime"]
    line = f"  walltime given {wt['given']:,}, defaulted {wt['default']:,}"
    if ratio:
        line += (
            f"; run time / walltime p10 {ratio['p10']:.2f} p50 {ratio['p50']:.2f} p90 {ratio['p90']:.2f};"
            f" overruns {wt['overruns']:,}"
        )
    out.append(line)
    for k, v in stats["notes"].items():
        if isinstance(v, dict):
            v = ", ".join(f"{a}: {b}" for a, b in v.items())
        out.append(f"  note {k}: {v}")
    return "\n".join(out)
