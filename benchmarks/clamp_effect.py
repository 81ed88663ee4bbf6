#!/usr/bin/env python3
"""Per decision, whether CP'19's under-estimation clamp (version 2) changes what a version 1 starts.

Runs version 1 (no clamp: `hcp1` or `pcp1`) on the CP'19 ablation's workload (KTH-SP2 jobs 8,001 to
8,150, submit times jittered by ±60 s per replica, as `cpdispatch reproduce`) under the paper
profile; at every decision version 2 (`hcp2`, `pcp2`: the clamp and nothing else) decides on the
same snapshot too, not enacted. Counts the decisions where the clamp has something to clamp (a
running job past its predicted end, a queued job predicted to last 0 s), and those where the two
start different jobs or nodes, or plan different later starts.

    python benchmarks/clamp_effect.py --version hcp --predictor datadriven --replicas 0,1,2,3,4
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cpdispatch.campaign.runner import build_workload  # noqa: E402
from cpdispatch.dispatchers import make_dispatcher  # noqa: E402
from cpdispatch.predictors import make_predictor  # noqa: E402
from cpdispatch.simulator import SimOptions, simulate  # noqa: E402
from cpdispatch.snapshot import Decision, Snapshot  # noqa: E402
from cpdispatch.system import load_system  # noqa: E402

TRACE = Path(__file__).resolve().parents[2] / "shared" / "workloads" / "KTH-SP2-1996-2.1-cln.swf.gz"


def placed(d: Decision) -> set[tuple[str, tuple[int, ...]]]:
    return {(s.job_id, tuple(sorted(s.nodes))) for s in d.starts}


def clampable(snapshot: Snapshot) -> bool:
    """Whether the clamp changes the instance: a running job past its predicted end, or a queued
    job predicted to last 0 s."""
    return (any(r.predicted_end <= snapshot.time for r in snapshot.running)
            or any(q.predicted <= 0 for q in snapshot.queued))


def run(version: str, predictor: str, replica: int, det_time: float, wall_cap: float) -> Counter[str]:
    system = load_system("kth-sp2")
    workload = build_workload({"workload": {"path": str(TRACE), "system": "kth-sp2", "format": "auto",
                                            "limit_jobs": 150, "skip_jobs": 8000},
                               "jitter": 60, "replica": replica})
    options = {"profile": "paper", "deterministic_time": str(det_time), "det_wall_cap": str(wall_cap)}
    one, two = make_dispatcher(f"{version}1", options), make_dispatcher(f"{version}2", options)
    counts: Counter[str] = Counter()

    def ask(snapshot: Snapshot, decision: Decision, ms: float) -> None:
        other = two.decide(snapshot)
        c = clampable(snapshot)
        counts["decisions"] += 1
        counts["clampable"] += c
        key = "clampable" if c else "not clampable"
        counts[f"different starts ({key})"] += placed(decision) != placed(other)
        counts[f"different later plan ({key})"] += (decision.plan or {}) != (other.plan or {})
        counts[f"status {decision.status} / {other.status}"] += 1

    simulate(system, workload, one, make_predictor(predictor), SimOptions(progress=False), on_decision=ask)
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", choices=("hcp", "pcp"), default="hcp")
    ap.add_argument("--predictor", default="datadriven")
    ap.add_argument("--replicas", default="0,1,2,3,4")
    ap.add_argument("--det-time", type=float, default=0.01, help="the reproduction's ablation value")
    ap.add_argument("--wall-cap", type=float, default=5.0)
    a = ap.parse_args(argv)
    total: Counter[str] = Counter()
    for r in (int(x) for x in a.replicas.split(",")):
        c = run(a.version, a.predictor, r, a.det_time, a.wall_cap)
        print(f"replica {r}: {c['decisions']} decisions, {c['clampable']} clampable, different starts "
              f"{c['different starts (clampable)']} (clampable) + {c['different starts (not clampable)']} (not)",
              flush=True)
        total.update(c)
    print(f"\n{a.version}1 trajectory, {a.version}2 asked; predictor {a.predictor}; replicas {a.replicas}")
    for key, value in sorted(total.items()):
        print(f"  {key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
