#!/usr/bin/env python3
"""Two set-ups of one dispatcher on the same slices of real traces, paired: is a change of default
within noise?

Each slice (consecutive jobs of a trace, `last2`) is simulated under set-up A and set-up B; the
table gives, per slice, the mean wait, the mean bounded slowdown and the simulation's wall time,
then the paired differences B minus A with 95% t intervals, overall and per class of job (short
< 1 h / long; narrow = one unit / wide). Both set-ups of a slice run at the same time, one per core,
so their wall times are comparable.

    python benchmarks/bench_settings.py pcp20 "" "hint_replay=true"      # HPC2N and CEA-Curie, 6 slices each
    python benchmarks/bench_settings.py pcp20 "fast_budget=0.005" "" --slices 3 --jobs 2000
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from common import WORKLOADS

from cpdispatch.stats import Estimate, paired_difference

#: trace -> (system, first job of the first slice, jobs between slice starts); HPC2N's slices cover
#: its congested stretch (jobs 120,001-150,000), CEA-Curie's its first 220,000 jobs
TRACES = {
    "HPC2N-2002-2.2-cln.swf.gz": ("hpc2n", 120_000, 5_000),
    "CEA-Curie-2011-2.1-cln.swf.gz": ("cea-curie", 20_000, 40_000),
}
CLASSES = ("short", "long", "narrow", "wide")
csv.field_size_limit(sys.maxsize)  # a wide job's node list


def simulate(dispatcher: str, options: list[str], trace: str, system: str, skip: int, jobs: int) -> dict:
    """One run's figures: mean wait and bounded slowdown, per class mean wait, wall time."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "cpdispatch", "simulate", "--system", system, "--workload",
               str(WORKLOADS / trace), "--dispatcher", dispatcher, "--predictor", "last2", "--out", out,
               "--no-progress", "--no-plots", "--no-room", "--skip-jobs", str(skip), "--limit-jobs", str(jobs)]
        for opt in options:
            cmd += ["-o", opt]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        summary = json.loads((Path(out) / "summary.json").read_text())
        waits: dict[str, list[int]] = {c: [] for c in CLASSES}
        with open(Path(out) / "schedule.csv") as f:
            for r in csv.DictReader(f):
                if r["status"] == "rejected" or not r["start"]:
                    continue
                wait = int(r["start"]) - int(r["submit"])
                waits["short" if int(r["runtime"]) < 3600 else "long"].append(wait)
                waits["narrow" if int(r["units"]) == 1 else "wide"].append(wait)
    figures = {"wait": summary["avg_wait"], "bsld": summary["avg_bounded_slowdown"], "wall": summary["sim_wall_s"]}
    figures.update({f"wait {c}": sum(w) / len(w) if w else float("nan") for c, w in waits.items()})
    return figures


def show(name: str, est: Estimate) -> str:
    return f"{name:<14} {est.mean:>+10.2f} [{est.low:>+10.2f}, {est.high:>+10.2f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dispatcher")
    ap.add_argument("a", help="set-up A: comma-separated KEY=VALUE options ('' for the defaults)")
    ap.add_argument("b", help="set-up B, the same way")
    ap.add_argument("--slices", type=int, default=6)
    ap.add_argument("--jobs", type=int, default=5_000, help="jobs per slice")
    ap.add_argument("--traces", default=",".join(TRACES), help="comma-separated trace files of the shared workloads")
    args = ap.parse_args()
    a_opts = [o for o in args.a.split(",") if o]
    b_opts = [o for o in args.b.split(",") if o]
    print(f"{args.dispatcher}: A = {args.a or 'defaults'}, B = {args.b or 'defaults'}; {args.slices} slices "
          f"of {args.jobs:,} jobs per trace, last2")
    for trace in args.traces.split(","):
        system, first, step = TRACES[trace]
        runs: dict[str, list[dict]] = {"a": [], "b": []}
        print(f"\n{trace}\n{'first job':>10} {'wait A':>9} {'wait B':>9} {'bsld A':>8} {'bsld B':>8} "
              f"{'wall A':>7} {'wall B':>7}")
        with ThreadPoolExecutor(2) as pool:
            for k in range(args.slices):
                skip = first + k * step
                fa = pool.submit(simulate, args.dispatcher, a_opts, trace, system, skip, args.jobs)
                fb = pool.submit(simulate, args.dispatcher, b_opts, trace, system, skip, args.jobs)
                ra, rb = fa.result(), fb.result()
                runs["a"].append(ra)
                runs["b"].append(rb)
                print(f"{skip + 1:>10,} {ra['wait']:>9.0f} {rb['wait']:>9.0f} {ra['bsld']:>8.2f} {rb['bsld']:>8.2f} "
                      f"{ra['wall']:>7.1f} {rb['wall']:>7.1f}", flush=True)
        print(f"B minus A, mean [95% interval] over {args.slices} slices:")
        for key in ("wait", "bsld", "wall", *(f"wait {c}" for c in CLASSES)):
            print("  " + show(key, paired_difference([r[key] for r in runs["b"]], [r[key] for r in runs["a"]])))


if __name__ == "__main__":
    main()
