"""Run one AccaSim 1.1.3 simulation under Python 3.11 (called by bench_vs_accasim.py).

Runs with the interpreter of benchmarks/.accasim-venv, where `accasim==1.1.3` is installed with pip.
AccaSim's files are never edited: the compatibility shims below are applied at run time, before
`accasim` is imported.

Usage: accasim_runner.py WORKLOAD SYS_CONFIG {fifo,easy} RESULTS_DIR OUT_JSON
  WORKLOAD     plain-text SWF file (AccaSim cannot read .gz)
  SYS_CONFIG   AccaSim system config (JSON)
  RESULTS_DIR  where AccaSim writes its outputs (a temporary folder)
  OUT_JSON     this script's own report: job counts and the parsed statistics file
"""

from __future__ import annotations

import collections
import collections.abc
import json
import sys


def apply_shims() -> list[str]:
    """The minimal patches AccaSim 1.1.3 needs on Python 3.11; returns what was patched."""
    applied = []
    # accasim/utils/misc.py does `from collections import Mapping` (the alias was removed in
    # Python 3.10); FrozenDict subclasses it. This is the only import that fails on 3.11.
    if not hasattr(collections, "Mapping"):
        collections.Mapping = collections.abc.Mapping  # type: ignore[attr-defined]
        applied.append("collections.Mapping = collections.abc.Mapping")
    return applied


def parse_stats(path: str) -> dict[str, float | str]:
    """AccaSim's stats file: `Simulation time: 12.34 secs`, `Total jobs: N`, `Avg. waiting times: x`, ..."""
    keys = {"Simulation time": "loop_s", "Dispathing method": "dispatcher", "Total jobs": "jobs",
            "Makespan": "makespan", "Avg. waiting times": "avg_wait", "Avg. slowdown": "avg_slowdown"}
    out: dict[str, float | str] = {}
    with open(path) as f:
        for line in f:
            name, _, value = line.partition(":")
            if name.strip() in keys:
                value = value.strip().removesuffix(" secs")
                try:
                    out[keys[name.strip()]] = float(value)
                except ValueError:
                    out[keys[name.strip()]] = value
    return out


def main(argv: list[str]) -> int:
    workload, sys_config, dispatcher, results, out_json = argv
    shims = apply_shims()

    from accasim.base.allocator_class import FirstFit
    from accasim.base.scheduler_class import EASYBackfilling, FirstInFirstOut
    from accasim.base.simulator_class import Simulator

    sched = {"fifo": FirstInFirstOut, "easy": EASYBackfilling}[dispatcher]
    # The Simulator's defaults are kept (schedule file and statistics file on, statistics shown in
    # the log, benchmark file off); pprint is already off by default and is turned off explicitly.
    sim = Simulator(workload, sys_config, sched(FirstFit()), RESULTS_FOLDER_PATH=results, pprint_output=False)
    files = sim.start_simulation()
    stats = parse_stats(files["stats-"])
    report = {"shims": shims, "loaded": sim.loaded_jobs, "dispatched": sim.dispatched_jobs,
              "rejected": sim.rejected_jobs, "stats": stats, "files": files}
    with open(out_json, "w") as f:
        json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
