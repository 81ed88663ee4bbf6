"""PCP'20 model size and times on synthetic instances, small vs large systems.

The same queued jobs are modelled on Eurora (64 nodes), on Eurora's node types scaled to 5,504
nodes, and on CEA Curie (5,544 nodes). Variables depend on the queued jobs and on the node *types*
only, not on the number of nodes. Constraints also count the running jobs' fixed intervals (one per
distinct remaining time, `run_intervals`) and boxes: a bigger system holds more running jobs.

Scenarios (per-unit requests):
  swf    1 core per unit (what SWF traces give; the core axis is "fluid": cumulative only)
  mem    1 core + 1,000 MB (memory never binds before cores here: left out, then fluid)
  rigid  1 core + 4,000 MB (memory can bind: positions, node variables, NoOverlap2D per type)

Run: `python benchmarks/pcp20_model_size.py [--queued 100] [--running 1000] [--seed 0]
[--limit 1.0] [--max-units 64] [--presolve]`.
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np
from ortools.sat.python import cp_model

from cpdispatch.dispatchers.cp.greedy import greedy_plan
from cpdispatch.dispatchers.cp.instance import CpJob, CpRunning, Instance
from cpdispatch.dispatchers.cp.models.pcp20 import Pcp20Model
from cpdispatch.dispatchers.cp.models.pcp20.options import Pcp20Options
from cpdispatch.dispatchers.cp.options import declared
from cpdispatch.snapshot import Allocation
from cpdispatch.system import NodeGroup, System, load_system

MEM_PER_CORE = {"swf": 0, "mem": 1000, "rigid": 4000}
SIZES = (1, 1, 1, 2, 4, 8, 16, 32, 64, 128, 256)


def request(system: System, mem_per_core: int) -> tuple[int, ...]:
    req = [0] * len(system.types)
    req[system.type_index("core")] = 1
    if mem_per_core:
        req[system.type_index("mem")] = mem_per_core
    return tuple(req)


def synthetic(system: System, queued: int, running: int, seed: int, scenario: str, max_units: int) -> Instance:
    """`running` jobs placed first fit from random nodes until ~90% of the cores are busy, and
    `queued` jobs (the same on every system for a seed), durations 1 min - 10 h."""
    req = request(system, MEM_PER_CORE[scenario])
    vec = np.asarray(req, dtype=np.int64)
    sizes = [s for s in SIZES if s <= max_units]
    rnd = random.Random(seed)
    free = np.array(system.capacity, dtype=np.int64)
    n, core = system.n_nodes, system.type_index("core")
    busy_target = 0.9 * free[:, core].sum()
    runs: list[CpRunning] = []
    for i in range(running):
        if system.capacity[:, core].sum() - free[:, core].sum() > busy_target:
            break
        units = rnd.choice(sizes)
        nodes: list[int] = []
        k = rnd.randrange(n)
        for _ in range(n):
            while len(nodes) < units and (free[k] >= vec).all():
                free[k] -= vec
                nodes.append(k)
            if len(nodes) == units:
                break
            k = (k + 1) % n
        if len(nodes) < units:
            for k in nodes:
                free[k] += vec
            continue
        runs.append(CpRunning(f"r{i}", units, req, rnd.randint(60, 36_000), Allocation.of_units(tuple(nodes))))
    rnd = random.Random(seed + 1)  # the same queued jobs on every system
    jobs = [
        CpJob(f"q{i}", rnd.choice(sizes), req, rnd.randint(60, 36_000), rnd.randint(0, 7200))
        for i in range(queued)
    ]
    horizon = sum(r.remaining for r in runs) + sum(j.duration for j in jobs)
    return Instance(0, system, tuple(jobs), tuple(runs), free, horizon)


def measure(inst: Instance, limit: float, presolve: bool) -> dict[str, object]:
    t0 = time.perf_counter()
    bm = Pcp20Model(inst, "slowdown", declared(Pcp20Options, max_units=0))
    t1 = time.perf_counter()
    plan = greedy_plan(inst)
    t2 = time.perf_counter()
    bm.add_hint(plan)
    t3 = time.perf_counter()
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = 1
    solver.parameters.max_time_in_seconds = limit
    solver.parameters.cp_model_presolve = presolve
    status = solver.Solve(bm.model)
    t4 = time.perf_counter()
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        bm.extract(solver)
    t5 = time.perf_counter()
    size = bm.size()
    return {
        "vars": size["variables"],
        "cons": size["constraints"],
        "boxes": size["boxes"],
        "run_boxes": size["running_boxes"],
        "run_intervals": size["running_intervals"],
        "build_ms": round(1000 * (t1 - t0), 1),
        "hint_ms": round(1000 * (t3 - t2), 1),
        "solve_ms": round(1000 * (t4 - t3), 1),
        "extract_ms": round(1000 * (t5 - t4), 1),
        "greedy_ms": round(1000 * (t2 - t1), 1),
        "status": solver.StatusName(status),
    }


def systems() -> list[System]:
    eurora = load_system("eurora")
    scaled = System.build(
        "eurora-x86", [NodeGroup(g.group, g.count * 86, g.resources) for g in eurora.groups], eurora.swf_processor
    )
    return [eurora, scaled, load_system("cea-curie")]


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--queued", type=int, default=100)
    ap.add_argument("--running", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=float, default=1.0, help="solver time limit in seconds")
    ap.add_argument("--max-units", type=int, default=64, help="largest job (units)")
    ap.add_argument("--presolve", action="store_true", help="keep CP-SAT's presolve (slow on big NoOverlap2D)")
    args = ap.parse_args()
    for scenario in ("swf", "mem", "rigid"):
        for system in systems():
            inst = synthetic(system, args.queued, args.running, args.seed, scenario, args.max_units)
            row = measure(inst, args.limit, args.presolve)
            units = sum(j.units for j in inst.jobs)
            print(
                f"{scenario:>5} {system.name:>10} nodes={system.n_nodes:<5} queued={len(inst.jobs)} units={units} "
                f"running={len(inst.running)} " + " ".join(f"{k}={v}" for k, v in row.items()),
                flush=True,
            )


if __name__ == "__main__":
    main()
