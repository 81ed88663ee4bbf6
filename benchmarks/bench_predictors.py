"""Prediction accuracy and cost of the on-line predictors on whole traces, without a dispatcher.

Each predictor is fed the trace's own history in time order: a job is predicted at its submission
and observed at its recorded end (submit + recorded wait + run time), so every predictor sees the
same jobs finish at the same moments and none sees the future. Printed per trace and predictor:
mean absolute error (s), mean accuracy min(p, r) / max(p, r), under-estimation rate, and the
predictor's own cost (microseconds per job, predict + observe).

With `--simulate N`, also the cost in a simulation: whole `cpdispatch simulate` processes under
EASY with each predictor, N interleaved rounds, the median wall time and its ratio to the run with
requested times (what a predictor adds to the most common command).

    python benchmarks/bench_predictors.py                       # KTH-SP2, HPC2N, CEA-Curie
    python benchmarks/bench_predictors.py --traces kth --predictors last2,learned -o learned:quantile=0.6
    python benchmarks/bench_predictors.py --traces kth,hpc2n --simulate 3
"""

from __future__ import annotations

import argparse
import heapq
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

from cpdispatch import read_workload
from cpdispatch.predictors import make_predictor
from cpdispatch.predictors.base import Predictor
from cpdispatch.system import load_system
from cpdispatch.workloads.base import Workload

try:  # run as a script or as a module
    from common import WORKLOADS
except ImportError:  # pragma: no cover
    from benchmarks.common import WORKLOADS

TRACES = {
    "kth": ("kth-sp2", "KTH-SP2-1996-2.1-cln.swf.gz"),
    "hpc2n": ("hpc2n", "HPC2N-2002-2.2-cln.swf.gz"),
    "curie": ("cea-curie", "CEA-Curie-2011-2.1-cln.swf.gz"),
}


def replay(workload: Workload, predictor: Predictor) -> tuple[np.ndarray, np.ndarray, float]:
    """Predictions at submission and actual run times, in job order, and the seconds spent in
    the predictor."""
    jobs = workload.jobs
    pred = np.zeros(len(jobs), dtype=np.int64)
    ends: list[tuple[int, int]] = []
    spent = 0.0
    for i, job in enumerate(jobs):
        while ends and ends[0][0] <= job.submit:
            end, k = heapq.heappop(ends)
            t0 = time.perf_counter()
            predictor.observe(jobs[k], jobs[k].runtime, end)
            spent += time.perf_counter() - t0
        t0 = time.perf_counter()
        pred[i] = predictor.predict(job, job.submit)
        spent += time.perf_counter() - t0
        heapq.heappush(ends, (job.submit + (job.recorded_wait or 0) + job.runtime, i))
    runtime = np.fromiter((j.runtime for j in jobs), dtype=np.int64, count=len(jobs))
    return pred, runtime, spent


def accuracy(pred: np.ndarray, run: np.ndarray) -> dict[str, float]:
    p, r = np.maximum(pred, 1), np.maximum(run, 1)
    return {"mae": float(np.abs(pred - run).mean()), "acc": float((np.minimum(p, r) / np.maximum(p, r)).mean()),
            "under": float((pred < run).mean())}


def simulate_wall(system: str, trace: str, predictor: str) -> float:
    """Wall seconds of one whole `cpdispatch simulate` process under EASY."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "cpdispatch", "simulate", "--system", system, "--workload", trace,
               "--dispatcher", "easy", "--predictor", predictor, "--out", out, "--no-progress"]
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - t0


def simulation_cost(key: str, predictors: list[str], rounds: int) -> None:
    system, file = TRACES[key]
    names = ["walltime", *[p for p in predictors if p != "walltime"]]
    walls: dict[str, list[float]] = {n: [] for n in names}
    for _ in range(rounds):  # interleaved: a drift of the machine's speed hits every predictor alike
        for n in names:
            walls[n].append(simulate_wall(system, str(WORKLOADS / file), n))
    base = statistics.median(walls["walltime"])
    for n in names:
        med = statistics.median(walls[n])
        print(f"{key:<8} easy + {n:<12} median wall {med:7.1f} s ({min(walls[n]):.1f}-{max(walls[n]):.1f}), "
              f"{med / base:.2f}x the run with requested times", flush=True)


def parse_opts(items: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        name, _, kv = item.partition(":")
        key, _, value = kv.partition("=")
        out.setdefault(name, {})[key] = float(value) if "." in value else int(value)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", default="kth,hpc2n,curie")
    ap.add_argument("--predictors", default="walltime,last2,learned")
    ap.add_argument("-o", action="append", default=[], help="PREDICTOR:KEY=VALUE")
    ap.add_argument("--simulate", type=int, default=0, metavar="N", help="also time N rounds of whole EASY runs")
    args = ap.parse_args()
    opts = parse_opts(args.o)
    print(f"{'trace':<8} {'predictor':<12} {'jobs':>8} {'MAE s':>9} {'accuracy':>9} {'under':>7} {'us/job':>8}")
    for key in args.traces.split(","):
        system, file = TRACES[key]
        wl = read_workload(str(WORKLOADS / file), load_system(system))
        for name in args.predictors.split(","):
            pred, run, spent = replay(wl, make_predictor(name, **opts.get(name, {})))
            a = accuracy(pred, run)
            print(f"{key:<8} {name:<12} {len(run):>8,} {a['mae']:>9.0f} {a['acc']:>9.3f} {a['under']:>7.3f} "
                  f"{spent / len(run) * 1e6:>8.1f}", flush=True)
    if args.simulate:
        for key in args.traces.split(","):
            simulation_cost(key, args.predictors.split(","), args.simulate)


if __name__ == "__main__":
    main()
