"""CP dispatchers on real traces: decision times, quality side by side, model sizes.

Sections (all by default; pick with flags):
  --timing   pcp20 (and hcp19) with last2 over HPC2N and CEA-Curie (its first 60,000 jobs unless
             --full): decision time mean/p50/p99/max, jobs/s, peak memory. Targets: pcp20 mean
             <= 20 ms, p99 <= 100 ms, max <= 1 s on both whole traces; <= 1 GB on CEA-Curie.
  --quality  average wait and bounded slowdown of pcp20, hcp19, pcp19, easy, pbs side by side on
             HPC2N, CEA-Curie, the Alibaba GPU trace and a generated Eurora-like workload (slices
             where pcp19 would take too long; sizes below).
  --sizes    record instances on a large system and replay them with pcp20 and pcp19 (fast path off):
             per-instance variable ratio pcp20/pcp19 (the paper's Figure 6: below 0.1 everywhere).
  --stretch  the congested stretch of HPC2N (jobs 120,001-150,000; last2; no room probe, whose own
             time is most of easy's there): easy and pcp20 side by side in one run, pcp20's wall time
             as a ratio to easy's (issue 26's goal: at most a quarter of the ratio before the issue).
             Not in the default set (~2 min).
Usage: python benchmarks/bench_cp.py [--timing] [--quality] [--sizes] [--stretch] [--full]
"""

from __future__ import annotations

import csv
import gzip
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from common import HEADER, WORKLOADS, row, run_cli

from cpdispatch.dispatchers import make_dispatcher
from cpdispatch.dispatchers.cp.frontend import CpDispatcher
from cpdispatch.instance_log import load_instances
from cpdispatch.system import units_fitting

ALIBABA = WORKLOADS / "alibaba_gpu_v2023" / "openb_pod_list_default.csv.gz"
QUALITY_DISPATCHERS = ["pcp20", "hcp19", "pcp19", "easy", "pbs"]


def timing(full: bool) -> None:
    print("\n== decision times (predictor last2; CPU ms beside the wall figures: read those on a shared machine) ==")
    print(HEADER + f" {'cpu mean':>8} {'cpu p99':>8} {'cpu max':>8}")
    runs = [("hpc2n", "HPC2N-2002-2.2-cln.swf.gz", None), ("cea-curie", "CEA-Curie-2011-2.1-cln.swf.gz",
                                                           None if full else 60_000)]
    for system, trace, limit in runs:
        for disp in ("pcp20", "hcp19"):
            s = run_cli(system, str(WORKLOADS / trace), disp, "last2", limit=limit)
            label = f"{trace.split('-')[0]}{'' if limit is None else f'[:{limit // 1000}k]'} {disp}"
            print(row(label, s) + f" {s['dispatch_cpu_ms_mean']:>8.3f} {s['dispatch_cpu_ms_p99']:>8.3f} "
                  f"{s['dispatch_cpu_ms_max']:>8.1f}", flush=True)


def stretch() -> None:
    print("\n== HPC2N jobs 120,001-150,000 (predictor last2, no room probe): wall time as a ratio to easy's, "
          "same run ==")
    print(HEADER + f" {'x easy':>7}")
    trace = str(WORKLOADS / "HPC2N-2002-2.2-cln.swf.gz")
    easy = None
    for disp in ("easy", "pcp20"):
        s = run_cli("hpc2n", trace, disp, "last2", limit=30_000, extra=["--skip-jobs", "120000", "--no-room"])
        easy = easy or s["sim_wall_s"]
        print(row(f"HPC2N[120k:150k] {disp}", s) + f" {s['sim_wall_s'] / easy:>7.1f}", flush=True)


def quality(full: bool) -> None:
    print("\n== quality side by side (predictor last2) ==")
    with tempfile.TemporaryDirectory() as tmp:
        eurora = Path(tmp) / "eurora.csv"
        subprocess.run([sys.executable, "-m", "cpdispatch", "generate", "eurora", "--jobs", "10000", "--seed", "1",
                        "--out", str(eurora)], check=True, stdout=subprocess.DEVNULL)
        cases = [
            ("hpc2n", str(WORKLOADS / "HPC2N-2002-2.2-cln.swf.gz"), None if full else 20_000),
            ("cea-curie", str(WORKLOADS / "CEA-Curie-2011-2.1-cln.swf.gz"), 20_000),
            ("alibaba-gpu-2023", str(ALIBABA), None),
            ("eurora", str(eurora), None),
        ]
        print(HEADER)
        for system, trace, limit in cases:
            for disp in QUALITY_DISPATCHERS:
                s = run_cli(system, trace, disp, "last2", limit=limit)
                name = Path(trace).name.split("-")[0].split(".")[0]
                print(row(f"{name}{'' if limit is None else f'[:{limit // 1000}k]'} {disp}", s), flush=True)


def sizes(full: bool) -> None:
    print("\n== model size on identical instances: pcp20 / pcp19 (fast path off) ==")
    with tempfile.TemporaryDirectory() as tmp:
        inst = Path(tmp) / "inst.jsonl.gz"
        for system, trace, limit in [("cea-curie", "CEA-Curie-2011-2.1-cln.swf.gz", 6000),
                                     ("eurora", None, 3000)]:
            if trace is None:
                path = Path(tmp) / "eurora.csv"
                subprocess.run([sys.executable, "-m", "cpdispatch", "generate", "eurora", "--jobs", str(limit),
                                "--seed", "2", "--out", str(path)], check=True, stdout=subprocess.DEVNULL)
            else:
                path = WORKLOADS / trace
            # Eurora at twice the arrival rate: at the generator's own rate few jobs ever wait
            load = ["--load-factor", "2"] if trace is None else []
            run_cli(system, str(path), "hcp19", "last2", limit=limit, extra=["--record-instances", str(inst), *load])
            built = Path(tmp) / f"built-{system}.jsonl"
            kept = keep_modelled(inst, built)
            print(f"{system}: {kept} recorded instances where hcp19 left a job waiting")
            out = Path(tmp) / f"cmp-{system}"
            subprocess.run([sys.executable, "-m", "cpdispatch", "instances", "compare", str(built),
                            "--dispatchers", "pcp20,pcp19", "--out", str(out),
                            "--limit", "1500" if not full else "20000",
                            "-o", "pcp20:fastpath=false", "-o", "pcp19:fastpath=false"],
                           check=True, stdout=subprocess.DEVNULL)
            # the same instances with pcp20's exact reductions off (every type gets its NoOverlap2D)
            plain = Path(tmp) / f"cmp-{system}-plain"
            subprocess.run([sys.executable, "-m", "cpdispatch", "instances", "compare", str(built),
                            "--dispatchers", "pcp20", "--out", str(plain),
                            "--limit", "1500" if not full else "20000",
                            "-o", "pcp20:fastpath=false", "-o", "pcp20:reductions=false", "-o", "pcp20:max_units=0"],
                           check=True, stdout=subprocess.DEVNULL)
            by: dict[str, dict[str, dict[str, str]]] = {}
            for folder, suffix in ((out, ""), (plain, ":plain")):
                with open(folder / "comparison.csv") as f:
                    for r in csv.DictReader(f):
                        by.setdefault(r["instance"], {})[r["dispatcher"] + suffix] = r
            paper = paper_pcp19_variables(built, len(by))
            ratios, times, paper_ratios, plain_ratios, plain_paper = [], [], [], [], []
            for index, pair in by.items():
                a, b, c = pair.get("pcp20"), pair.get("pcp19"), pair.get("pcp20:plain")
                if a and b and a["variables"] and b["variables"]:
                    ratios.append(int(a["variables"]) / int(b["variables"]))
                    times.append(float(a["solve_ms"]) / max(float(b["solve_ms"]), 1e-6))
                    paper_ratios.append(int(a["variables"]) / paper[int(index)])
                    if c and c["variables"]:
                        plain_ratios.append(int(c["variables"]) / int(b["variables"]))
                        plain_paper.append(int(c["variables"]) / paper[int(index)])
            if not ratios:
                print(f"{system}: no instance with a model for both")
                continue
            print(f"{system}: {len(ratios)} instances with a model for both")
            for label, rs in (("pcp20 / pcp19 (our CP-SAT encoding)", ratios),
                              ("pcp20 / PCP'19 as the paper counts it", paper_ratios),
                              ("pcp20 reductions=false / pcp19", plain_ratios),
                              ("pcp20 reductions=false / PCP'19 as the paper counts it", plain_paper)):
                if not rs:
                    continue
                print(f"  {label}: variables ratio max {max(rs):.3f}, median {statistics.median(rs):.4f}, "
                      f"share < 0.1: {sum(r < 0.1 for r in rs) / len(rs):.1%}")
            print(f"  solve-time ratio pcp20 / pcp19: median {statistics.median(times):.3f}")


def keep_modelled(path: Path, out: Path) -> int:
    """Copy the header and the instances where some queued job was left waiting and not for lack
    of room alone (the others are fast paths or empty queues: no model to compare)."""
    kept = 0
    with gzip.open(path, "rt") as src, open(out, "w") as dst:
        dst.write(next(src))
        for line in src:
            rec = json.loads(line)
            if rec["d"]["status"] not in ("fastpath", "empty") and len(rec["d"]["starts"]) < len(rec["q"]):
                dst.write(line)
                kept += 1
    return kept


def paper_pcp19_variables(path: Path, limit: int) -> list[int]:
    """Per recorded instance, PCP'19's size as the PCP'20 paper counts it (Section 2): |Q| start
    variables plus sum over selected jobs i and nodes n of p_in = min(n_i, units of i fitting in
    n's capacity) optional unit intervals. Our `pcp19` encodes the same model with one count per
    (job, node with room now) instead, which is much smaller: this is the paper's reference."""
    disp = make_dispatcher("pcp19")
    assert isinstance(disp, CpDispatcher)
    out = []
    for snap in itertools.islice(load_instances(path), limit):
        selected = disp.select(snap, disp.order(snap))
        cap = snap.system.capacity
        out.append(len(selected) + sum(int(np.minimum(units_fitting(cap, q.job.req), q.job.units).sum())
                                       for q in selected))
    return out


def main() -> None:
    flags = set(sys.argv[1:])
    full = "--full" in flags
    picked = flags & {"--timing", "--quality", "--sizes", "--stretch"} or {"--timing", "--quality", "--sizes"}
    if "--stretch" in picked:
        stretch()
    if "--sizes" in picked:
        sizes(full)
    if "--timing" in picked:
        timing(full)
    if "--quality" in picked:
        quality(full)


if __name__ == "__main__":
    main()
