"""Replay a saved instance log with several dispatchers (PCP'20 paper, Section 5.3): the same
instances for all, so model sizes and solve times compare; writes comparison.csv, the ratio plots
of the paper's Figures 6 and 7 and a plain-text summary."""

from __future__ import annotations

import csv
import itertools
import math
import sys
import time
from array import array
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import interrupt
from .errors import CpdispatchError
from .instance_log import RecordedInstance, iter_recorded
from .outputs_safety import replacing
from .snapshot import Decision

if TYPE_CHECKING:
    from .dispatchers.base import Dispatcher

CSV_COLUMNS = ("instance", "dispatcher", "variables", "constraints", "solve_ms", "objective", "status")


def _cell(v: float | int | None) -> str:
    if v is None:
        return ""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def compare(
    path: str | Path,
    dispatchers: list[str],
    out_dir: str | Path,
    limit: int | None = None,
    options: dict[str, dict[str, str]] | None = None,
    progress: bool | None = None,
) -> list[dict[str, Any]]:
    """Replay the instances of `path` with each dispatcher; write comparison.csv, the ratio plots
    of the first dispatcher over the second and comparison_summary.txt.

    Each dispatcher is a fresh object (`options` per dispatcher name, as on the command line)
    that sees every instance in file order; the instances are streamed once and solved by all
    dispatchers in turn. Returns one summary dict per dispatcher (the rows are in the CSV).
    """
    from .dispatchers import make_dispatcher

    options = options or {}
    _check(dispatchers, limit, options)
    disps = [make_dispatcher(n, options.get(n)) for n in dispatchers]
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    variables = {n: array("d") for n in dispatchers}  # per instance, NaN: no model (8 bytes each)
    solve_ms = {n: array("d") for n in dispatchers}
    statuses: dict[str, Counter[str]] = {n: Counter() for n in dispatchers}
    no_model: dict[str, Counter[str]] = {n: Counter() for n in dispatchers}
    errors: dict[str, list[Any]] = {n: [0, ""] for n in dispatchers}  # count, first message
    bar = _progress(progress, limit)
    with replacing(out / "comparison.csv") as tmp, open(tmp, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(CSV_COLUMNS)
        for rec in itertools.islice(iter_recorded(path), limit):
            if interrupt.received is not None:  # a signal: compare what was replayed so far
                break
            for name, disp in zip(dispatchers, disps):
                dec, ms = _timed(disp, rec, errors[name])
                variables[name].append(math.nan if dec.variables is None else float(dec.variables))
                solve_ms[name].append(ms)
                statuses[name][dec.status] += 1
                if dec.variables is None:
                    no_model[name][dec.status] += 1
                w.writerow([rec.index, name, _cell(dec.variables), _cell(dec.constraints), f"{ms:.3f}",
                            _cell(dec.objective), dec.status])
            if bar is not None:
                bar.update(1)
    if bar is not None:
        bar.close()
    stats = [_stats(n, np.asarray(variables[n]), np.asarray(solve_ms[n]), statuses[n], no_model[n], errors[n])
             for n in dispatchers]
    notes: list[str] = []
    if len(dispatchers) >= 2:
        a, b = dispatchers[0], dispatchers[1]
        stats[0].update(_ratios(a, b, variables, solve_ms, out, notes))
        if len(dispatchers) > 2:
            notes.append(f"ratio plots compare the first two dispatchers only ({a} / {b})")
    else:
        notes.append("one dispatcher only: no ratio plots")
    with replacing(out / "comparison_summary.txt") as tmp:
        tmp.write_text(_summary_text(str(path), stats, disps, notes))
    return stats


def _check(dispatchers: list[str], limit: int | None, options: dict[str, dict[str, str]]) -> None:
    """The arguments of `compare`, checked before any instance is read."""
    if not dispatchers:
        raise CpdispatchError("compare: no dispatcher given")
    if limit is not None and limit < 0:
        raise CpdispatchError(f"compare: --limit must be >= 0, got {limit}")
    if len(set(dispatchers)) != len(dispatchers):
        raise CpdispatchError(f"compare: a dispatcher is listed twice: {','.join(dispatchers)}")
    unknown = set(options) - set(dispatchers)
    if unknown:
        raise CpdispatchError(f"compare: options for dispatchers not compared: {', '.join(sorted(unknown))}")


def _timed(disp: Dispatcher, rec: RecordedInstance, errors: list[Any]) -> tuple[Decision, float]:
    """The decision of `disp` on one instance and its wall time (ms). Any exception but a user
    error is an `error` decision, counted in `errors` (count, first message): one failing
    instance must not lose the comparison."""
    t0 = time.perf_counter()
    try:
        dec = disp.decide(rec.snapshot)
    except CpdispatchError:
        raise
    except Exception as exc:
        dec = Decision(status="error")
        errors[0] += 1
        errors[1] = errors[1] or f"instance {rec.index} (line {rec.line}): {exc!r}"
    return dec, (time.perf_counter() - t0) * 1e3


def _stats(name: str, var: np.ndarray, ms: np.ndarray, statuses: Counter[str], no_model: Counter[str],
           errors: list[Any]) -> dict[str, Any]:
    model = ~np.isnan(var)
    return {
        "dispatcher": name,
        "instances": int(ms.size),
        "with_model": int(model.sum()),
        "errors": errors[0],
        "first_error": errors[1],
        "statuses": dict(statuses.most_common()),
        "no_model": dict(no_model.most_common()),
        "solve_ms_mean": float(ms.mean()) if ms.size else math.nan,
        "solve_ms_p50": float(np.percentile(ms, 50)) if ms.size else math.nan,
        "solve_ms_p99": float(np.percentile(ms, 99)) if ms.size else math.nan,
        "variables_mean": float(var[model].mean()) if model.any() else math.nan,
    }


def _ratios(a: str, b: str, variables: dict[str, array[float]], solve_ms: dict[str, array[float]],
            out: Path, notes: list[str]) -> dict[str, Any]:
    """Per-instance ratios a / b over instances where both built a model; draws Figures 6 and 7."""
    va, vb = np.asarray(variables[a]), np.asarray(variables[b])
    both = ~np.isnan(va) & ~np.isnan(vb) & (vb > 0)
    idx = np.flatnonzero(both)
    vr = va[both] / vb[both]
    tr = np.asarray(solve_ms[a])[both] / np.maximum(np.asarray(solve_ms[b])[both], 1e-6)
    skipped = int(va.size - idx.size)
    if skipped:
        notes.append(f"{skipped} of {va.size} instances left out of the ratio plots: {a} or {b} built no model "
                     "there (fast path, empty queue, error); they are kept in comparison.csv")
    _ratio_plot(idx, vr, out / "variables_ratio.png", f"Decision variables: {a} / {b}", [1.0, 0.1])
    _ratio_plot(idx, tr, out / "time_ratio.png", f"Dispatching time: {a} / {b}", [1.0])
    def share(x: np.ndarray) -> float:
        return float(x.mean()) if x.size else math.nan
    return {
        "vs": b,
        "ratio_instances": int(idx.size),
        "variables_ratio_median": float(np.median(vr)) if vr.size else math.nan,
        "variables_ratio_below_0.1": share(vr < 0.1),
        "time_ratio_median": float(np.median(tr)) if tr.size else math.nan,
        "time_ratio_below_1": share(tr < 1),
        "time_ratio_0.01_to_1": share((tr >= 0.01) & (tr <= 1)),
    }


def _ratio_plot(idx: np.ndarray, ratio: np.ndarray, path: Path, title: str, lines: list[float]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    size = min(16.0, max(1.0, 20000.0 / max(1, ratio.size)))  # visible for 10 points, no blob for 600k
    ax.scatter(idx, ratio, s=size, marker="o", linewidths=0, alpha=0.6, rasterized=True)
    for y in lines:
        ax.axhline(y, color="red" if y == 1.0 else "grey", linewidth=0.8, linestyle="--", label=f"ratio {y:g}")
    ax.legend(loc="upper right", fontsize="small")
    ax.set_yscale("log")
    if not ratio.size:
        ax.set_ylim(min(lines) / 10, max(lines) * 10)
        ax.text(0.5, 0.5, "no instance where both dispatchers built a model", transform=ax.transAxes,
                ha="center", va="center")
    ax.set_xlabel("instance")
    ax.set_ylabel("ratio")
    ax.set_title(f"{title} ({ratio.size:,} instances)")
    fig.tight_layout()
    with replacing(path) as tmp:
        fig.savefig(tmp, dpi=120)
    plt.close(fig)


def _fmt(x: float, spec: str) -> str:
    return "n/a" if math.isnan(x) else format(x, spec)


def _summary_text(path: str, stats: list[dict[str, Any]], disps: list[Any], notes: list[str]) -> str:
    lines = [f"instances replayed from {path}", ""]
    for s, d in zip(stats, disps):
        name = s["dispatcher"]
        lines += [
            f"{name}: {s['instances']:,} instances, {s['with_model']:,} with a model, {s['errors']:,} errors",
            f"  solve ms: mean {_fmt(s['solve_ms_mean'], '.3f')}  p50 {_fmt(s['solve_ms_p50'], '.3f')}  "
            f"p99 {_fmt(s['solve_ms_p99'], '.3f')}",
            f"  variables: mean {_fmt(s['variables_mean'], '.1f')} (over instances with a model)",
            "  status: " + ", ".join(f"{k} {v:,}" for k, v in s["statuses"].items()),
        ]
        if s["first_error"]:
            lines.append(f"  first error: {s['first_error']}")
        if s["no_model"]:
            why = ", ".join(f"{k} {v:,}" for k, v in s["no_model"].items())
            lines.append(f"  {sum(s['no_model'].values()):,} instances without a model size ({why})")
            if getattr(d, "fastpath", False) is True:
                lines.append(f"  to compare model sizes on more instances, disable the fast path: "
                             f"-o {name}:fastpath=false")
    if "vs" in stats[0]:
        s = stats[0]
        lines += [
            "",
            f"ratios {s['dispatcher']} / {s['vs']} over {s['ratio_instances']:,} instances where both built a model:",
            f"  variables: median {_fmt(s['variables_ratio_median'], '.4g')}, "
            f"share < 0.1: {_fmt(s['variables_ratio_below_0.1'], '.1%')}",
            f"  dispatching time: median {_fmt(s['time_ratio_median'], '.4g')}, "
            f"share < 1: {_fmt(s['time_ratio_below_1'], '.1%')}, "
            f"share in [0.01, 1]: {_fmt(s['time_ratio_0.01_to_1'], '.1%')}",
        ]
    if notes:
        lines += ["", *(f"note: {n}" for n in notes)]
    return "\n".join(lines) + "\n"


def _progress(enabled: bool | None, total: int | None) -> Any:
    if enabled is False or (enabled is None and not sys.stderr.isatty()):
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="instance", desc="replaying", file=sys.stderr)
