"""The live driver's own overhead on a real local Slurm cluster (root; Debian's Slurm installed on
first use), for each dispatcher side by side on fresh clusters, each driver in a process of its
own (its peak memory is its own). Jobs are submitted held (a closed lease), then the driver runs
rounds until all are done (`--seconds 0`) or for `--seconds`. Prints per round the read (squeue,
sinfo, partitions), decide and apply (pins, releases, lease upkeep) times, the starts per second,
and the driver's peak RSS.

    python benchmarks/bench_slurm_driver.py                       # 200 sleep-1 jobs, 8 nodes
    python benchmarks/bench_slurm_driver.py --nodes 256 --jobs 2800 --sleep 300 --seconds 90 \\
        --lease 60 --dispatchers easy,pcp20                       # at scale: ~2,000 pending, ~850 running
"""

from __future__ import annotations

import argparse
import io
import multiprocessing
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from cpdispatch.dispatchers.base import make_dispatcher
from cpdispatch.predictors import resolve_predictor
from cpdispatch.slurm import local_cluster
from cpdispatch.slurm.commands import SlurmCommands
from cpdispatch.slurm.driver import Driver
from cpdispatch.slurm.failsafe import FailSafe, Lease, default_lease_file, write_lease
from cpdispatch.slurm.figures import format_summary


def one(dispatcher: str, a: argparse.Namespace) -> None:
    base = Path(tempfile.mkdtemp(prefix="cpdispatch-bench-slurm-"))
    conf = local_cluster.start(local_cluster.node_specs(a.nodes, a.nodes // 4 if a.nodes > 8 else a.nodes // 2), base,
                               timeout=30 + a.nodes / 2)
    try:
        cmds = SlurmCommands(str(conf))
        lease = default_lease_file(str(conf))
        write_lease(lease, Lease(int(time.time()), 3600, "closed"))  # submitted held, as before any driver
        t_sub = time.perf_counter()
        for i in range(a.jobs):
            args = ["-c", str(1 + i % 2)] + (["--gres=gpu:1"] if i % 5 == 0 else [])
            sleep = a.sleep if a.seconds == 0 else a.sleep + i % a.sleep  # varied ends at scale
            cmds.run("sbatch", "-t", str(max(1, -(-2 * sleep // 60))), "-o", "/dev/null", "--chdir", "/tmp", *args,
                     "--wrap", f"sleep {sleep}")
        t_sub = time.perf_counter() - t_sub
        driver = Driver(make_dispatcher(dispatcher, {}), resolve_predictor("last2"), cmds, base / "state",
                        failsafe=FailSafe(lease, a.lease), max_starts=a.max_starts, log=io.StringIO())
        driver.poll = a.poll
        t0 = time.perf_counter()
        limit = a.seconds or 600
        later: list[float] = []  # rounds after the first --settle seconds (the start-up burst)
        while (a.seconds or driver.learnt < a.jobs) and time.perf_counter() - t0 < limit:
            t = time.perf_counter()
            fig = driver.round()
            if t - t0 >= a.settle:
                later.append(fig.total_s * 1e3)
            time.sleep(max(0.0, a.poll - (time.perf_counter() - t)))
        wall = time.perf_counter() - t0
        summary = driver.summary()
        driver.close()
        started = summary["started"]
        print(f"\n{dispatcher}: {a.jobs} jobs submitted in {t_sub:.0f} s on {a.nodes} nodes; {started} started in "
              f"{wall:.1f} s ({started / wall:.1f} starts/s through Slurm, {summary['rounds']} rounds)")
        print(format_summary(summary))
        if later:
            print(f"rounds after the first {a.settle:g} s: {len(later)}, round mean / p50 / p99 / max "
                  f"{np.mean(later):.0f} / {np.percentile(later, 50):.0f} / {np.percentile(later, 99):.0f} / "
                  f"{max(later):.0f} ms")
        print(f"peak RSS of this driver: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    finally:
        SlurmCommands(str(conf)).run("scancel", "--user=root")  # no job outlives its cluster
        time.sleep(5)
        local_cluster.stop(conf)
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--jobs", type=int, default=200)
    p.add_argument("--nodes", type=int, default=8)
    p.add_argument("--sleep", type=int, default=1, help="seconds each job sleeps (at scale: sleep + i %% sleep)")
    p.add_argument("--seconds", type=float, default=0, help="run the driver this long (0: until all are done)")
    p.add_argument("--poll", type=float, default=0.2)
    p.add_argument("--lease", type=int, default=10)
    p.add_argument("--max-starts", type=int, default=200, help="as slurm dispatch's (0: all)")
    p.add_argument("--settle", type=float, default=30.0, help="also report the rounds after this many seconds")
    p.add_argument("--dispatchers", default="fifo,easy,pcp19,pcp20")
    a = p.parse_args()
    ctx = multiprocessing.get_context("spawn")
    for name in a.dispatchers.split(","):
        proc = ctx.Process(target=one, args=(name, a))
        proc.start()
        proc.join()


if __name__ == "__main__":
    sys.exit(main())
