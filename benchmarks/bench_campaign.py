"""Campaign speed: a small CPU-bound campaign with 1 and 2 local Dask workers (speed-up), and the
overhead per run of the campaign path against calling `cpd.simulate` directly on the same runs.

Each campaign starts from an empty folder; the overhead is (campaign wall time with 1 worker -
the sum of the direct runs' wall times) / runs, so it includes Dask's start-up, the per-run
outputs (schedule.parquet, decisions, summary, run.json) and the final collect.
Usage: python benchmarks/bench_campaign.py [--quick]
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

from common import WORKLOADS

import cpdispatch as cpd
from cpdispatch.campaign import load_campaign, run_campaign
from cpdispatch.campaign.runner import build_workload
from cpdispatch.system import load_system

CAMPAIGN = """
name = "bench"
replicas = {replicas}
jitter = 60
dispatchers = ["easy", "pbs", {{ name = "pcp20", options = {{ fast_budget = 0.01 }} }}]
predictors = ["last2"]
load_factors = [1.0]

[[workloads]]
generate = "eurora"
jobs = 400
system = "eurora"

[[workloads]]
path = "{trace}"
system = "hpc2n"
skip_jobs = 20000
limit_jobs = 1500
"""


def direct(path: Path) -> float:
    """The same runs, one `cpd.simulate` each in this process (workloads built the same way)."""
    total = 0.0
    for s in load_campaign(path).runs:
        t0 = time.perf_counter()
        d = s["dispatcher"]
        cpd.simulate(load_system(s["workload"]["system"]), build_workload(s), d["name"], s["predictor"],
                     d["options"], load_factor=s["load_factor"], seed=s["replica"])
        total += time.perf_counter() - t0
    return total


def main() -> None:
    replicas = 2 if "--quick" in sys.argv else 4
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.toml"
        path.write_text(CAMPAIGN.format(replicas=replicas, trace=WORKLOADS / "HPC2N-2002-2.2-cln.swf.gz"))
        n = len(load_campaign(path).runs)
        walls = {}
        for workers in (1, 2):
            out = Path(tmp) / f"out{workers}"
            t0 = time.perf_counter()
            counts = run_campaign(path, out, workers=workers, progress=False)
            walls[workers] = time.perf_counter() - t0
            assert counts["done"] == n, counts
            shutil.rmtree(out)
        direct_s = direct(path)
    print(f"\n{n} runs (eurora 400 jobs and an HPC2N slice of 1,500 jobs; easy, pbs, pcp20; {replicas} replicas)")
    print(f"{'path':<32} {'wall s':>8} {'runs/s':>8}")
    print(f"{'cpd.simulate, one after another':<32} {direct_s:>8.1f} {n / direct_s:>8.2f}")
    for workers, wall in walls.items():
        print(f"{f'campaign run, {workers} worker(s)':<32} {wall:>8.1f} {n / wall:>8.2f}")
    print(f"speed-up 2 workers / 1 worker: {walls[1] / walls[2]:.2f}x")
    print(f"campaign overhead per run (1 worker vs direct): {(walls[1] - direct_s) / n:.3f} s (goal < 0.5 s)")


if __name__ == "__main__":
    main()
