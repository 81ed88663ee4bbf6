#!/usr/bin/env python3
"""Dispatchers on heterogeneous systems, with statistics over seeds (issue: scarce resources).

For every workload x load factor x dispatcher (x allocator), simulates one generated workload per
seed in parallel worker processes and prints mean wait, mean bounded slowdown (and its standard
deviation over jobs), per-class mean waits (GPU / MIC / CPU-only jobs with the 95% confidence
interval over seeds; short < 1 h / long run time, narrow = 1 unit / wide, as means over seeds),
plus utilisation per type over the submit window.

    python benchmarks/bench_hetero.py --json runs.json --plot fig.png   # the README's run (~65 min, 2 cores)
    python benchmarks/bench_hetero.py --from-json runs.json --markdown  # its tables again, no simulation
    python benchmarks/bench_hetero.py --seeds 3 --loads 2.0 --dispatchers easy,pcp20,pcp19,eurora14

Workloads: `eurora` (the generator's default mix) and `eurora-gpu` (60% of the short jobs ask
GPUs) on the `eurora` preset; `fat` (the default mix) on `systems/fat-accelerators.toml`, Eurora's
totals with the GPUs on 16 fat nodes of 32 cores and the MICs on 8 nodes. "Own" allocator = each
dispatcher's default; "shared" = the demand-aware best fit (`allocator=scarce-fit`) for every
dispatcher, so that the model's contribution is isolated (a dispatcher whose default it already is
is not run twice: its "own" runs are shown again).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

#: the default set; pcp19 and eurora14 also run here, but take minutes per simulation
DISPATCHERS = ("fifo", "easy", "pbs", "hcp19", "pcp20")
FAT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "systems", "fat-accelerators.toml")
#: name -> (system, share of short jobs asking GPUs or None for the generator's mix)
WORKLOADS: dict[str, tuple[str, float | None]] = {
    "eurora": ("eurora", None), "eurora-gpu": ("eurora", 0.6), "fat": (FAT, None),
}
#: t quantiles (two-sided 95%) for n - 1 degrees of freedom
T95 = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23,
       11: 2.20, 12: 2.18, 14: 2.14, 19: 2.09, 29: 2.05}


@dataclass(frozen=True)
class Cell:
    workload: str
    load: float
    dispatcher: str
    allocator: str  # "own" or an allocator name given to every dispatcher
    seed: int
    jobs: int


def run_cell(cell: Cell) -> dict[str, Any]:
    """One simulation; the per-job figures reduced to what the table needs."""
    from cpdispatch.dispatchers import make_dispatcher
    from cpdispatch.metrics import BOUND_S
    from cpdispatch.predictors import make_predictor
    from cpdispatch.simulator import SimOptions, simulate
    from cpdispatch.system import load_system
    from cpdispatch.validate import schedule_errors
    from cpdispatch.workloads import scale_arrivals
    from cpdispatch.workloads.generator import generate_eurora

    system_name, gpu_share = WORKLOADS[cell.workload]
    system = load_system(system_name)
    workload = generate_eurora(cell.jobs, cell.seed, gpu_share=gpu_share)
    workload = scale_arrivals(workload, cell.load)
    name, *pairs = cell.dispatcher.split("@")  # e.g. pcp20@blocked=2@allocator=best-fit
    options = dict(p.split("=", 1) for p in pairs)
    if cell.allocator != "own":
        options["allocator"] = cell.allocator
    t0 = time.perf_counter()
    result = simulate(system, workload, make_dispatcher(name, options), make_predictor("last2"),
                      SimOptions(progress=False))
    wall = time.perf_counter() - t0
    problems = schedule_errors(result)
    if problems:
        raise AssertionError(f"{cell}: invalid schedule: {problems[:3]}")
    started = [r for r in result.records if r.start is not None and r.end is not None]
    wait = np.array([r.start - r.job.submit for r in started], dtype=float)
    run = np.array([r.end - r.start for r in started], dtype=float)
    bsld = np.maximum(1.0, (wait + run) / np.maximum(run, BOUND_S))
    gpu, mic = system.type_index("gpu"), system.type_index("mic")
    kind = np.array(["gpu" if r.job.req[gpu] else "mic" if r.job.req[mic] else "cpu" for r in started])
    submits = [r.job.submit for r in result.records]
    lo, hi = min(submits), max(submits)
    util = {}
    for k, t in enumerate(system.types):
        used = sum(r.job.units * r.job.req[k] * max(0, min(r.end, hi) - max(r.start, lo)) for r in started)
        util[t] = used / max(1, (hi - lo) * system.totals[k])
    out: dict[str, Any] = {
        "wait": float(wait.mean()), "bsld": float(bsld.mean()), "bsld_sd": float(bsld.std()),
        "util": util, "wall_s": wall, "calls": len(result.decisions),
        "ms_mean": sum(d.wall_ms for d in result.decisions) / max(1, len(result.decisions)),
    }
    units = np.array([r.job.units for r in started])
    classes = {"gpu": kind == "gpu", "mic": kind == "mic", "cpu": kind == "cpu",
               "short": run < 3600, "long": run >= 3600, "narrow": units == 1, "wide": units > 1}
    for cls, sel in classes.items():
        out[f"wait_{cls}"] = float(wait[sel].mean()) if sel.any() else math.nan
    statuses: dict[str, int] = {}
    for d in result.decisions:
        if d.started:
            key = d.status.split(":dropped")[0]
            statuses[key] = statuses.get(key, 0) + d.started
    out["starts_by_status"] = statuses
    return out


@functools.cache
def default_allocator(dispatcher: str) -> str:
    """The allocator `dispatcher` (name@opt=val...) uses when none is given for all."""
    from cpdispatch.dispatchers import make_dispatcher

    name, *pairs = dispatcher.split("@")
    return str(getattr(make_dispatcher(name, dict(p.split("=", 1) for p in pairs)), "allocator", ""))


def mean_ci(xs: list[float]) -> tuple[float, float]:
    """Mean and half-width of the 95% t interval."""
    xs = [x for x in xs if not math.isnan(x)]
    if not xs:
        return math.nan, math.nan
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, math.nan
    t = T95.get(len(xs) - 1, T95[max(k for k in T95 if k <= len(xs) - 1)])
    return m, t * statistics.stdev(xs) / math.sqrt(len(xs))


def fmt(xs: list[float], digits: int = 0) -> str:
    m, h = mean_ci(xs)
    return f"{m:.{digits}f}±{h:.{digits}f}"


def paired_diff(a: list[float], b: list[float]) -> tuple[float, float]:
    """Mean and 95% half-width of a - b over seeds (paired: same workloads)."""
    return mean_ci([x - y for x, y in zip(a, b)])


def plot(groups: dict[tuple[str, float, str], dict[str, list[dict[str, Any]]]], path: str) -> None:
    """One panel per workload (rows) and load (columns): the paired difference of mean wait to
    pcp20 with its 95% interval, per dispatcher and allocator (> 0: pcp20 waits less; dark:
    the interval excludes 0). fifo is left out: its waits are ten times the others'."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = table_rows(groups)
    loads = sorted({load for rows in table.values() for cols in rows.values() for load in cols})
    fig, axes = plt.subplots(len(table), len(loads), figsize=(3.6 * len(loads), 3.2 * len(table)),
                             squeeze=False, sharey="row")
    for row, (w, rows) in zip(axes, table.items()):
        ref = rows.get(("pcp20", "own"), {})
        labels = [(d, a) for d, a in rows if not d.startswith("fifo") and (d, a) != ("pcp20", "own")]
        for ax, load in zip(row, loads):
            stats = [paired_diff([r["wait"] for r in rows[k].get(load, [])], [r["wait"] for r in ref.get(load, [])])
                     for k in labels]
            ax.barh(range(len(labels)), [m for m, _ in stats], xerr=[h for _, h in stats], capsize=2,
                    color=["tab:blue" if abs(m) > h else "lightsteelblue" for m, h in stats])
            ax.axvline(0, color="black", linewidth=0.8)
            ax.set_yticks(range(len(labels)), [d if a == "own" else f"{d} ({a})" for d, a in labels], fontsize=7)
            ax.set_title(f"{w}, load x{load:g}", fontsize=9)
            ax.set_xlabel("wait minus pcp20's [s]", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def table_rows(groups: dict[tuple[str, float, str], dict[str, list[dict[str, Any]]]]
               ) -> dict[str, dict[tuple[str, str], dict[float, list[dict[str, Any]]]]]:
    """Per workload, per (dispatcher, allocator), per load: the runs; a dispatcher whose default is
    the shared allocator appears once, as "own"."""
    out: dict[str, dict[tuple[str, str], dict[float, list[dict[str, Any]]]]] = {}
    for (w, load, alloc), by_disp in groups.items():
        for d, runs in by_disp.items():
            if alloc != "own" and default_allocator(d) == alloc:
                continue
            out.setdefault(w, {}).setdefault((d, alloc), {})[load] = runs
    return out


def simulate_cells(args: argparse.Namespace) -> dict[Cell, dict[str, Any]]:
    """Every cell of the command line, in parallel; a dispatcher whose default allocator is the
    shared one is run once and reported under both."""
    cells = [
        Cell(w, float(load), d, a, seed, args.jobs)
        for w in args.workloads.split(",") for load in args.loads.split(",")
        for a in args.allocators.split(",") for d in args.dispatchers.split(",")
        for seed in range(1, args.seeds + 1)
    ]
    same = {c: replace(c, allocator="own") for c in cells if c.allocator == default_allocator(c.dispatcher)}
    todo = [c for c in cells if c not in same]
    t0 = time.perf_counter()
    results: dict[Cell, dict[str, Any]] = {}
    with ProcessPoolExecutor(args.workers) as pool:
        futures = {pool.submit(run_cell, c): c for c in todo}
        for done, fut in enumerate(as_completed(futures), 1):
            c = futures[fut]
            results[c] = fut.result()
            print(f"[{done}/{len(todo)}] {c.workload} x{c.load} {c.dispatcher} ({c.allocator}) seed {c.seed}: "
                  f"{results[c]['wall_s']:.0f} s", file=sys.stderr, flush=True)
    print(f"{len(todo)} simulations of {args.jobs:,} jobs in {time.perf_counter() - t0:.0f} s "
          f"({args.seeds} seeds; 95% t intervals over seeds; predictor last2)\n")
    return {c: results[same.get(c, c)] for c in cells}  # table order


def markdown(groups: dict[tuple[str, float, str], dict[str, list[dict[str, Any]]]]) -> None:
    """Per workload, one row per dispatcher and allocator, one column pair per load: mean wait with
    its 95% interval and the paired difference to pcp20 (bold when the interval excludes 0), and
    mean bounded slowdown with the same difference."""
    by_workload = table_rows(groups)

    def diff(runs: list[dict[str, Any]], ref: list[dict[str, Any]], key: str, digits: int) -> str:
        m, h = paired_diff([r[key] for r in runs], [r[key] for r in ref])
        text = f"{m:+.{digits}f} ± {h:.{digits}f}"
        return f"**{text}**" if abs(m) > h else text

    for w, rows in by_workload.items():
        loads = sorted({load for cols in rows.values() for load in cols})
        print(f"\n{w}: mean wait [s] ± 95% interval (paired difference to pcp20) / mean bounded slowdown "
              "(paired difference)\n")
        print("| dispatcher | " + " | ".join(f"load {x:g}: wait | bsld" for x in loads) + " |")
        print("|---|" + "---|---|" * len(loads))
        for (d, alloc), cols in rows.items():
            label = d if alloc == "own" else f"{d} -o allocator={alloc}"
            cells = []
            for load in loads:
                runs, ref = cols.get(load, []), rows.get(("pcp20", "own"), {}).get(load, [])
                m, h = mean_ci([r["wait"] for r in runs])
                b, _ = mean_ci([r["bsld"] for r in runs])
                same_seeds = ref and runs is not ref and len(runs) == len(ref)
                cells.append(f"{m:,.0f} ± {h:,.0f}" + (f" ({diff(runs, ref, 'wait', 0)})" if same_seeds else ""))
                cells.append(f"{b:.2f}" + (f" ({diff(runs, ref, 'bsld', 2)})" if same_seeds else ""))
            print(f"| `{label}` | " + " | ".join(cells) + " |")
        util = rows.get(("pcp20", "own")) or rows[next(iter(rows))]
        print(f"\nutilisation over the submit window under {'pcp20' if ('pcp20', 'own') in rows else 'the first'}: "
              + "; ".join(
            f"load {x:g}: " + ", ".join(f"{t} {statistics.fmean(r['util'][t] for r in runs):.0%}"
                                        for t in runs[0]["util"]) for x, runs in sorted(util.items())))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=3000)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--loads", default="1.5,2.25,3.0")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--dispatchers", default=",".join(DISPATCHERS),
                    help="comma-separated; options after @, e.g. pcp20@blocked=0@allocator=best-fit")
    ap.add_argument("--allocators", default="own,scarce-fit", help="'own' and/or an allocator for all")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--json", help="write every run's figures here")
    ap.add_argument("--plot", help="write a figure (PNG): mean wait per dispatcher and cell, 95%% intervals")
    ap.add_argument("--from-json", nargs="+", help="report the runs saved by --json (one or more files, "
                                                     "merged) instead of simulating")
    ap.add_argument("--markdown", action="store_true", help="also print the README's tables")
    args = ap.parse_args(argv)
    if args.from_json:
        saved = []
        for path in args.from_json:
            with open(path) as fh:
                saved += json.load(fh)
        fields = Cell.__dataclass_fields__
        results = {Cell(**{k: v for k, v in r.items() if k in fields}): r for r in saved}
    else:
        results = simulate_cells(args)
    groups: dict[tuple[str, float, str], dict[str, list[dict[str, Any]]]] = {}
    for c, r in results.items():
        groups.setdefault((c.workload, c.load, c.allocator), {}).setdefault(c.dispatcher, []).append(r)
    for (w, load, alloc), by_disp in groups.items():
        ref_name = "pcp20" if "pcp20" in by_disp else next(iter(by_disp))
        ref_runs = by_disp[ref_name]
        util = ", ".join(f"{t} {statistics.fmean(r['util'][t] for r in ref_runs):.2f}" for t in ref_runs[0]["util"])
        print(f"## {w}, load factor {load}, allocator {alloc} (utilisation over the submit window under "
              f"{ref_name}: {util})")
        print(f"{'dispatcher':<24} {'wait s':>13} {'bsld':>13} {'bsld sd':>9} {'GPU wait':>13} "
              f"{'MIC wait':>13} {'CPU wait':>13} {'short':>9} {'long':>9} {'narrow':>9} {'wide':>9} "
              f"{'ms/call':>8} {'model starts':>12}")
        for d, runs in by_disp.items():
            starts: dict[str, int] = {}
            for r in runs:
                for k, v in r["starts_by_status"].items():
                    starts[k] = starts.get(k, 0) + v
            total = max(1, sum(starts.values()))
            model = sum(v for k, v in starts.items() if k in ("optimal", "feasible")) / total
            print(f"{d:<24} {fmt([r['wait'] for r in runs]):>13} {fmt([r['bsld'] for r in runs], 2):>13} "
                  f"{statistics.fmean(r['bsld_sd'] for r in runs):>9.2f} {fmt([r['wait_gpu'] for r in runs]):>13} "
                  f"{fmt([r['wait_mic'] for r in runs]):>13} {fmt([r['wait_cpu'] for r in runs]):>13} "
                  + " ".join(f"{statistics.fmean(r.get(f'wait_{k}', math.nan) for r in runs):>9.0f}"
                             for k in ("short", "long", "narrow", "wide"))
                  + f" {statistics.fmean(r['ms_mean'] for r in runs):>8.1f} {model:>12.0%}")
        if "pcp20" in by_disp:
            ref = by_disp["pcp20"]
            diffs = []
            for d, runs in by_disp.items():
                if d != "pcp20" and len(runs) == len(ref):
                    mw, hw = paired_diff([r["wait"] for r in runs], [r["wait"] for r in ref])
                    mb, hb = paired_diff([r["bsld"] for r in runs], [r["bsld"] for r in ref])
                    diffs.append(f"{d} {mw:+.0f}±{hw:.0f} s / {mb:+.2f}±{hb:.2f}")
            print("paired difference to pcp20 (wait / bsld; > 0: pcp20 better): " + "; ".join(diffs))
        print()
    if args.markdown:
        markdown(groups)
    if args.plot:
        plot(groups, args.plot)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([{**c.__dict__, **r} for c, r in results.items()], fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
