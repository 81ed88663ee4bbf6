"""cpdispatch vs AccaSim 1.1.3 (the simulator the papers used), side by side in one run.

Same traces, same dispatching rules, equivalent systems:
  KTH-SP2-1996-2.1-cln under FIFO               (AccaSim: FIFO + first fit; ours: fifo, first-fit)
  KTH-SP2-1996-2.1-cln under EASY backfilling  (AccaSim: EBF + first fit; ours: easy, first-fit)
  HPC2N-2002-2.2-cln under FIFO                 (AccaSim: FIFO + first fit; ours: fifo, first-fit)
Then ours alone under EASY on HPC2N (203k jobs) and RICC (448k jobs), whose jobs/s should match
KTH-SP2's if the cost is linear in the jobs. A second table splits our wall time: reading the
trace, the simulation (of which the dispatcher), writing the outputs, and the rest (interpreter
start, imports, metrics).
Each simulation runs in its own process; wall time is the whole process (start to exit, measured
here with perf_counter) and peak memory is the process's maximum resident set (wait4 rusage, as
/usr/bin/time reports it). Average waiting time and slowdown come from AccaSim's stats file and
from our summary.json; "same wait" compares the two schedules job by job. For HPC2N a third row
runs ours on the system AccaSim effectively simulates (it drops memory requests; see the notes).

Usage: python benchmarks/bench_vs_accasim.py [--quick] [--skip-accasim]
  --quick         KTH only (no HPC2N, no RICC)
  --skip-accasim  run ours only and print the issue's AccaSim reference figures beside it
The first full run creates benchmarks/.accasim-venv (git-ignored) and installs accasim==1.1.3 and
its declared dependencies with pip; benchmarks/accasim_runner.py patches AccaSim at run time for
Python 3.11 (its files are never edited). Traces are read from the shared workloads folder; AccaSim
reads plain text only, so they are decompressed into a temporary folder first (not timed).
"""

from __future__ import annotations

import csv
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from time import perf_counter

from common import ROOT, WORKLOADS

BENCH = ROOT / "benchmarks"
ACC_VENV = BENCH / ".accasim-venv"
ACC_PY = ACC_VENV / "bin" / "python"
RUNNER = BENCH / "accasim_runner.py"
# accasim 1.1.3 declares matplotlib, psutil, sortedcontainers, numpy>=1.6, scipy>=1.0 (no upper
# bounds). Pinned to the last releases of the NumPy 1.x generation that ship CPython 3.11 wheels,
# the era closest to AccaSim's; its simulation path only imports psutil and sortedcontainers.
PINS = (
    "accasim==1.1.3",
    "sortedcontainers==2.4.0",
    "psutil==5.9.8",
    "numpy==1.26.4",
    "scipy==1.11.4",
    "matplotlib==3.8.4",
)


@dataclass(frozen=True)
class Case:
    trace: str  # file in the shared workloads folder, without .swf.gz
    dispatcher: str  # ours; AccaSim's equivalent is in accasim_runner.py
    system: str  # our preset
    accasim_config: dict  # AccaSim system config with the same shape
    reference_s: float | None  # AccaSim wall time quoted in an issue (2-core machine); None: not run
    # our system file for what AccaSim really simulates, when that differs from `system` (see NO_MEM)
    accasim_effective: Path | None = None


# AccaSim's job factory decides from the FIRST job which resource types the trace requests; HPC2N's
# first job has no memory request, so AccaSim sets the memory request of every job to 0 and simulates
# Seth as cores only. This is our hpc2n preset without `mem`: the system AccaSim effectively runs.
NO_MEM_HPC2N = BENCH / "systems" / "hpc2n-cores-only.toml"


KTH_CONFIG = {"system_name": "KTH SP2", "start_time": 843480031, "equivalence": {"processor": {"core": 1}},
              "groups": {"g0": {"core": 1}}, "resources": {"g0": 100}}
CASES = (
    Case("KTH-SP2-1996-2.1-cln", "fifo", "kth-sp2", KTH_CONFIG, None),
    Case("KTH-SP2-1996-2.1-cln", "easy", "kth-sp2", KTH_CONFIG, 26.5),
    # AccaSim's own Seth configuration (extra/journal_scripts/simulator_comparison/accasim/config/seth.config)
    Case("HPC2N-2002-2.2-cln", "fifo", "hpc2n",
         {"system_name": "Seth - HPC2N", "start_time": 1027839845, "equivalence": {"processor": {"core": 2}},
          "groups": {"g0": {"core": 4, "mem": 1048576}}, "resources": {"g0": 120}}, 357.0, NO_MEM_HPC2N),
)
# ours alone: jobs/s on the large traces against KTH-SP2's under the same dispatcher
SCALING = (("HPC2N-2002-2.2-cln", "hpc2n"), ("RICC-2010-2", "ricc"))
GOAL = 30.0  # speed-up over AccaSim asked for KTH-SP2 (whole command, same machine, same run)


@dataclass
class Run:
    simulator: str
    jobs: int | None = None
    rejected: int | None = None
    wall_s: float | None = None
    cpu_s: float | None = None  # user + system CPU of the process and its children
    loop_s: float | None = None  # the simulator's own timing of its loop
    rss_mb: float | None = None
    avg_wait: float | None = None
    avg_sld: float | None = None
    waits: dict[str, int] | None = None  # job id -> waiting time
    timing: dict[str, float] | None = None  # ours: summary.json's timing (read, simulate, ...)


def ensure_accasim_venv() -> Path:
    """Create benchmarks/.accasim-venv with the pinned AccaSim, unless it is already there."""
    marker = ACC_VENV / "cpdispatch-pins.txt"
    want = "\n".join(PINS) + "\n"
    if ACC_PY.exists() and marker.exists() and marker.read_text() == want:
        return ACC_PY
    print(f"setting up {ACC_VENV.relative_to(ROOT)} ({', '.join(PINS)})", file=sys.stderr, flush=True)
    if not ACC_PY.exists():
        base = getattr(sys, "_base_executable", sys.executable)
        subprocess.run([base, "-m", "venv", str(ACC_VENV)], check=True)
    subprocess.run([str(ACC_PY), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "--only-binary=:all:", *PINS], check=True)
    marker.write_text(want)
    return ACC_PY


def measured(cmd: list[str], log: Path, env: dict[str, str] | None = None) -> tuple[float, float, float]:
    """Run `cmd` to completion; (wall seconds from spawn to exit, CPU seconds, peak RSS in MB), the last
    two from wait4's rusage of the process and its children."""
    with open(log, "w") as out:
        t0 = perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-25:])
        raise RuntimeError(f"{cmd[0]} ... exited with {proc.returncode}; last lines:\n{tail}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # Linux: KB


def run_ours(case: Case, tmp: Path, system: str | None = None, label: str = "cpdispatch") -> Run:
    out = tmp / f"ours-{case.trace}-{'effective' if system else case.system}"
    cmd = [sys.executable, "-m", "cpdispatch", "simulate", "--system", system or case.system,
           "--workload", str(WORKLOADS / f"{case.trace}.swf.gz"), "--dispatcher", case.dispatcher,
           "--predictor", "walltime", "--out", str(out), "--no-progress", "--no-plots"]
    wall, cpu, rss = measured(cmd, tmp / f"{out.name}.log")
    s = json.loads((out / "summary.json").read_text())
    waits = {}
    with open(out / "schedule.csv", newline="") as f:
        for r in csv.DictReader(f):
            if r["start"] not in ("", None):
                waits[r["job_id"]] = int(r["start"]) - int(r["submit"])
    shutil.rmtree(out)
    return Run(label, s["jobs"], s["rejected"], wall, cpu, s["sim_wall_s"], rss, s["avg_wait"],
               s["avg_slowdown"], waits, s.get("timing"))


def accasim_waits(sched_file: str) -> dict[str, int]:
    """Waiting time per job from AccaSim's schedule file (`id;user;submit__assignments__start;end;...`).
    Dates are local time; the run sets TZ=UTC so no daylight-saving shift enters the differences."""
    waits = {}
    fmt = "%Y-%m-%d %H:%M:%S"
    with open(sched_file) as f:
        for line in f:
            head, _, rest = line.partition("__")
            tail = rest.rpartition("__")[2]
            job_id, _, submit = head.split(";")[:3]
            start = tail.split(";")[0]
            waits[job_id] = int((datetime.strptime(start, fmt) - datetime.strptime(submit, fmt)).total_seconds())
    return waits


def run_accasim(case: Case, tmp: Path, py: Path) -> tuple[Run, list[str]]:
    plain = tmp / f"{case.trace}.swf"
    if not plain.exists():
        with gzip.open(WORKLOADS / f"{case.trace}.swf.gz", "rb") as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    config = tmp / f"{case.trace}.accasim.json"
    config.write_text(json.dumps(case.accasim_config, indent=1))
    results = tmp / f"accasim-{case.trace}"
    report = tmp / f"accasim-{case.trace}.json"
    env = {**os.environ, "TZ": "UTC"}
    cmd = [str(py), str(RUNNER), str(plain), str(config), case.dispatcher, str(results), str(report)]
    wall, cpu, rss = measured(cmd, tmp / f"accasim-{case.trace}.log", env)
    r = json.loads(report.read_text())
    st = r["stats"]
    waits = accasim_waits(r["files"]["sched-"])
    shutil.rmtree(results)
    plain.unlink()
    return Run("AccaSim 1.1.3", r["loaded"], r["rejected"], wall, cpu, st.get("loop_s"), rss,
               st.get("avg_wait"), st.get("avg_slowdown"), waits), r["shims"]


def fmt(v: float | int | None, spec: str) -> str:
    return "—" if v is None else format(v, spec)


COLS = (("trace", "<20"), ("disp", "<4"), ("simulator", "<21"), ("jobs", ">8"), ("rej", ">4"),
        ("wall s", ">7"), ("cpu s", ">7"), ("loop s", ">7"), ("jobs/s", ">7"), ("RSS MB", ">7"),
        ("speed-up", ">8"), ("cpu x", ">5"), ("avg wait s", ">10"), ("avg sld", ">8"), ("same wait", ">9"))


def line(values: list[str]) -> str:
    return "  ".join(format(v, spec) for v, (_, spec) in zip(values, COLS))


def table_row(case: Case, run: Run, ref: Run | None = None) -> str:
    """One line; with `ref` (AccaSim's run), also the speed-ups and the job-by-job agreement."""
    jps = run.jobs / run.wall_s if run.jobs and run.wall_s else None
    speedup = ref.wall_s / run.wall_s if ref and ref.wall_s and run.wall_s else None
    cpu_x = ref.cpu_s / run.cpu_s if ref and ref.cpu_s and run.cpu_s else None
    same = same_wait(ref.waits, run.waits) if ref else None
    return line([case.trace.split("-")[0], case.dispatcher, run.simulator, fmt(run.jobs, ","),
                 fmt(run.rejected, ","), fmt(run.wall_s, ".1f"), fmt(run.cpu_s, ".1f"), fmt(run.loop_s, ".1f"),
                 fmt(jps, ",.0f"), fmt(run.rss_mb, ".0f"), "—" if speedup is None else f"{speedup:.1f}x",
                 "—" if cpu_x is None else f"{cpu_x:.1f}x",
                 fmt(run.avg_wait, ",.0f"), fmt(run.avg_sld, ".2f"), "—" if same is None else f"{same:.1%}"])


def same_wait(a: dict[str, int] | None, b: dict[str, int] | None) -> float | None:
    if not a or not b:
        return None
    common = a.keys() & b.keys()
    return sum(a[j] == b[j] for j in common) / len(common) if common else None


def notes(skip: bool, shims: list[str], load: tuple[float, float]) -> str:
    patches = "; ".join(shims) if shims else "none were needed"
    text = f"""
Notes
 1. wall s = the whole simulator process, spawn to exit (interpreter start, imports, reading the trace,
    the simulation, writing its outputs), measured outside with perf_counter. cpu s = user + system CPU
    seconds of the process and its children, and RSS MB = their peak resident set (wait4 rusage, like
    /usr/bin/time; AccaSim's writer forks count as their max, not a sum). loop s = each simulator's own
    timing of its event loop (AccaSim: "Simulation time" in its stats file; ours: sim_wall_s).
    jobs/s = jobs / wall s; speed-up = AccaSim's wall s / ours; cpu x = AccaSim's cpu s / ours.
    Runs are sequential, one process at a time; 1-min load average before/after: {load[0]:.1f}/{load[1]:.1f}
    on {os.cpu_count()} CPUs. Other work on the machine stretches wall times; cpu s is steadier.
 2. Both simulators do what their default run does. AccaSim: Simulator defaults (schedule file and stats
    file written, statistics logged, benchmark file off), pprint file off, outputs in a temporary folder,
    the trace decompressed to plain text beforehand (AccaSim cannot read .gz; not timed). Ours: reads the
    .gz itself (timed), writes schedule.csv, decisions.csv and summary.json; plots and progress off.
 3. jobs = jobs read, rejected included. AccaSim's reader silently drops SWF lines with neither requested
    nor allocated processors, ours reads and rejects them (KTH has one, job 27313).
 4. Systems: KTH = 100 nodes x 1 core, one SWF processor = 1 core, in both. HPC2N = AccaSim's Seth config,
    120 nodes x {{core 4, mem 1048576 KB}}, one processor = 2 cores; our preset hpc2n is the same shape as
    120 x {{core 2, mem 1024 MB}}, one processor = 1 core. But AccaSim's job factory decides from the first
    job which resource types the trace requests, and HPC2N's first job has no memory request: AccaSim then
    sets every job's memory request to 0, so it simulates Seth as cores only. Ours honours memory: jobs
    asking more than a node's 1 GB per processor are rejected (41) and memory limits units per node, so
    the schedules part. "cpdispatch (no mem)" runs ours on hpc2n without the mem type, i.e. the system
    AccaSim really simulates, to check the semantics job by job.
 5. AccaSim 1.1.3 (installed with pip) runs on Python 3.11 with run-time patches only (accasim_runner.py):
    {patches}. Its files are not edited; the venv ({ACC_VENV.relative_to(ROOT)}) is git-ignored.
    TZ=UTC is set for it so that its local-time dates have no daylight-saving jumps when waits are
    recomputed from its schedule file.
 6. avg wait / avg sld = mean waiting time and mean (unbounded) slowdown over started jobs, from AccaSim's
    stats file and our summary.json (same definitions; AccaSim rounds each job's slowdown to 2 decimals).
    same wait = share of the jobs started by both whose waiting time is identical.
    FIFO + first fit follows the same rules in both (strict queue order, nodes in name order, several
    units per node), so on the same system the schedules agree job for job.
    EASY differs by design. AccaSim master passes an empty reserved-node list to its backfill pass, so
    the first blocked job's reservation is not protected and backfilled jobs can push it back (on KTH,
    job 151, 80 nodes, waits 22.3 h there and 3.4 h in ours). It also retries the blocked job only at the
    first event at or after the shadow time it computed from walltimes, so when jobs end early it stays
    queued while later jobs backfill (the first difference on KTH: job 67 fits at t=614556, AccaSim
    starts job 68 then and job 67 48 s later). Ours protects the reservation (a backfilled job either
    ends by the shadow time or fits beside the reservation) and retries the blocked job at every event.
    So EASY waits differ (shorter on average in AccaSim, at the expense of the large jobs), while the
    workload, the system and the metric definitions are the same."""
    if skip:
        text += """
 7. --skip-accasim: AccaSim was not run; its rows are the figures quoted in the issue (AccaSim 1.1.3 on a
    2-core machine), and speed-up is against them."""
    return text


SPLIT = (("trace", "<20"), ("disp", "<4"), ("wall s", ">7"), ("read s", ">7"), ("simulate s", ">10"),
         ("of which disp.", ">14"), ("outputs s", ">9"), ("rest s", ">7"), ("jobs/s", ">8"), ("vs KTH", ">7"),
         ("RSS MB", ">7"))


def split_row(trace: str, dispatcher: str, run: Run, kth_jps: float | None) -> str:
    """Where our wall time went; `rest` is start-up, imports and metrics (wall minus the parts)."""
    t = run.timing or {}
    parts = [t.get("read_s"), t.get("simulate_s"), t.get("outputs_s")]
    rest = run.wall_s - sum(parts) if run.wall_s and None not in parts else None  # type: ignore[arg-type]
    jps = run.jobs / run.wall_s if run.jobs and run.wall_s else None
    rel = "—" if jps is None or not kth_jps else f"{jps / kth_jps:.0%}"
    values = [trace.split("-")[0], dispatcher, fmt(run.wall_s, ".2f"), fmt(t.get("read_s"), ".2f"),
              fmt(t.get("simulate_s"), ".2f"), fmt(t.get("dispatcher_s"), ".2f"), fmt(t.get("outputs_s"), ".2f"),
              fmt(rest, ".2f"), fmt(jps, ",.0f"), rel, fmt(run.rss_mb, ".0f")]
    return "  ".join(format(v, spec) for v, (_, spec) in zip(values, SPLIT))


def print_table(cols: tuple[tuple[str, str], ...], rows: list[str]) -> None:
    print("  ".join(format(name, spec) for name, spec in cols))
    print("  ".join(format("-" * int(spec[1:]), spec) for _, spec in cols))
    for r in rows:
        print(r)


def main() -> None:
    quick = "--quick" in sys.argv
    skip = "--skip-accasim" in sys.argv
    cases = [c for c in CASES if c.trace.startswith("KTH")] if quick else list(CASES)
    py = None if skip else ensure_accasim_venv()
    load0 = os.getloadavg()[0]
    shims: list[str] = []
    rows, splits, verdicts = [], [], []
    kth_jps: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-vs-accasim-") as d:
        tmp = Path(d)
        for case in cases:
            print(f"{case.trace} {case.dispatcher}: cpdispatch ...", file=sys.stderr, flush=True)
            ours = run_ours(case, tmp)
            if py is None:
                acc = Run("AccaSim 1.1.3 (issue)", wall_s=case.reference_s)
            else:
                print(f"{case.trace} {case.dispatcher}: AccaSim 1.1.3 ...", file=sys.stderr, flush=True)
                acc, shims = run_accasim(case, tmp, py)
            rows.append(table_row(case, acc))
            rows.append(table_row(case, ours, acc))
            if case.trace.startswith("KTH") and ours.jobs and ours.wall_s:
                kth_jps[case.dispatcher] = ours.jobs / ours.wall_s
                if acc.wall_s:
                    ratio = acc.wall_s / ours.wall_s
                    verdicts.append(f"KTH-SP2 {case.dispatcher}: {ratio:.1f}x AccaSim's wall time (goal {GOAL:g}x: "
                                    f"{'met' if ratio >= GOAL else 'not met'})")
            splits.append(split_row(case.trace, case.dispatcher, ours, kth_jps.get(case.dispatcher)))
            if py is not None and case.accasim_effective:
                print(f"{case.trace} {case.dispatcher}: cpdispatch on AccaSim's effective system ...",
                      file=sys.stderr, flush=True)
                twin = run_ours(case, tmp, str(case.accasim_effective), "cpdispatch (no mem)")
                rows.append(table_row(case, twin, acc))
        for trace, system in () if quick else SCALING:
            print(f"{trace} easy: cpdispatch ...", file=sys.stderr, flush=True)
            big = run_ours(Case(trace, "easy", system, {}, None), tmp)
            splits.append(split_row(trace, "easy", big, kth_jps.get("easy")))
    print_table(COLS, rows)
    if py is not None:
        refs = ", ".join(f"{c.trace.split('-')[0]} {c.dispatcher} {c.reference_s:g} s" for c in cases if c.reference_s)
        print(f"\nAccaSim 1.1.3 figures quoted in the issues (2-core machine): {refs}.")
    print("\nWhere cpdispatch's wall time goes (vs KTH = jobs/s against KTH-SP2's under the same dispatcher):")
    print_table(SPLIT, splits)
    if verdicts:
        print("\n" + "\n".join(verdicts))
    print(notes(skip, shims, (load0, os.getloadavg()[0])))


if __name__ == "__main__":
    main()
