"""Shared by the benchmark scripts: run one simulation in a fresh process and report its figures."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKLOADS = ROOT.parent / "shared" / "workloads"


def run_cli(system: str, trace: str, dispatcher: str, predictor: str = "walltime",
            options: list[str] | None = None, limit: int | None = None, extra: list[str] | None = None) -> dict:
    """Simulate in a subprocess (so peak memory is the run's own); returns summary.json."""
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "cpdispatch", "simulate", "--system", system, "--workload", trace,
               "--dispatcher", dispatcher, "--predictor", predictor, "--out", out, "--no-progress", "--no-plots"]
        for opt in options or []:
            cmd += ["-o", opt]
        if limit:
            cmd += ["--limit-jobs", str(limit)]
        cmd += extra or []
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        return json.loads((Path(out) / "summary.json").read_text())


def row(label: str, s: dict) -> str:
    jobs = s["jobs"]
    wall = s["sim_wall_s"]
    return (f"{label:<34} {jobs:>8,} {wall:>8.1f} {jobs / max(wall, 1e-9):>9,.0f} {s['dispatch_calls']:>8,} "
            f"{s['dispatch_ms_mean']:>8.3f} {s['dispatch_ms_p50']:>8.3f} {s['dispatch_ms_p99']:>8.3f} "
            f"{s['dispatch_ms_max']:>9.1f} "
            f"{s['peak_rss_mb']:>8.0f} {s['avg_wait']:>10.0f} {s['avg_bounded_slowdown']:>8.2f}")


HEADER = (f"{'run':<34} {'jobs':>8} {'wall s':>8} {'jobs/s':>9} {'calls':>8} {'ms mean':>8} {'ms p50':>8} "
          f"{'ms p99':>8} {'ms max':>9} {'RSS MB':>8} {'avg wait':>10} {'avg bsld':>8}")
