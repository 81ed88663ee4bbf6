"""The live driver's own overhead on a real local Slurm cluster (root; Debian's Slurm installed on
first use): N sleep jobs submitted at once (held), then `slurm dispatch` rounds until all are done,
for each dispatcher side by side on fresh clusters. Prints per round the read (squeue, sinfo,
partitions), decide and apply (pins + one release) times, the jobs/s the driver started, and the
peak memory of this process.
Usage: python benchmarks/bench_slurm_driver.py [--jobs N] [--nodes N] [--dispatchers a,b]
"""

from __future__ import annotations

import argparse
import io
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from cpdispatch.dispatchers.base import make_dispatcher
from cpdispatch.predictors import resolve_predictor
from cpdispatch.slurm import local_cluster
from cpdispatch.slurm.commands import SlurmCommands
from cpdispatch.slurm.driver import Driver, format_summary


def one(dispatcher: str, jobs: int, nodes: int) -> None:
    base = Path(tempfile.mkdtemp(prefix="cpdispatch-bench-slurm-"))
    conf = local_cluster.start(local_cluster.node_specs(nodes, nodes // 2), base)
    try:
        cmds = SlurmCommands(str(conf))
        for i in range(jobs):
            args = ["-c", str(1 + i % 2)] + (["--gres=gpu:1"] if i % 5 == 0 else [])
            cmds.run("sbatch", "-t", "1", "-o", "/dev/null", "--chdir", "/tmp", *args, "--wrap", "sleep 1")
        driver = Driver(make_dispatcher(dispatcher, {}), resolve_predictor("last2"), cmds, base / "state",
                        log=io.StringIO())
        t0 = time.perf_counter()
        while driver.learnt < jobs and time.perf_counter() - t0 < 600:
            driver.round()
            time.sleep(0.2)
        wall = time.perf_counter() - t0
        summary = driver.summary()
        driver.close()
        print(f"\n{dispatcher}: {jobs} jobs on {nodes} nodes done in {wall:.1f} s "
              f"({jobs / wall:.1f} jobs/s through Slurm)")
        print(format_summary(summary))
    finally:
        local_cluster.stop(conf)
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--jobs", type=int, default=200)
    p.add_argument("--nodes", type=int, default=8)
    p.add_argument("--dispatchers", default="fifo,easy,pcp19,pcp20")
    a = p.parse_args()
    for name in a.dispatchers.split(","):
        one(name, a.jobs, a.nodes)
    print(f"\npeak RSS of the driver process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    sys.exit(main())
