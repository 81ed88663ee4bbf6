"""`cpdispatch simulate`, `demo` and `instances compare`: runs of the simulator, and replays of
saved instances."""

from __future__ import annotations

import argparse
import signal
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import interrupt
from ..errors import CpdispatchError
from ..outputs_safety import check_out_dir, check_out_file
from .arguments import FORMAT_HELP, OVERWRITE_HELP, STRICT_HELP, parse_options, subcommand

if TYPE_CHECKING:
    from ..dispatchers.base import Dispatcher

DEMO_DISPATCHERS = ("fifo", "easy", "pbs", "hcp19", "pcp20")


def run_simulation(
    system_name: str,
    workload_path: str,
    dispatcher: str,
    predictor: str,
    out: str | None,
    *,
    fmt: str = "auto",
    options: dict[str, str] | None = None,
    limit: int | None = None,
    skip: int = 0,
    load_factor: float = 1.0,
    seed: int = 0,
    kill_at_walltime: bool = False,
    charge_dispatch_time: bool = False,
    strict: bool = False,
    record_instances: str | None = None,
    progress: bool | None = None,
    plots: bool = False,
    room: bool = False,
    built: Dispatcher | None = None,
) -> dict[str, Any]:
    """`cpdispatch simulate`: read the files, one `api.simulate` call, write the contract files;
    returns the summary and the raw result. The summary's `call` says how to repeat it in Python.
    `built`: the dispatcher `dispatcher` names with `options` and `seed`, already built (the
    command builds it once, to check it before reading the files).
    A signal during the simulation or the writing stops it gracefully (see interrupt.py): what was
    decided is written, marked interrupted (without plots, to be quick)."""
    from .. import api
    from ..system import load_system

    system = load_system(system_name)
    workload = api.read_workload(workload_path, system, fmt=fmt, strict=strict, limit=limit, skip=skip)
    with interrupt.stopping_gracefully(), warnings.catch_warnings():
        warnings.simplefilter("ignore", api.RefusedStartsWarning)  # cmd_simulate says it in one line
        result = api.simulate(
            system, workload, built or dispatcher, predictor, None if built else options, load_factor=load_factor,
            seed=seed, kill_at_walltime=kill_at_walltime, charge_dispatch_time=charge_dispatch_time,
            progress=progress, record_instances=record_instances, room=room,
        )
        result.call.update(dispatcher=dispatcher, options=dict(options or {}))  # as typed, to repeat it
        if out:
            result.save(out, plots=plots and not result.raw.interrupted)
    return {"summary": result.summary, "result": result.raw}


def _check_run(system: str, dispatchers: Sequence[str], options: dict[str, str], predictor: str, seed: int
               ) -> dict[str, Dispatcher | None]:
    """Names and options, checked before any reading (a bad one is an error in a second, not
    after the trace is read): the dispatchers built, by name (None: the trace's own schedule)."""
    from .. import recorded
    from ..dispatchers.base import make_dispatcher
    from ..predictors import resolve_predictor
    from ..system import load_system

    load_system(system)
    built = {name: None if name == recorded.NAME else make_dispatcher(name, options, seed=seed) for name in dispatchers}
    resolve_predictor(predictor)
    return built


def _stopped(result: Any, out: str) -> int:
    """After a run: 0, or when a signal came, one line saying what is in `out` and 128 + signal."""
    signum = interrupt.received
    if signum is None:
        return 0
    stop = result.interrupted
    if stop:
        print(f"cpdispatch: interrupted by {stop['signal']} at simulated time {stop['simulated_time']:,}: "
              f"partial results ({len(result.records):,} jobs decided, {stop['undecided']:,} not) in {out}/",
              file=sys.stderr)
    else:
        print(f"cpdispatch: {signal.Signals(signum).name} came as the run ended: its outputs in {out}/ are "
              "complete", file=sys.stderr)
    return interrupt.exit_code(signum)


def cmd_simulate(args: argparse.Namespace) -> int:
    from ..text_table import format_table

    options = parse_options(args.option)
    built = _check_run(args.system, [args.dispatcher], options, args.predictor, args.seed)
    out = check_out_dir(args.out, overwrite=args.overwrite)
    if args.record_instances:
        record = check_out_file(args.record_instances, overwrite=args.overwrite, flag="--record-instances")
        if record.resolve().parent == out.resolve():
            raise CpdispatchError(f"--record-instances {args.record_instances}: inside --out {args.out}, whose "
                                  "files the run writes; put it elsewhere")
    run = run_simulation(
        args.system, args.workload, args.dispatcher, args.predictor, args.out,
        fmt=args.format, options=options, limit=args.limit_jobs, skip=args.skip_jobs, seed=args.seed,
        load_factor=args.load_factor, kill_at_walltime=args.kill_at_walltime,
        charge_dispatch_time=args.charge_dispatch_time, strict=args.strict, record_instances=args.record_instances,
        progress=False if args.no_progress else None, plots=args.plots, room=args.room,
        built=built[args.dispatcher],
    )
    summary = run["summary"]
    print(format_table([summary]))
    result = run["result"]
    if result.skipped:
        print(f"warning: {len(result.skipped)} malformed line(s) skipped, first: {result.skipped[0]}",
              file=sys.stderr)
    if result.refused:
        print(f"warning: {len(result.refused)} invalid start(s) refused, first: {result.refused[0]}",
              file=sys.stderr)
    print(f"outputs in {args.out}/")
    return _stopped(result, args.out)


def cmd_demo(args: argparse.Namespace) -> int:
    from ..plots import plot_comparison
    from ..system import load_system
    from ..text_table import format_table
    from ..workloads import write_native
    from ..workloads.generator import generate_eurora

    names = [n.strip() for n in args.dispatchers.split(",") if n.strip()]
    if args.jobs < 1:
        raise CpdispatchError("--jobs must be at least 1")
    if not names or len(set(names)) != len(names):
        raise CpdispatchError(f"--dispatchers {args.dispatchers!r}: give distinct names, comma-separated")
    built = _check_run("eurora", names, {}, args.predictor, args.seed)
    out = check_out_dir(args.out, overwrite=args.overwrite)
    workload_path = out / "eurora-workload.csv"
    write_native(str(workload_path), generate_eurora(args.jobs, args.seed), load_system("eurora"))
    print(f"generated {args.jobs:,} Eurora-like jobs (seed {args.seed}) -> {workload_path}; "
          f"arrivals {args.load_factor}x faster (--load-factor)")
    runs = []
    for name in names:
        print(f"simulating {name} ...", flush=True)
        run = run_simulation(
            "eurora", str(workload_path), name, args.predictor, str(out / name), seed=args.seed,
            load_factor=args.load_factor, progress=False, plots=False, built=built[name],
        )
        if interrupt.received is not None:
            return _stopped(run["result"], str(out / name))
        runs.append((run["summary"], run["result"]))
    plot_comparison(runs, str(out), run_dirs=[out / name for name in names])  # one time axis for all
    print()
    print(format_table([s for s, _ in runs]))
    print(f"\noutputs in {out}/: waiting.png, slowdown.png, queue.png and utilization.png compare the dispatchers; "
          "per dispatcher: schedule.csv, decisions.csv, summary.json, utilization.png, queue.png")
    return 0


def cmd_instances_compare(args: argparse.Namespace) -> int:
    from ..instance_replay import compare

    names = [n.strip() for n in args.dispatchers.split(",") if n.strip()]
    per: dict[str, list[str]] = {}
    for item in args.option:
        name, sep, pair = item.partition(":")
        if not sep or not name:
            raise CpdispatchError(f"option '{item}': expected DISPATCHER:KEY=VALUE")
        per.setdefault(name.strip(), []).append(pair)
    options = {name: parse_options(pairs) for name, pairs in per.items()}
    check_out_dir(args.out, overwrite=args.overwrite)
    with interrupt.stopping_gracefully():
        compare(args.file, names, args.out, limit=args.limit, options=options)
    if interrupt.received is not None:
        print(f"cpdispatch: interrupted by {signal.Signals(interrupt.received).name}: the comparison of the "
              f"instances replayed so far is in {args.out}/", file=sys.stderr)
        return interrupt.exit_code(interrupt.received)
    print((Path(args.out) / "comparison_summary.txt").read_text(), end="")
    print(f"outputs in {args.out}/")
    return 0


def add_simulate(sub: Any) -> None:
    s = subcommand(sub, "simulate", "replay a workload on a system with a dispatcher")
    s.add_argument("--system", required=True, help="preset name (cpdispatch systems) or TOML file")
    s.add_argument("--workload", required=True, help="SWF, Alibaba pod CSV or native CSV (plain or .gz)")
    s.add_argument("--format", default="auto", choices=["auto", "swf", "alibaba", "native"], help=FORMAT_HELP)
    s.add_argument("--dispatcher", default="easy",
                   help="built-in name (cpdispatch dispatchers), plugin name, or module:attr")
    s.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="dispatcher option (repeatable); see cpdispatch dispatchers")
    s.add_argument("--predictor", default="walltime",
                   help="duration predictor: walltime (the user's request, AccaSim's), real, last2, datadriven, "
                        "learned (fitted on-line on the jobs finished so far), sc15 (SC'15's), or module:attr; "
                        "options after commas, e.g. last2,correction=request")
    s.add_argument("--out", required=True, help="output folder (new or empty; see --overwrite)")
    s.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    s.add_argument("--limit-jobs", type=int, default=None, help="keep only N jobs (after --skip-jobs)")
    s.add_argument("--skip-jobs", type=int, default=0, help="drop the first N jobs of the file (a slice)")
    s.add_argument("--load-factor", type=float, default=1.0, metavar="X",
                   help="divide inter-arrival times by X (X=2: twice the offered load; 0.001 to 1000)")
    s.add_argument("--seed", type=int, default=0, help="seed of randomised dispatchers and predictors")
    s.add_argument("--kill-at-walltime", action="store_true", help="kill jobs that outlive their walltime")
    s.add_argument("--charge-dispatch-time", action="store_true",
                   help="delay the starts by the dispatcher's wall time (as on a real system)")
    s.add_argument("--strict", action="store_true", help=STRICT_HELP)
    s.add_argument("--room", action=argparse.BooleanOptionalAction, default=False,
                   help="also run the room probe, a diagnostic (summary.json 'room': would another placement of "
                        "the jobs starting now let a queued job start earlier; one small model on some decisions: "
                        "about 3x an EASY run's time on HPC2N)")
    s.add_argument("--record-instances", metavar="FILE.jsonl[.gz]", default=None,
                   help="save every dispatcher call's snapshot, for cpdispatch instances compare")
    s.add_argument("--no-progress", action="store_true", help="no progress bar (shown only on a terminal)")
    s.add_argument("--plots", action=argparse.BooleanOptionalAction, default=False,
                   help="also draw utilization.png and queue.png (about 1 s and 40 MB a run: a third of a "
                        "KTH-SP2 FIFO run)")
    s.set_defaults(func=cmd_simulate)


def add_demo(sub: Any) -> None:
    s = subcommand(sub, "demo", "the main job on an embedded default: a generated Eurora workload, dispatchers "
                             "compared")
    s.add_argument("--jobs", type=int, default=3000, help="number of generated jobs")
    s.add_argument("--seed", type=int, default=1, help="generator and dispatcher seed (1: the README's results)")
    s.add_argument("--dispatchers", default=",".join(DEMO_DISPATCHERS), help="comma-separated names")
    s.add_argument("--predictor", default="last2",
                   help="duration predictor (last2, the papers'; simulate's default is walltime, as AccaSim's)")
    s.add_argument("--load-factor", type=float, default=2.0, metavar="X",
                   help="divide inter-arrival times by X (2: a busy system, where dispatchers differ; "
                        "simulate replays a trace as it is)")
    s.add_argument("--out", default="demo-out", help="output folder (new or empty; see --overwrite)")
    s.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    s.set_defaults(func=cmd_demo)


def add_instances(sub: Any) -> None:
    s = subcommand(sub, "instances", "saved dispatching instances (--record-instances)")
    isub = s.add_subparsers(dest="instances_command", required=True)
    s = subcommand(isub, "compare", "replay saved instances with several dispatchers; ratio plots of the first "
                                 "over the second")
    s.add_argument("file", metavar="FILE.jsonl", help="instances recorded by simulate --record-instances")
    s.add_argument("--dispatchers", required=True, help="comma-separated, e.g. pcp20,pcp19")
    s.add_argument("--out", required=True, help="output folder (new or empty; see --overwrite)")
    s.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    s.add_argument("--limit", type=int, default=None, help="replay only the first N instances")
    s.add_argument("-o", "--option", action="append", default=[], metavar="DISPATCHER:KEY=VALUE",
                   help="dispatcher option (repeatable), e.g. pcp20:fastpath=false")
    s.set_defaults(func=cmd_instances_compare)
