"""Our EASY against the published SC'15 figure on KTH-SP2, with the trace handled as they did.

Gaussier, Glesser, Reis & Trystram (SC'15) simulate with pyss after cleaning the trace
(predictsim's experiments/data_manipulation/strong_filter_all_swf): jobs without a processor count,
with a run time <= 0 or a requested time <= 0 are dropped, and a run time above the requested
time is cut to it (so no job outlives its request); and pyss's machine is a processor count, not
nodes. This script applies that cleaning to the archive's cleaned KTH-SP2 trace, runs our `easy`
and `easy-sjf` with requested times on a one-node, 100-processor system (systems/kth-sp2-pool.toml)
and on our `kth-sp2` preset (100 one-processor nodes), and prints the mean bounded slowdown beside
their result files' (EASY 92.58 over 28,481 jobs of their older conversion of the trace; EASY++
69.41). What remains is their event loop: pyss runs a scheduling pass per event, we run one per
time step (docs/quality.md).

With `--contenders`, then runs the best configurations of docs/quality.md under that handling
(cleaned trace, pool): EASY++, Slurm's backfill, pcp20 and hcp19, each with requested times,
last-two, the learned predictor and SC'15's own (sc15), seed 1 as in the campaign, beside their
best cross-validated EASY++ with a learned predictor (51.44) and their last-two (62.86).

    python benchmarks/match_predictsim.py [--contenders]
"""

from __future__ import annotations

import argparse
import gzip
import tempfile
from pathlib import Path

try:  # run as a script or as a module
    from common import ROOT, WORKLOADS, run_cli
except ImportError:  # pragma: no cover
    from benchmarks.common import ROOT, WORKLOADS, run_cli

TRACE = WORKLOADS / "KTH-SP2-1996-2.1-cln.swf.gz"
POOL = ROOT / "benchmarks" / "systems" / "kth-sp2-pool.toml"
PUBLISHED = {"easy": 92.58, "easy-sjf": 69.41}
#: Their EASY++ with last-two and with their best cross-validated learned predictor.
PUBLISHED_PREDICTED = {"last2": 62.86, "sc15": 51.44}
CONTENDERS = ("easy-sjf", "slurm-backfill", "pcp20", "hcp19")
PREDICTORS = ("walltime", "last2", "learned", "sc15")


def clean_like_predictsim(src: Path, dst: Path) -> dict[str, int]:
    """predictsim's cleaning, in its order; returns what each step did."""
    counts = {"kept": 0, "no processors": 0, "run <= 0": 0, "request <= 0": 0, "run cut to request": 0}
    with gzip.open(src, "rt") as f, dst.open("w") as out:
        lines = f.read().splitlines()
        maxprocs = next(int(ln.split(":")[1]) for ln in lines if ln.startswith("; MaxProcs:"))
        for ln in lines:
            if ln.startswith(";") or not ln.strip():
                out.write(ln + "\n")
                continue
            f_ = ln.split()
            v = [int(float(t)) for t in f_]
            if v[4] > maxprocs or v[7] > maxprocs:
                counts["no processors"] += 1
                continue
            if v[4] <= 0 < v[7]:
                f_[4] = f_[7]
            elif v[7] <= 0 < v[4]:
                f_[7] = f_[4]
            elif v[4] <= 0 and v[7] <= 0:
                counts["no processors"] += 1
                continue
            if v[3] <= 0:
                counts["run <= 0"] += 1
                continue
            if v[8] <= 0:
                counts["request <= 0"] += 1
                continue
            if v[8] < v[3]:
                f_[3] = f_[8]
                counts["run cut to request"] += 1
            if v[1] < 0:
                continue
            counts["kept"] += 1
            out.write(" ".join(f_) + "\n")
    return counts


def contenders(cleaned: Path) -> None:
    """Mean bounded slowdown of each contender and predictor under their handling."""
    print(f"\n{'dispatcher':<15}" + "".join(f"{p:>10}" for p in PREDICTORS) + "   (cleaned as predictsim, pool)")
    for disp in CONTENDERS:
        cells = []
        for pred in PREDICTORS:
            s = run_cli(str(POOL), str(cleaned), disp, pred, extra=["--format", "swf", "--seed", "1"])
            cells.append(f"{s['avg_bounded_slowdown']:>10.2f}")
        print(f"{disp:<15}" + "".join(cells), flush=True)
    print(f"{'published':<15}{'':>10}{PUBLISHED_PREDICTED['last2']:>10.2f}{'':>10}"
          f"{PUBLISHED_PREDICTED['sc15']:>10.2f}   (their EASY++; their learned predictor under sc15)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--contenders", action="store_true", help="also the contenders with every predictor")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cleaned = Path(tmp) / "kth-like-predictsim.swf"
        print("cleaning:", clean_like_predictsim(TRACE, cleaned))
        print(f"{'dispatcher':<10} {'trace':<22} {'system':<14} {'jobs':>7} {'avg bsld':>9} {'published':>10}")
        for disp in ("easy", "easy-sjf"):
            for trace, label in ((TRACE, "archive's cleaned"), (cleaned, "cleaned as predictsim")):
                for system, name in (("kth-sp2", "kth-sp2 nodes"), (str(POOL), "100-proc pool")):
                    s = run_cli(system, str(trace), disp, "walltime", extra=["--format", "swf"])
                    print(f"{disp:<10} {label:<22} {name:<14} {s['started']:>7,} {s['avg_bounded_slowdown']:>9.2f} "
                          f"{PUBLISHED[disp]:>10.2f}", flush=True)
        if args.contenders:
            contenders(cleaned)


if __name__ == "__main__":
    main()
