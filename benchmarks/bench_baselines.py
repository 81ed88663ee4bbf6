"""Simulator + baseline dispatchers on whole real traces: jobs/s, decision times, peak memory.

Targets (2-core machine): HPC2N (202,871 jobs) under easy <= 20 s; RICC (447,794) <= 60 s; any
dispatcher on whole CEA-Curie (5,544 nodes, 218 million job units) <= 1 GB.
Usage: python benchmarks/bench_baselines.py [--quick]
"""

from __future__ import annotations

import sys

from common import HEADER, WORKLOADS, row, run_cli

RUNS = [
    ("kth-sp2", "KTH-SP2-1996-2.1-cln.swf.gz", "easy", "last2"),
    ("kth-sp2", "KTH-SP2-1996-2.1-cln.swf.gz", "fifo", "walltime"),
    ("hpc2n", "HPC2N-2002-2.2-cln.swf.gz", "easy", "walltime"),
    ("hpc2n", "HPC2N-2002-2.2-cln.swf.gz", "fifo", "walltime"),
    ("hpc2n", "HPC2N-2002-2.2-cln.swf.gz", "easy", "last2"),
    ("ricc", "RICC-2010-2.swf.gz", "easy", "walltime"),
    ("cea-curie", "CEA-Curie-2011-2.1-cln.swf.gz", "easy", "walltime"),
    ("cea-curie", "CEA-Curie-2011-2.1-cln.swf.gz", "fifo", "walltime"),
    ("cea-curie", "CEA-Curie-2011-2.1-cln.swf.gz", "pbs", "walltime"),
]


def main() -> None:
    quick = "--quick" in sys.argv
    print(HEADER)
    for system, trace, disp, pred in RUNS[:2] if quick else RUNS:
        s = run_cli(system, str(WORKLOADS / trace), disp, pred)
        print(row(f"{trace.split('-')[0]} {disp} {pred}", s), flush=True)


if __name__ == "__main__":
    main()
