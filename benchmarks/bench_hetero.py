#!/usr/bin/env python3
"""Dispatchers on heterogeneous systems, with statistics over seeds (issue: placement that matters).

For every workload x load x dispatcher (x allocator), simulates one workload per seed in parallel
worker processes and prints mean wait, mean bounded slowdown, per-class mean waits (GPU / MIC /
CPU-only jobs with the 95% interval over seeds; short < 1 h / long, narrow = 1 unit / wide), the
utilisation per type over the submit window, the decision time (mean, p99, max over the runs), the
room a different placement of the jobs starting now would give (share of the decisions asked, from
the simulator's probe or pcp20's second stage), and the **paired differences** of pcp20 minus
every other dispatcher over the same seeds, with 95% t intervals (bold: the interval excludes 0).

    python benchmarks/bench_hetero.py --json runs.json --markdown   # docs/heterogeneous.md's run (~40 min)
    python benchmarks/bench_hetero.py --from-json runs.json --markdown  # the tables again
    python benchmarks/bench_hetero.py --seeds 3 --workloads gpu-contended --loads 1.5 --dispatchers hcp19,pcp20

Workloads (`--loads` are load factors, except for alibaba: see below):
  eurora         the generator's default mix on the `eurora` preset (GPUs offered at ~0.1)
  gpu-contended  the generator's `gpu-contended` mix (GPUs offered at 0.9, GPU units of 4-12 cores)
  alibaba        the Alibaba GPU trace v2023 on its node kinds with a 25th of the nodes (71 nodes);
                 seed k is the k-th slice of `--pods` consecutive pods, and the load is the GPU
                 offered load the slice's arrivals are scaled to (a pod's run counted within the
                 scaled submit span only: pods still running at the trace's end run for months)
  eurora-gpu, fat  the earlier README runs (60% of short jobs on GPUs; GPUs on 16 fat nodes)
"Own" allocator = each dispatcher's default; another name is given to every dispatcher.
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

from cpdispatch.stats import Estimate, mean_ci, paired_difference

#: the default set: pcp20 and what it is compared with (same allocator, its predecessor, no second stage)
DISPATCHERS = ("hcp19", "pcp19", "pcp20@stage2=0", "pcp20")
REFERENCE = "pcp20"
FAT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "systems", "fat-accelerators.toml")
#: generated workloads: name -> (system, share of short jobs asking GPUs or None, generator mix)
WORKLOADS: dict[str, tuple[str, float | None, str]] = {
    "eurora": ("eurora", None, "eurora"), "gpu-contended": ("eurora", None, "gpu-contended"),
    "eurora-gpu": ("eurora", 0.6, "eurora"), "fat": (FAT, None, "eurora"),
}
ALIBABA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "workloads",
                       "alibaba_gpu_v2023", "openb_pod_list_default.csv.gz")
ALIBABA_DIVISOR = 25
#: default jobs per generated workload (the eurora mix needs 3,000 to be busy at these loads)
JOBS = {"eurora": 3000, "gpu-contended": 1000, "eurora-gpu": 3000, "fat": 3000}
#: default loads per workload: three busy ones (load factors; alibaba: GPU offered loads)
LOADS = {"eurora": "1.5,2.25,3.0", "gpu-contended": "2.0,3.0,4.0", "alibaba": "0.85,1.0,1.25",
         "eurora-gpu": "1.5,2.25,3.0", "fat": "1.5,2.25,3.0"}


@dataclass(frozen=True)
class Cell:
    workload: str
    load: float
    dispatcher: str
    allocator: str  # "own" or an allocator name given to every dispatcher
    seed: int
    jobs: int


def workload_of(cell: Cell) -> tuple[Any, Any]:
    """The system and the (load-scaled) workload of a cell."""
    from cpdispatch.system import load_system
    from cpdispatch.workloads import scale_arrivals
    from cpdispatch.workloads.base import Workload
    from cpdispatch.workloads.generator import generate_eurora

    if cell.workload == "alibaba":
        from cpdispatch.workloads.alibaba import read_alibaba, reduced_system

        system = reduced_system(load_system("alibaba-gpu-2023"), ALIBABA_DIVISOR)
        whole = read_alibaba(ALIBABA, system)
        jobs = whole.jobs[cell.seed * cell.jobs:(cell.seed + 1) * cell.jobs]
        if len(jobs) < cell.jobs:
            raise SystemExit(f"alibaba: slice {cell.seed} of {cell.jobs} pods is past the trace's end")
        gpu = system.type_index("gpu")
        span = max(1, jobs[-1].submit - jobs[0].submit)
        factor = 1.0
        for _ in range(20):  # the offered load over the scaled span, a run counted within it only
            scaled = span / factor
            offered = sum(j.req[gpu] * min(j.runtime, scaled) for j in jobs) / (scaled * system.totals[gpu])
            factor *= cell.load / offered
        return system, scale_arrivals(Workload(f"{ALIBABA}[{cell.seed}]", jobs), factor)
    system_name, gpu_share, mix = WORKLOADS[cell.workload]
    workload = generate_eurora(cell.jobs, cell.seed, gpu_share=gpu_share, mix=mix)
    return load_system(system_name), scale_arrivals(workload, cell.load)


def run_cell(cell: Cell) -> dict[str, Any]:
    """One simulation; the per-job figures reduced to what the table needs."""
    from cpdispatch.dispatchers import make_dispatcher
    from cpdispatch.dispatchers.cp.models.pcp20 import Pcp20Dispatcher
    from cpdispatch.metrics import BOUND_S, summarize
    from cpdispatch.predictors import make_predictor
    from cpdispatch.simulator import SimOptions, simulate
    from cpdispatch.validate import schedule_errors

    system, workload = workload_of(cell)
    name, *pairs = cell.dispatcher.split("@")  # e.g. pcp20@stage2=0@allocator=best-fit
    options = dict(p.split("=", 1) for p in pairs)
    if cell.allocator != "own":
        options["allocator"] = cell.allocator
    t0 = time.perf_counter()
    result = simulate(system, workload, make_dispatcher(name, options), make_predictor("last2"),
                      SimOptions(progress=False, room=True), room_answerer=Pcp20Dispatcher)  # the room column
    wall = time.perf_counter() - t0
    problems = schedule_errors(result)
    if problems:
        raise AssertionError(f"{cell}: invalid schedule: {problems[:3]}")
    started = [r for r in result.records if r.start is not None and r.end is not None]
    wait = np.array([r.start - r.job.submit for r in started], dtype=float)
    run = np.array([r.end - r.start for r in started], dtype=float)
    bsld = np.maximum(1.0, (wait + run) / np.maximum(run, BOUND_S))
    gpu = system.type_index("gpu")
    mic = system.type_index("mic") if "mic" in system.types else None
    kind = np.array(["gpu" if r.job.req[gpu] else "mic" if mic is not None and r.job.req[mic] else "cpu"
                     for r in started])
    submits = [r.job.submit for r in result.records]
    lo, hi = min(submits), max(submits)
    util = {}
    for k, t in enumerate(system.types):
        used = sum(r.job.units * r.job.req[k] * max(0, min(r.end, hi) - max(r.start, lo)) for r in started)
        util[t] = used / max(1, (hi - lo) * system.totals[k])
    summary = summarize(result)
    out: dict[str, Any] = {
        "wait": float(wait.mean()), "bsld": float(bsld.mean()), "bsld_sd": float(bsld.std()),
        "util": util, "wall_s": wall, "calls": len(result.decisions),
        "ms_mean": summary["dispatch_ms_mean"], "ms_p99": summary["dispatch_ms_p99"],
        "ms_max": summary["dispatch_ms_max"], "room": summary.get("room"), "stage2": summary.get("stage2"),
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


def fmt(xs: list[float], digits: int = 0) -> str:
    """Mean ± half-width of the 95% t interval over seeds (cpdispatch.stats, as the campaign report)."""
    e = mean_ci(xs)
    return f"{e.mean:.{digits}f}±{e.half:.{digits}f}"


def paired(ref: list[dict[str, Any]], runs: list[dict[str, Any]], key: str) -> Estimate:
    """`key` of the reference minus that of `runs`, paired by seed (same workloads); nothing when the
    two differ in seeds."""
    a, b = [r[key] for r in ref], [r[key] for r in runs]
    return paired_difference(a, b) if len(a) == len(b) else Estimate(math.nan, math.nan, math.nan, 0)


#: the figures the paired differences are given for
DIFF_KEYS = ("bsld", "wait_gpu", "wait")


def room_share(runs: list[dict[str, Any]]) -> float:
    """Share of the asked decisions (summed over the runs) where a different placement of the jobs
    starting now lets a queued job start earlier."""
    asked = sum(r["room"]["decisions"] for r in runs if r.get("room"))
    return sum(r["room"]["with_room"] for r in runs if r.get("room")) / asked if asked else 0.0


def versus(ref: list[dict[str, Any]], runs: list[dict[str, Any]], key: str) -> str:
    """`key` of the reference minus that of `runs`, paired by seed: mean ± 95% half-width."""
    d = paired(ref, runs, key)
    digits = 2 if key == "bsld" else 0
    return f"{key} {d.mean:+.{digits}f}±{d.half:.{digits}f}{'*' if d.excludes(0.0) else ''}"


def plot(groups: dict[tuple[str, float, str], dict[str, list[dict[str, Any]]]], path: str) -> None:
    """One panel per workload (rows) and load (columns, each workload its own): the paired
    difference of mean bounded slowdown, the reference minus each dispatcher, with its 95% interval
    (< 0: the reference is better; dark: the interval excludes 0)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = table_rows(groups)
    width = max(len({x for cols in rows.values() for x in cols}) for rows in table.values())
    fig, axes = plt.subplots(len(table), width, figsize=(3.6 * width, 3.2 * len(table)), squeeze=False)
    for row, (w, rows) in zip(axes, table.items()):
        ref = rows.get((REFERENCE, "own"), {})
        labels = [k for k in rows if k != (REFERENCE, "own")]
        for ax, load in zip(row, sorted({x for cols in rows.values() for x in cols})):
            stats = [paired(ref.get(load, []), rows[k].get(load, []), "bsld") for k in labels]
            ax.barh(range(len(labels)), [d.mean for d in stats], xerr=[d.half for d in stats], capsize=2,
                    color=["tab:blue" if d.excludes(0.0) else "lightsteelblue" for d in stats])
            ax.axvline(0, color="black", linewidth=0.8)
            ax.set_yticks(range(len(labels)), [d if a == "own" else f"{d} ({a})" for d, a in labels], fontsize=7)
            ax.set_title(f"{w}, load {load:g}", fontsize=9)
            ax.set_xlabel(f"bounded slowdown, {REFERENCE} minus it", fontsize=8)
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
        Cell(w, float(load), d, a, seed, args.pods if w == "alibaba" else args.jobs or JOBS[w])
        for w in args.workloads.split(",") for load in (args.loads or LOADS[w]).split(",")
        for a in args.allocators.split(",") for d in args.dispatchers.split(",")
        for seed in range(args.first_seed, args.first_seed + args.seeds)
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
            if args.json and (done % 10 == 0 or done == len(todo)):  # a long run keeps what it has
                save(args.json, results)
            print(f"[{done}/{len(todo)}] {c.workload} x{c.load} {c.dispatcher} ({c.allocator}) seed {c.seed}: "
                  f"{results[c]['wall_s']:.0f} s", file=sys.stderr, flush=True)
    sizes = ", ".join(sorted({f"{c.workload} {c.jobs:,}" for c in cells}))
    print(f"{len(todo)} simulations ({sizes} jobs) in {time.perf_counter() - t0:.0f} s "
          f"({args.seeds} seeds; 95% t intervals over seeds; predictor last2)\n")
    return {c: results[same.get(c, c)] for c in cells}  # table order


def markdown(groups: dict[tuple[str, float, str], dict[str, list[dict[str, Any]]]]) -> None:
    """Per workload and load: the utilisation and room under the reference, then one row per
    dispatcher: mean wait, bounded slowdown and GPU-job wait with their 95% intervals, the paired
    differences of the reference minus it (bold when the interval excludes 0; < 0: the reference
    is better), and the decision time (mean of the runs' means, largest p99 and max)."""
    by_workload = table_rows(groups)

    def cell(xs: list[float], digits: int) -> str:
        e = mean_ci(xs)
        return f"{e.mean:,.{digits}f} ± {e.half:,.{digits}f}"

    for w, rows in by_workload.items():
        ref_rows = rows.get((REFERENCE, "own"), {})
        for load in sorted({x for cols in rows.values() for x in cols}):
            ref = ref_rows.get(load, [])
            basis = rows.get(("pcp20@stage2=0", "own"), {}).get(load) or ref
            util = ", ".join(f"{t} {statistics.fmean(r['util'][t] for r in ref):.0%}"
                             for t in (ref[0]["util"] if ref else ()))
            print(f"\n**{w}, load {load:g}** (utilisation under {REFERENCE}: {util}; room: {room_share(basis):.1%} "
                  f"of the decisions asked{' under pcp20@stage2=0' if basis is not ref else ''})\n")
            print(f"| dispatcher | wait s | bsld | GPU wait s | {REFERENCE} − it: bsld | GPU wait | wait | "
                  "ms mean / p99 / max |")
            print("|---|---|---|---|---|---|---|---|")
            for (d, alloc), cols in rows.items():
                runs = cols.get(load, [])
                if not runs:
                    continue
                label = d if alloc == "own" else f"{d} -o allocator={alloc}"
                diffs = ["", "", ""]
                if ref and runs is not ref and len(runs) == len(ref):
                    diffs = [_bold(versus(ref, runs, key).split(" ", 1)[1]) for key in DIFF_KEYS]
                print(f"| `{label}` | {cell([r['wait'] for r in runs], 0)} | {cell([r['bsld'] for r in runs], 2)} | "
                      f"{cell([r['wait_gpu'] for r in runs], 0)} | " + " | ".join(diffs) + " | "
                      f"{statistics.fmean(r['ms_mean'] for r in runs):.1f} / {max(r['ms_p99'] for r in runs):.0f} / "
                      f"{max(r['ms_max'] for r in runs):.0f} |")


def _bold(text: str) -> str:
    return f"**{text[:-1]}**" if text.endswith("*") else text


def print_group(w: str, load: float, alloc: str, by_disp: dict[str, list[dict[str, Any]]]) -> None:
    """One (workload, load, allocator): a row per dispatcher (means ± 95% half-widths over seeds), then
    the paired differences of the reference minus each."""
    ref_name = "pcp20" if "pcp20" in by_disp else next(iter(by_disp))
    ref_runs = by_disp[ref_name]
    util = ", ".join(f"{t} {statistics.fmean(r['util'][t] for r in ref_runs):.2f}" for t in ref_runs[0]["util"])
    print(f"## {w}, load factor {load}, allocator {alloc} (utilisation over the submit window under "
          f"{ref_name}: {util})")
    print(f"{'dispatcher':<24} {'wait s':>13} {'bsld':>13} {'bsld sd':>9} {'GPU wait':>13} "
          f"{'MIC wait':>13} {'CPU wait':>13} {'short':>9} {'long':>9} {'narrow':>9} {'wide':>9} "
          f"{'ms/call':>8} {'p99':>7} {'max':>7} {'room':>6} {'model starts':>12}")
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
              + f" {statistics.fmean(r['ms_mean'] for r in runs):>8.1f} {max(r['ms_p99'] for r in runs):>7.1f}"
              f" {max(r['ms_max'] for r in runs):>7.0f} {room_share(runs):>6.1%} {model:>12.0%}")
    if REFERENCE in by_disp:
        ref = by_disp[REFERENCE]
        others = [(d, runs) for d, runs in by_disp.items() if d != REFERENCE and len(runs) == len(ref)]
        print(f"paired differences, {REFERENCE} minus each (< 0: {REFERENCE} better; * the 95% interval "
              "excludes 0): " + "; ".join(f"{d}: " + ", ".join(versus(ref, runs, key) for key in DIFF_KEYS)
                                          for d, runs in others))
    print()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, help="jobs per generated workload (default: see JOBS)")
    ap.add_argument("--pods", type=int, default=650, help="alibaba: pods per slice (seed k: the k-th slice)")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--first-seed", type=int, default=1, help="seeds first-seed .. first-seed + seeds - 1 "
                    "(another set of seeds replicates a finding instead of re-reading the same data)")
    ap.add_argument("--loads", help="comma-separated (default: three busy loads per workload, see LOADS)")
    ap.add_argument("--workloads", default="eurora,gpu-contended,alibaba")
    ap.add_argument("--dispatchers", default=",".join(DISPATCHERS),
                    help="comma-separated; options after @, e.g. pcp20@blocked=0@allocator=best-fit")
    ap.add_argument("--allocators", default="own", help="'own' and/or an allocator for all")
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
        print_group(w, load, alloc, by_disp)
    if args.markdown:
        markdown(groups)
    if args.plot:
        plot(groups, args.plot)
    if args.json:
        save(args.json, results)
    return 0


def save(path: str, results: dict[Cell, dict[str, Any]]) -> None:
    with open(path, "w") as fh:
        json.dump([{**c.__dict__, **r} for c, r in results.items()], fh, indent=1)


if __name__ == "__main__":
    sys.exit(main())
