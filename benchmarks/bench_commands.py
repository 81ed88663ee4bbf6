"""The commands users run most, timed whole and side by side in one run: this code, the code
before issue 36 (a git worktree of --before, run with this same environment), and AccaSim 1.1.3
where it has the same rule.

  KTH-SP2, FIFO and EASY          whole trace, walltime predictor      (AccaSim: FIFO / EBF + first fit)
  HPC2N, EASY                     whole trace (202,871 jobs), walltime
  CEA-Curie, EASY                 whole trace (312,826 jobs), walltime
  HPC2N stretch, pcp20            jobs 120,001-150,000, last2

Ours run with the default flags of `cpdispatch simulate` (the progress bar off, as off a
terminal), so what a default run pays shows here: before this issue, the room probe and the two
plots. The last three rows run both versions like for like, without them (--no-plots --no-room).
Each cell is the median of --repeats runs (default 3), interleaved (every command and version
once, then again), one process at a time; wall = the whole
process, spawn to exit; CPU and peak RSS from wait4, as /usr/bin/time. "before / now" is the
ratio of the medians (> 1: now is faster). "same schedule" compares the SHA-256 of schedule.csv of
now and before, run by run. AccaSim's EASY does not run HPC2N (see COMMANDS), so the HPC2N EASY
row is compared, as the issue's throughput guard defines it, with AccaSim's jobs/s on KTH-SP2
under EASY.

Usage: python benchmarks/bench_commands.py [--quick] [--repeats N] [--before REF | --no-before]
                                           [--skip-accasim] [--only REGEX]
  --quick          the KTH-SP2 rows only (with AccaSim, about 5 minutes)
  --before REF     the code to compare with (default: the commit before issue 36)
  --only REGEX     the rows whose label it matches, e.g. --only 'curie|stretch' or --only '^HPC2N, EASY$'
AccaSim runs from benchmarks/.accasim-venv (made on first use; see bench_vs_accasim.py).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import runpy
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from bench_vs_accasim import CASES, Case, ensure_accasim_venv, measured, run_accasim
from common import ROOT, WORKLOADS

BEFORE = "7a9c693"  # main before issue 36: the room probe on in every simulation


@dataclass(frozen=True)
class Command:
    label: str
    trace: str  # in the shared workloads folder, without .swf.gz
    system: str
    dispatcher: str
    predictor: str = "walltime"
    skip: int = 0
    limit: int | None = None
    accasim: Case | None = None  # AccaSim's run of the same rule, when it has one
    quick: bool = False
    flags: tuple[str, ...] = ()  # beyond the defaults

    def args(self, out: Path) -> list[str]:
        cmd = ["-m", "cpdispatch", "simulate", "--system", self.system, "--workload",
               str(WORKLOADS / f"{self.trace}.swf.gz"), "--dispatcher", self.dispatcher, "--predictor",
               self.predictor, "--out", str(out), "--no-progress", *self.flags]
        if self.skip:
            cmd += ["--skip-jobs", str(self.skip)]
        if self.limit:
            cmd += ["--limit-jobs", str(self.limit)]
        return cmd


# AccaSim 1.1.3's EASY does not run HPC2N: with its own Seth configuration it divides by a job's
# memory request, which its job factory set to 0 (ZeroDivisionError in _calculate_slot); with
# cores only, the factory still asks for memory (KeyError 'mem' in _check_job_request).
KTH_FIFO, KTH_EASY, HPC2N_FIFO = CASES
COMMANDS = (
    Command("KTH-SP2, FIFO", KTH_FIFO.trace, "kth-sp2", "fifo", accasim=KTH_FIFO, quick=True),
    Command("KTH-SP2, EASY", KTH_EASY.trace, "kth-sp2", "easy", accasim=KTH_EASY, quick=True),
    Command("HPC2N, EASY", HPC2N_FIFO.trace, "hpc2n", "easy"),
    Command("CEA-Curie, EASY", "CEA-Curie-2011-2.1-cln", "cea-curie", "easy"),
    Command("HPC2N stretch, pcp20", HPC2N_FIFO.trace, "hpc2n", "pcp20", "last2", skip=120_000, limit=30_000),
    # like for like: the before code without its default plots and room probe (flags now accepts as no-ops)
    Command("KTH-SP2, FIFO, --no-plots --no-room", KTH_FIFO.trace, "kth-sp2", "fifo", accasim=KTH_FIFO, quick=True,
            flags=("--no-plots", "--no-room")),
    Command("KTH-SP2, EASY, --no-plots --no-room", KTH_EASY.trace, "kth-sp2", "easy", accasim=KTH_EASY, quick=True,
            flags=("--no-plots", "--no-room")),
    Command("HPC2N, EASY, --no-plots --no-room", HPC2N_FIFO.trace, "hpc2n", "easy", flags=("--no-plots", "--no-room")),
)
GOALS = {"KTH-SP2, FIFO": 10.0, "KTH-SP2, EASY": 4.0}  # x AccaSim's wall time, median of three
GUARD = 5.5  # whole HPC2N under EASY: x AccaSim's jobs/s on KTH-SP2 under EASY


@dataclass
class Cell:
    """The runs of one command under one simulator version."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    rss: list[float] = field(default_factory=list)
    jobs: int = 0
    hashes: list[str] = field(default_factory=list)
    room: bool = False  # summary.json had the room probe's figures

    def add(self, wall: float, cpu: float, rss: float) -> None:
        self.wall.append(wall)
        self.cpu.append(cpu)
        self.rss.append(rss)

    def median(self, what: str) -> float:
        return statistics.median(getattr(self, what))

    def jobs_per_s(self) -> float:
        return self.jobs / self.median("wall")


def accasim_cell(cmd: Command, cells: dict[tuple[str, str], Cell]) -> Cell | None:
    """AccaSim's runs of `cmd`'s rule, shared by the rows that differ only in our flags."""
    if cmd.accasim is None:
        return None
    return cells.setdefault((f"{cmd.accasim.trace} {cmd.accasim.dispatcher}", "AccaSim 1.1.3"), Cell())


def run_ours(cmd: Command, env: dict[str, str], tmp: Path, cell: Cell) -> None:
    out = tmp / "out"
    wall, cpu, rss = measured([sys.executable, *cmd.args(out)], tmp / "ours.log", env)
    summary = json.loads((out / "summary.json").read_text())
    cell.add(wall, cpu, rss)
    cell.jobs, cell.room = summary["jobs"], "room" in summary
    with open(out / "schedule.csv", "rb") as f:
        cell.hashes.append(hashlib.file_digest(f, "sha256").hexdigest())
    shutil.rmtree(out)


def versions(before: str | None, tmp: Path) -> dict[str, dict[str, str]]:
    """Environment per version of our code: now is this checkout; before is a worktree of `before`,
    put first on the path (this environment's packages serve both). Each version's numba kernels
    are compiled here, untimed, by its own dev.py warm-up."""
    trees = {"now": ROOT}
    if before is not None:
        trees["before"] = tmp / "before"
        made = subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(trees["before"]), before],
                              capture_output=True, text=True)
        if made.returncode:
            sys.exit(f"bench_commands: cannot check out --before {before}: {made.stderr.strip()} "
                     "(--no-before runs this code alone)")
    out = {}
    for name, tree in trees.items():
        env = {**os.environ, "PYTHONPATH": str(tree / "src")}
        warm_up = runpy.run_path(str(tree / "dev.py")).get("WARM_UP")
        if warm_up:
            print(f"warming up {name} (numba kernels) ...", file=sys.stderr, flush=True)
            subprocess.run([sys.executable, "-c", warm_up], check=True, env=env, cwd=tmp)
        out[name] = env
    return out


def fmt_cell(cell: Cell) -> str:
    lo, hi = min(cell.wall), max(cell.wall)
    return f"{cell.median('wall'):.1f} ({lo:.1f}-{hi:.1f})"


def table(commands: list[Command], cells: dict[tuple[str, str], Cell], kth_easy_jps: float | None,
          before_ref: str) -> list[str]:
    head = ("| command | simulator | jobs | wall s, median (min-max) | CPU s | jobs/s | peak RSS MB | before / now "
            "| AccaSim / now | same schedule as before |")
    rows = [head, "|" + "---|" * 10]
    for cmd in commands:
        acc = accasim_cell(cmd, cells)
        for version in ("AccaSim 1.1.3", "before", "now"):
            cell = acc if version == "AccaSim 1.1.3" else cells.get((cmd.label, version))
            if cell is None or not cell.wall:
                continue
            wall, jps = cell.median("wall"), cell.jobs_per_s()
            ratio_before = speedup = same = ""
            if version == "now":
                before = cells.get((cmd.label, "before"))
                if before is not None and before.wall:
                    ratio_before = f"{before.median('wall') / wall:.2f}x"
                    same = "yes" if set(before.hashes) == set(cell.hashes) and len(set(cell.hashes)) == 1 else "NO"
                if acc is not None and acc.wall:
                    speedup = f"{acc.median('wall') / wall:.1f}x"
                if cmd.label.startswith("HPC2N, EASY") and kth_easy_jps:
                    speedup = f"jobs/s: {jps / kth_easy_jps:.1f}x its KTH-SP2 EASY"
            name = {"now": "cpdispatch, now", "before": f"cpdispatch, before ({before_ref})"}.get(version, version)
            if cell.room:
                name += ", room probe"
            rows.append(f"| {cmd.label} | {name} | {cell.jobs:,} | {fmt_cell(cell)} | {cell.median('cpu'):.1f} | "
                        f"{jps:,.0f} | {cell.median('rss'):.0f} | {ratio_before} | {speedup} | {same} |")
    return rows


def verdicts(commands: list[Command], cells: dict[tuple[str, str], Cell], kth_easy_jps: float | None) -> list[str]:
    out = []
    for cmd in commands:
        goal = GOALS.get(cmd.label)
        now, acc = cells.get((cmd.label, "now")), accasim_cell(cmd, cells)
        if goal and now and acc and now.wall and acc.wall:
            x = acc.median("wall") / now.median("wall")
            verdict = "met" if x >= goal else "NOT met"
            out.append(f"{cmd.label}: {x:.1f}x AccaSim's wall time (goal {goal:g}x: {verdict})")
    now = cells.get(("HPC2N, EASY", "now"))
    if now and now.wall and kth_easy_jps:
        x = now.jobs_per_s() / kth_easy_jps
        out.append(f"HPC2N, EASY: {x:.1f}x AccaSim's jobs/s on KTH-SP2 under EASY (goal {GUARD:g}x: "
                   f"{'met' if x >= GUARD else 'NOT met'})")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--before", default=BEFORE)
    parser.add_argument("--no-before", action="store_true")
    parser.add_argument("--skip-accasim", action="store_true")
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    commands = [c for c in COMMANDS if c.quick or not args.quick]
    if args.only:
        commands = [c for c in commands if re.search(args.only, c.label, re.IGNORECASE)]
    py = None if args.skip_accasim else ensure_accasim_venv()
    cells: dict[tuple[str, str], Cell] = {}
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-commands-") as d:
        tmp = Path(d)
        envs: dict[str, dict[str, str]] = {}
        try:
            envs = versions(None if args.no_before else args.before, tmp)
            for rep in range(1, args.repeats + 1):
                for cmd in commands:
                    for version, env in envs.items():
                        print(f"[{rep}/{args.repeats}] {cmd.label}: cpdispatch {version} ...", file=sys.stderr,
                              flush=True)
                        run_ours(cmd, env, tmp, cells.setdefault((cmd.label, version), Cell()))
                    acc_cell = accasim_cell(cmd, cells)
                    if py is not None and acc_cell is not None and len(acc_cell.wall) < rep:
                        print(f"[{rep}/{args.repeats}] {cmd.label}: AccaSim 1.1.3 ...", file=sys.stderr, flush=True)
                        acc, _ = run_accasim(cmd.accasim, tmp, py)  # type: ignore[arg-type]
                        acc_cell.add(acc.wall_s or 0.0, acc.cpu_s or 0.0, acc.rss_mb or 0.0)
                        acc_cell.jobs = acc.jobs or 0
        finally:  # also when the warm-up failed: no stale worktree left registered
            if (tmp / "before").exists():
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tmp / "before")],
                               capture_output=True)
    kth = accasim_cell(COMMANDS[1], cells)
    kth_easy_jps = kth.jobs_per_s() if kth and kth.wall else None
    print("\n".join(table(commands, cells, kth_easy_jps, args.before)))
    print()
    print("\n".join(verdicts(commands, cells, kth_easy_jps)))
    print(f"\n{args.repeats} runs per cell, interleaved; 1-min load average before/after: {load0:.1f}/"
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs.")


if __name__ == "__main__":
    main()
