#!/usr/bin/env python3
"""Wall seconds per CP-SAT deterministic second, per CP dispatcher under the paper profile, on the
queues of the reproduction's studies at the papers' contention: why `deterministic_time` bounds the
time of PCP'20's and HCP'19's decisions but not that of the per-node models (PCP'19, Eurora'14),
and so why the reproduction's runs of those models at contention take hours
(docs/reproduction-time.md).

The instances are recorded from PBS-like runs of each study's workload at contention (as
`reproduce` builds them: `eurora-cp-busy`'s first replica, `eurora14-busy`'s third slice); the
`--instances` whose queues are nearest the run's median queue length (among those where a job
could start) are decided by each dispatcher with `profile=paper, deterministic_time=0.05`, and
every solve's wall and deterministic times are read back from CP-SAT.

    python benchmarks/det_time_ratio.py [--instances 3] [--det-time 0.05]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from ortools.sat.python import cp_model

from cpdispatch import api
from cpdispatch.campaign.runner import build_workload
from cpdispatch.dispatchers.base import make_dispatcher
from cpdispatch.dispatchers.cp import solve as solve_module
from cpdispatch.instance_log import load_instances
from cpdispatch.reproduce.experiments import FULL, traces
from cpdispatch.snapshot import Snapshot
from cpdispatch.system import load_system

DISPATCHERS = ("pcp20", "hcp19", "pcp19", "eurora14")


class _Timed(cp_model.CpSolver):
    """A CpSolver that reports each solve's (wall, deterministic) seconds and status."""

    seen: list[tuple[float, float, str]] = []

    def solve(self, model: Any, callback: Any = None) -> Any:
        status = super().solve(model, callback)
        _Timed.seen.append((self.wall_time, self.deterministic_time, self.status_name(status)))
        return status


#: (study, system, workload as the campaigns build it, load factor, predictor)
STUDIES = (
    ("eurora-cp-busy", "eurora", {"generate": "eurora", "jobs": FULL.eurora_jobs, "system": "eurora",
                                  "duration_factor": FULL.eurora_busy_factor}, FULL.eurora_loads[0], "real"),
    ("eurora14-busy", "kth-sp2", {"path": str(traces() / "KTH-SP2-1996-2.1-cln.swf.gz"), "system": "kth-sp2",
                                  "format": "auto", "skip_jobs": 13_000, "limit_jobs": FULL.kth_jobs},
     FULL.eurora14_busy_load,
     "walltime"),
)


def instances(system: str, workload: dict[str, Any], load: float, predictor: str, n: int, tmp: Path
              ) -> list[Snapshot]:
    """The `n` recorded instances of a PBS-like run nearest its median queue length where a job fits."""
    path = tmp / "instances.jsonl.gz"
    jobs = build_workload({"workload": workload, "jitter": 0, "replica": 1})
    api.simulate(load_system(system), jobs, "pbs", predictor, load_factor=load, record_instances=path)
    fits = [s for s in load_instances(path) if any(s.first_fit(q) for q in s.queued)]
    median = statistics.median(len(s.queued) for s in fits)
    return sorted(fits, key=lambda s: abs(len(s.queued) - median))[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--instances", type=int, default=3)
    ap.add_argument("--det-time", type=float, default=0.05)
    args = ap.parse_args()
    solve_module.cp_model.CpSolver = _Timed  # type: ignore[misc]
    for study, system, workload, load, predictor in STUDIES:
        with tempfile.TemporaryDirectory() as tmp:
            snapshots = instances(system, workload, load, predictor, args.instances, Path(tmp))
        print(f"\n{study}: {len(snapshots)} instances, {min(len(s.queued) for s in snapshots)}-"
              f"{max(len(s.queued) for s in snapshots)} jobs queued, on {system}; profile=paper, "
              f"deterministic_time={args.det_time:g}")
        print(f"{'dispatcher':<10} {'solves':>6} {'det s':>8} {'wall s':>8} {'wall/det mean':>14} {'max':>8} "
              f"{'no plan':>8} {'decision wall s':>16}")
        for name in DISPATCHERS:
            decide_all(name, snapshots, args.det_time)


def decide_all(name: str, snapshots: list[Snapshot], det_time: float) -> None:
    _Timed.seen.clear()
    decisions = []
    for snap in snapshots:
        disp = make_dispatcher(name, {"profile": "paper", "deterministic_time": str(det_time)}, seed=0)
        t0 = time.perf_counter()
        disp.decide(snap)
        decisions.append(time.perf_counter() - t0)
    seen = [(w, d, s) for w, d, s in _Timed.seen if d > 1e-3]  # solves too small to time are left out
    ratios = [w / d for w, d, _ in seen]
    print(f"{name:<10} {len(seen):>6} {sum(d for _, d, _ in seen):>8.3f} {sum(w for w, _, _ in seen):>8.2f} "
          f"{statistics.mean(ratios) if ratios else 0:>14.1f} {max(ratios, default=0):>8.1f} "
          f"{sum(s == 'UNKNOWN' for *_, s in seen):>8} {statistics.mean(decisions):>16.2f}")


if __name__ == "__main__":
    main()
