#!/usr/bin/env python3
"""Per decision, what pcp20's first stage starts against what hcp19 would start on the same snapshot.

Runs pcp20 (the trajectory) on a generated heterogeneous workload; at every decision hcp19 decides
on the same snapshot too (not enacted). For the decisions where pcp20 solves, it reports the solver
status, whether the two start different jobs, and the objective of each in pcp20's own terms: hcp19's
plan is made exact by shifting it left in the order of its starts (`greedy.left_shifted`: each job at
its earliest fit, nodes by best fit), so both values are total slowdowns of valid plans of pcp20's
instance. A decision is GPU-contended when a queued GPU job does not fit now. Decisions pcp20
reaches without a solve (fast path, greedy, size guard, a proven relaxation) are only counted, with
whether hcp19 starts the same jobs on the same nodes.

    python benchmarks/first_stage_vs_hcp.py --workload eurora-gpu --load 3.0 --seeds 0,1,2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from dataclasses import dataclass
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_hetero import Cell, workload_of  # noqa: E402

from cpdispatch.dispatchers.base import Dispatcher  # noqa: E402
from cpdispatch.dispatchers.cp.fitting import eligible  # noqa: E402
from cpdispatch.dispatchers.cp.greedy import left_shifted  # noqa: E402
from cpdispatch.dispatchers.cp.models.hcp import Hcp3  # noqa: E402
from cpdispatch.dispatchers.cp.models.pcp20 import Pcp20Dispatcher  # noqa: E402
from cpdispatch.dispatchers.cp.outcome import Outcome, Ready  # noqa: E402
from cpdispatch.predictors import make_predictor  # noqa: E402
from cpdispatch.simulator import SimOptions, simulate  # noqa: E402
from cpdispatch.snapshot import Decision, Snapshot  # noqa: E402


class _Kept:
    """Mixin: keep the last decision's outcome (the plan and its instance)."""

    last: Outcome | None = None

    def optimise(self, ready: Ready) -> Outcome:
        self.last = super().optimise(ready)  # type: ignore[misc]
        return self.last


class Pcp20Kept(_Kept, Pcp20Dispatcher):
    pass


class Hcp19Kept(_Kept, Hcp3):
    pass


@dataclass
class Row:
    time: int
    contended: bool
    status: str
    hcp_status: str
    selected: int
    same_starts: bool
    value: int | None = None  # pcp20's enacted plan, pcp20's objective
    start: int | None = None  # the plan pcp20's solve starts from (greedy, or the shifted relaxation)
    hcp_value: int | None = None  # hcp19's plan shifted left on pcp20's instance
    same_nodes: bool = True  # same starts on the same nodes (as multisets per job)
    stage2: str = ""
    starts: int = 0  # jobs pcp20 starts
    hcp_starts: int = 0
    gpu_starts: int = 0  # GPUs pcp20 starts
    hcp_gpu_starts: int = 0


def placed(d: Decision) -> set[tuple[str, tuple[int, ...]]]:
    """The jobs a decision starts with their nodes (as multisets)."""
    return {(s.job_id, tuple(sorted(s.nodes))) for s in d.starts}


class Probe(Dispatcher):
    """pcp20's decisions, with hcp19 asked the same question at each."""

    name = "probe"

    def __init__(self, pcp20_options: dict[str, Any], enact: str = "pcp20") -> None:
        super().__init__()
        self.p = Pcp20Kept(**pcp20_options)
        self.h = Hcp19Kept()
        self.enact = enact
        self.rows: list[Row] = []
        self.unsolved: dict[tuple[str, bool], int] = {}  # (pcp20's status, same starts and nodes) -> decisions

    def decide(self, snapshot: Snapshot) -> Decision:
        self.p.last = self.h.last = None
        d = self.p.decide(snapshot)
        out, pl = self.p.last, self.p
        if out is None or out.inst is None:
            hd = self.h.decide(snapshot)
            key = (d.status.split(":dropped")[0], placed(d) == placed(hd))
            self.unsolved[key] = self.unsolved.get(key, 0) + 1
            return d if self.enact == "pcp20" else hd
        hd = self.h.decide(snapshot)
        hout = self.h.last
        gpu = snapshot.system.type_index("gpu")
        queued = [q.job for q in snapshot.queued]
        fits = eligible(snapshot.free, queued)
        contended = any(j.req[gpu] > 0 and not f for j, f in zip(queued, fits))
        row = Row(snapshot.time, contended, str(out.status), str(hout.status) if hout else hd.status,
                  len(out.inst.jobs), {s.job_id for s in d.starts} == {s.job_id for s in hd.starts},
                  out.objective, pl.plan_value(out.inst, pl.ready(out.inst).greedy) if pl.fallback else None)
        if hout is not None and hout.plan is not None and hout.inst is not None:
            ids = {j.id for j in out.inst.jobs}
            if ids == {j.id for j in hout.inst.jobs}:
                shifted = left_shifted(out.inst, hout.plan)
                if shifted is not None:
                    row.hcp_value = pl.plan_value(out.inst, shifted)
        by_id = {q.job.id: q.job for q in snapshot.queued}
        row.same_nodes = placed(d) == placed(hd)
        row.stage2 = d.stage2.status if d.stage2 is not None else ""
        row.starts, row.hcp_starts = len(d.starts), len(hd.starts)
        row.gpu_starts = sum(by_id[s.job_id].units * by_id[s.job_id].req[gpu] for s in d.starts)
        row.hcp_gpu_starts = sum(by_id[s.job_id].units * by_id[s.job_id].req[gpu] for s in hd.starts)
        self.rows.append(row)
        return d if self.enact == "pcp20" else hd


def run(workload: str, load: float, seed: int, jobs: int, options: dict[str, Any], enact: str) -> list[Row]:
    system, wl = workload_of(Cell(workload, load, "pcp20", "own", seed, jobs))
    probe = Probe(options, enact)
    simulate(system, wl, probe, make_predictor("last2"), SimOptions(progress=False))
    print("decisions without a solve (pcp20 status, same as hcp19):", probe.unsolved)
    return probe.rows


def report(rows: list[Row]) -> dict[str, Any]:
    out: dict[str, Any] = {"decisions": len(rows)}
    for label, sel in (("contended", [r for r in rows if r.contended]),
                       ("other", [r for r in rows if not r.contended])):
        cmp = [(r.value, r.hcp_value, r.same_starts) for r in sel if r.value is not None and r.hcp_value is not None]
        out[label] = {
            "decisions": len(sel),
            "status": dict(Counter(r.status.split(":")[0] for r in sel)),
            "different_starts": sum(not r.same_starts for r in sel),
            "same_starts_other_nodes": sum(r.same_starts and not r.same_nodes for r in sel),
            "stage2": dict(Counter(r.stage2 for r in sel)),
            "hcp_better": sum(h < v for v, h, _ in cmp),
            "hcp_worse": sum(h > v for v, h, _ in cmp),
            "hcp_better_when_different": sum(h < v for v, h, same in cmp if not same),
            "starts": sum(r.starts for r in sel), "hcp_starts": sum(r.hcp_starts for r in sel),
            "gpu_starts": sum(r.gpu_starts for r in sel), "hcp_gpu_starts": sum(r.hcp_gpu_starts for r in sel),
            "solver_improved_on_start": sum(r.start is not None and r.value is not None and r.value < r.start
                                            for r in sel),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", default="eurora-gpu")
    ap.add_argument("--load", type=float, default=3.0)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--jobs", type=int, default=3000)
    ap.add_argument("-o", "--option", action="append", default=[], help="pcp20 option KEY=VALUE")
    ap.add_argument("--enact", choices=("pcp20", "hcp19"), default="pcp20", help="whose decisions run")
    ap.add_argument("--json", help="write every row here")
    args = ap.parse_args(argv)
    known = {o.name: o for o in Pcp20Dispatcher.options}
    options: dict[str, Any] = {}
    for text in args.option:
        key, value = text.split("=", 1)
        options[key] = known[key].parse(value)
    every: list[dict[str, Any]] = []
    for seed in map(int, args.seeds.split(",")):
        rows = run(args.workload, args.load, seed, args.jobs, options, args.enact)
        print(f"seed {seed}:", json.dumps(report(rows)))
        every += [{"seed": seed, **r.__dict__} for r in rows]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(every, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
