#!/usr/bin/env python3
"""How contended each reproduced study's workload is, by its baseline's mean wait, against the
papers' (Eurora's PBS on BATCH1: 6,841 s, CP'14 Table 4): the settings behind the reproduction's
column "at the papers' contention" (`reproduce.experiments.Scale`, busy settings).

For each study, the baseline (PBS-like for the Eurora and 2014 studies, EASY for the KIT shape,
with the study's predictions) runs the candidate workloads, three replicas each (seeds, or
submit-time jitter for traces), built exactly as the campaigns build them; the chosen setting is
marked, with whether its mean wait lies within a factor of two of the target.

    python benchmarks/calibrate_contention.py
"""

from __future__ import annotations

import math
import sys
from typing import Any

from cpdispatch import api
from cpdispatch.campaign.runner import build_workload
from cpdispatch.reproduce.experiments import BUSY_TARGET, FULL, PAPER_D, traces
from cpdispatch.system import load_system

REPLICAS = (1, 2, 3)


def trace(name: str, system: str, skip: int, limit: int, jitter: int = 60) -> dict[str, Any]:
    return {"path": str(traces() / name), "system": system, "format": "auto", "limit_jobs": limit, "skip_jobs": skip,
            "jitter": jitter}


def generated(factor: float) -> dict[str, Any]:
    return {"generate": "eurora", "jobs": FULL.eurora_jobs, "system": "eurora", "duration_factor": factor, "jitter": 0}


def mean_wait(workload: dict[str, Any], baseline: str, load: float, predictor: str) -> float:
    waits = []
    for replica in REPLICAS if "generate" in workload or workload["jitter"] else REPLICAS[:1]:
        jobs = build_workload({"workload": workload, "jitter": workload.get("jitter", 0), "replica": replica})
        result = api.simulate(load_system(workload["system"]), jobs, baseline, predictor, load_factor=load)
        waits.append(float(result.summary["avg_wait"]))
    return sum(waits) / len(waits)


def main() -> int:
    kth, curie = "KTH-SP2-1996-2.1-cln.swf.gz", "CEA-Curie-2011-2.1-cln.swf.gz"
    studies: list[tuple[str, str, str, list[tuple[str, dict[str, Any], float, bool]]]] = [
        ("eurora-cp (generated Eurora jobs)", "pbs", PAPER_D, [
            *((f"load {x:g}", generated(1.0), x, False) for x in (3.0, 10.0, 100.0)),
            *((f"jobs x{f:g}, load {FULL.eurora_loads[0]:g}", generated(f), FULL.eurora_loads[0],
               f == FULL.eurora_busy_factor) for f in (10.0, 20.0, 30.0)),
        ]),
        ("eurora14 (KTH-SP2 slices of the 2014 study)", "pbs", "walltime", [
            (f"slices at 5,000/9,000/13,000, load {x:g}", {"slices": [trace(kth, "kth-sp2", s, FULL.kth_jobs, 0)
                                                                        for s in (5000, 9000, 13000)]},
             x, x == FULL.eurora14_busy_load) for x in (1.0, 1.5, 2.0, 3.0)
        ]),
        ("kit-sim (CEA-Curie jobs on the KIT shape)", "easy", "last2", [
            (f"after {s:,}, load {x:g}", trace(curie, "kit-forhlr2", s, FULL.kit_sim_jobs), x,
             s == FULL.kit_busy_skip and x == FULL.kit_busy_load)
            for s in (200_000, 100_000, 150_000) for x in (1.0, 3.0)
        ]),
    ]
    low, high = BUSY_TARGET / 2, BUSY_TARGET * 2
    print(f"target: {BUSY_TARGET:,.0f} s (within a factor of two: {low:,.0f} to {high:,.0f} s)")
    for title, baseline, predictor, candidates in studies:
        print(f"\n{title}, baseline {baseline} with {predictor} predictions (the study's):")
        for text, workload, load, chosen in candidates:
            if "slices" in workload:
                slices = workload["slices"]
                wait = sum(mean_wait(w, baseline, load, predictor) for w in slices) / len(slices)
            else:
                wait = mean_wait(workload, baseline, load, predictor)
            within = low <= wait <= high
            mark = " <- chosen" if chosen else ""
            factor = math.exp(abs(math.log(max(wait, 1.0) / BUSY_TARGET)))
            print(f"  {text:40s} mean wait {wait:9,.0f} s  factor {factor:6.1f}  {'within' if within else 'outside'}"
                  f"{mark}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
