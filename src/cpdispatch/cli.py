"""The `cpdispatch` command line: each command checks its arguments and output locations, builds
calls to the Python API (api.py) and prints; a signal stops a run gracefully (interrupt.py)."""

from __future__ import annotations

import argparse
import signal
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import interrupt
from .errors import CpdispatchError
from .outputs_safety import check_out_dir, check_out_file

DEMO_DISPATCHERS = ("fifo", "easy", "pbs", "hcp19", "pcp20")
DESCRIPTION = ("On-line HPC job dispatching with constraint programming: replay real traces with CP "
               "dispatchers (PCP'20, PCP'19, HCP'19, Eurora 2014) and baselines.")


def _options(pairs: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CpdispatchError(f"dispatcher option '{pair}': expected KEY=VALUE")
        out[key.strip().replace("-", "_")] = value.strip()
    return out


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
    plots: bool = True,
    room: bool = True,
) -> dict[str, Any]:
    """`cpdispatch simulate`: read the files, one `api.simulate` call, write the contract files;
    returns the summary and the raw result. The summary's `call` says how to repeat it in Python.
    A signal during the simulation or the writing stops it gracefully (see interrupt.py): what was
    decided is written, marked interrupted (without plots, to be quick)."""
    from . import api
    from .system import load_system

    system = load_system(system_name)
    workload = api.read_workload(workload_path, system, fmt=fmt, strict=strict, limit=limit, skip=skip)
    with interrupt.stopping_gracefully(), warnings.catch_warnings():
        warnings.simplefilter("ignore", api.RefusedStartsWarning)  # cmd_simulate says it in one line
        result = api.simulate(
            system, workload, dispatcher, predictor, options, load_factor=load_factor, seed=seed,
            kill_at_walltime=kill_at_walltime, charge_dispatch_time=charge_dispatch_time, progress=progress,
            record_instances=record_instances, room=room,
        )
        if out:
            result.save(out, plots=plots and not result.raw.interrupted)
    return {"summary": result.summary, "result": result.raw}


def _check_run(system: str, dispatchers: Sequence[str], options: dict[str, str], predictor: str) -> None:
    """Names and options, checked before any reading (a bad one is an error in a second, not
    after the trace is read)."""
    from . import recorded
    from .dispatchers.base import make_dispatcher
    from .predictors import resolve_predictor
    from .system import load_system

    load_system(system)
    for name in dispatchers:
        if name != recorded.NAME:  # the trace's own schedule, not a dispatcher
            make_dispatcher(name, options)
    resolve_predictor(predictor)


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
    from .report import format_table

    options = _options(args.option)
    _check_run(args.system, [args.dispatcher], options, args.predictor)
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
        progress=False if args.no_progress else None, plots=not args.no_plots, room=not args.no_room,
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


def cmd_systems(args: argparse.Namespace) -> int:
    from .system import load_system, preset_names

    if not args.name:
        for name in preset_names():
            print(load_system(name).describe().splitlines()[0])
        return 0
    system = load_system(args.name)
    print(system.to_toml() if args.toml else system.describe())
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    from .system import load_system
    from .workloads import load_workload, write_native

    system = load_system(args.system)
    check_out_file(args.out, overwrite=args.overwrite, flag="--out")
    workload = load_workload(args.input, system, fmt=args.format, strict=args.strict, limit=args.limit_jobs)
    write_native(args.out, workload, system)
    print(f"{len(workload.jobs):,} jobs written to {args.out} ({len(workload.rejected):,} rejected while "
          f"reading, {len(workload.skipped):,} malformed lines skipped)")
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    from .system import load_system
    from .workloads import write_native
    from .workloads.generator import generate_eurora

    if args.kind != "eurora":
        raise CpdispatchError(f"unknown generator '{args.kind}' (known: eurora)")
    if args.jobs < 1:
        raise CpdispatchError("--jobs must be at least 1")
    check_out_file(args.out, overwrite=args.overwrite, flag="--out")
    workload = generate_eurora(args.jobs, args.seed, mix=args.mix)
    write_native(args.out, workload, load_system("eurora"))
    mix = "" if args.mix == "eurora" else f", mix {args.mix}"
    print(f"{len(workload.jobs):,} Eurora-like jobs (seed {args.seed}{mix}) written to {args.out}")
    return 0


def cmd_dispatchers(args: argparse.Namespace) -> int:
    from .api import catalogue

    print(catalogue())
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    from .system import load_system
    from .workloads import format_stats, load_workload, workload_stats

    system = load_system(args.system)
    workload = load_workload(args.path, system, fmt=args.format, strict=args.strict)
    print(format_stats(workload_stats(workload, system)))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .plots import plot_comparison
    from .report import format_table
    from .system import load_system
    from .workloads import write_native
    from .workloads.generator import generate_eurora

    names = [n.strip() for n in args.dispatchers.split(",") if n.strip()]
    if args.jobs < 1:
        raise CpdispatchError("--jobs must be at least 1")
    if not names or len(set(names)) != len(names):
        raise CpdispatchError(f"--dispatchers {args.dispatchers!r}: give distinct names, comma-separated")
    _check_run("eurora", names, {}, args.predictor)
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
            load_factor=args.load_factor, progress=False, plots=False,
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
    from .instances import compare

    names = [n.strip() for n in args.dispatchers.split(",") if n.strip()]
    per: dict[str, list[str]] = {}
    for item in args.option:
        name, sep, pair = item.partition(":")
        if not sep or not name:
            raise CpdispatchError(f"option '{item}': expected DISPATCHER:KEY=VALUE")
        per.setdefault(name.strip(), []).append(pair)
    options = {name: _options(pairs) for name, pairs in per.items()}
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


def cmd_campaign_run(args: argparse.Namespace) -> int:
    from .campaign import run_campaign

    try:
        counts = run_campaign(args.file, args.out, workers=args.workers, scheduler=args.scheduler,
                              retry_failed=not args.no_retry_failed, progress=False if args.no_progress else None)
    except interrupt.Interrupted as exc:
        print(f"cpdispatch: campaign interrupted by {signal.Signals(exc.signum).name}: the complete runs are kept; "
              "the same command resumes it", file=sys.stderr)
        return interrupt.exit_code(exc.signum)
    print(f"{counts['done']} runs done, {counts['failed']} failed, {counts['skipped_done']} were complete; "
          f"results in {args.out}/ (runs.parquet, jobs.parquet)")
    return 1 if counts["failed"] else 0


def cmd_campaign_status(args: argparse.Namespace) -> int:
    from .campaign import status

    print(status(args.dir))
    return 0


def cmd_campaign_collect(args: argparse.Namespace) -> int:
    from .campaign import campaign_folder, collect

    runs, jobs, done, failed = collect(campaign_folder(args.dir))
    print(f"{done} runs done, {failed} failed: {runs}, {jobs}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from .campaign import campaign_folder, collect
    from .campaign.report import choose_run, load_runs, write_report

    campaign_folder(args.dir)  # before anything is written there or into --out
    if not (Path(args.dir) / "runs.parquet").is_file():
        collect(args.dir)
    choose_run(load_runs(args.dir), args.run)  # a bad --run fails before an earlier report is removed
    check_out_dir(args.out, overwrite=args.overwrite)
    print(f"report: {write_report(args.dir, args.out, args.run)}")
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    import os

    from .reproduce import reproduce
    from .reproduce.experiments import TRACES_VARIABLE

    if args.traces:
        os.environ[TRACES_VARIABLE] = str(Path(args.traces).resolve())

    try:
        page = reproduce(args.out, "quick" if args.quick else "full", workers=args.workers, docs=args.docs,
                         progress=False if args.no_progress else None)
    except interrupt.Interrupted as exc:
        print(f"cpdispatch: reproduce interrupted by {signal.Signals(exc.signum).name}: the complete parts are "
              "kept; the same command resumes it", file=sys.stderr)
        return interrupt.exit_code(exc.signum)
    print(f"reproduction: {page}" + (f" (copied to {args.docs})" if args.docs else ""))
    return 0


def cmd_local_cluster(args: argparse.Namespace) -> int:
    import os

    from .slurm import local_cluster

    if args.action == "start":
        from .slurm.accounting import parse_account

        specs = local_cluster.node_specs(args.nodes, args.gpu_nodes)
        accounts = [parse_account(a) for a in args.account]
        started = local_cluster.start(specs, args.dir, accounts=accounts if args.accounting or accounts else None)
        print(f"export SLURM_CONF={started}")
        print(f"# {len(specs)} nodes up ({args.gpu_nodes} with {specs[0].gpus if args.gpu_nodes else 0} GPUs)"
              f"{', with accounting and fair share' if args.accounting or accounts else ''}; "
              f'stop with: cpdispatch slurm local-cluster stop')
        return 0
    conf = args.conf or os.environ.get("SLURM_CONF")
    if not conf:
        raise CpdispatchError("no cluster to stop: give --conf or set SLURM_CONF (as `start` prints)")
    stopped = local_cluster.stop(conf)
    root = Path(conf).resolve().parent.parent
    print(f"stopped {len(stopped)} daemons: {', '.join(stopped) or 'none running'}")
    print(f"its folder is kept (logs, job completions): {root}; remove it with: rm -r {root}")
    return 0


def _check_conf(args: argparse.Namespace) -> None:
    """The cluster's slurm.conf, checked before the first round (Slurm's own errors for a missing
    one are a 30-s timeout or four lines on DNS SRV records)."""
    import os

    given = args.conf or os.environ.get("SLURM_CONF")
    if given is None:
        if not Path("/etc/slurm/slurm.conf").is_file():
            raise CpdispatchError("no Slurm configuration: set SLURM_CONF or give --conf (a cluster on this host: "
                                  'eval "$(cpdispatch slurm local-cluster start)")')
        return
    where = f"--conf {given}" if args.conf else f"SLURM_CONF={given}"
    if not Path(given).is_file():
        raise CpdispatchError(f"{where}: no such file")
    if not os.access(given, os.R_OK):
        raise CpdispatchError(f"{where}: not readable by this user")


def cmd_slurm_dispatch(args: argparse.Namespace) -> int:
    from .slurm.driver import Driver, format_summary
    from .slurm.metrics import Metrics
    from .slurm.priority import check_priority

    parts, failsafe = _live_parts(args), _failsafe(args)  # the options first, then the cluster
    check_priority(args.priority, parts[0])
    if args.journal_max_mb <= 0 or args.max_starts < 0:
        raise CpdispatchError(f"--journal-max-mb {args.journal_max_mb:g}, --max-starts {args.max_starts}: must be "
                              "> 0 and >= 0")
    if args.priority == "slurm" and args.fail_closed:
        raise CpdispatchError("--priority slurm needs the fail-open lease: under --fail-closed every job waits held, "
                              "and Slurm computes no priority for a held job (it stays 0)")
    _check_conf(args)
    metrics = Metrics(args.metrics_port, args.metrics_address) if args.metrics_port else None
    driver = Driver(*parts, state_dir=Path(args.state_dir), shadow=args.shadow,
                    rehold_after=args.rehold_after, failsafe=failsafe, metrics=metrics,
                    journal_max_bytes=int(args.journal_max_mb * 1e6), max_starts=args.max_starts,
                    priority=args.priority)
    try:
        with interrupt.stopping_gracefully():
            summary = driver.run(poll=args.poll, once=args.once)
    finally:
        driver.close()
    print(format_summary(summary))
    return interrupt.exit_code(interrupt.received) if interrupt.received is not None else 0


def cmd_slurm_replay(args: argparse.Namespace) -> int:
    import json
    import shutil
    import tempfile

    import pandas as pd

    from . import api
    from .slurm import local_cluster
    from .slurm import replay as rp
    from .slurm.commands import SlurmCommands
    from .slurm.driver import Driver, format_summary

    if args.time_scale <= 0:
        raise CpdispatchError(f"--time-scale {args.time_scale}: must be > 0")
    dispatcher, predictor, _ = _live_parts(args)
    if args.system == "cluster":
        _check_conf(args)
    out = check_out_dir(args.out, overwrite=args.overwrite) if args.out else None
    state_dir = Path(args.state_dir or tempfile.mkdtemp(prefix="cpdispatch-replay-state-"))
    conf, root = rp.local_or_running(args.system, None)
    finished = False
    try:
        commands = SlurmCommands(conf or args.conf)
        system = rp.cluster_system(commands)
        jobs = api.read_workload(args.trace, system, limit=args.limit_jobs, skip=args.skip_jobs).jobs
        fit = [j for j in jobs if rp.fits(j, system)]
        planned = rp.plan(fit, args.time_scale)
        print(f"replaying {len(planned)} jobs ({len(jobs) - len(fit)} never fit this cluster) over "
              f"{planned[-1].at if planned else 0:.0f} s of submissions; journal in {state_dir}", file=sys.stderr)
        driver = Driver(dispatcher, predictor, commands, state_dir, rehold_after=args.rehold_after,
                        failsafe=_failsafe(args, conf))
        replay = rp.Replay(planned, driver, commands, system.types, args.poll)
        try:
            with interrupt.stopping_gracefully():
                replay.run(args.timeout)
            rounds = driver.summary()
            finished = interrupt.received is None
        finally:
            driver.close()
            if not finished:  # interrupted, timed out or failed: its jobs must not wait held forever
                replay.cancel()
        if interrupt.received is not None:
            print("cpdispatch: replay interrupted; its jobs were cancelled", file=sys.stderr)
            return interrupt.exit_code(interrupt.received)
        fresh, fresh_pred, _ = _live_parts(args)  # the simulator's own, untaught copies
        simulated = rp.simulate_same(system, replay.simulated_jobs(system.types), fresh, fresh_pred)
        rows = replay.rows(simulated)
        totals = rp.compare(rows)
        print(format_summary(rounds))
        print(rp.format_comparison(totals, len(jobs) - len(fit), len(planned) - len(replay.ran())))
        if out is not None:
            pd.DataFrame(rows).to_csv(out / "comparison.csv", index=False)
            (out / "comparison.json").write_text(json.dumps(totals, indent=1) + "\n")
            print(f"per-job comparison in {out}/comparison.csv")
        return 0
    finally:
        if root is not None and conf is not None:
            local_cluster.stop(conf)
            shutil.rmtree(root, ignore_errors=True)
        if args.state_dir is None:  # a temporary journal: kept only to look into a failed replay
            if finished:
                shutil.rmtree(state_dir, ignore_errors=True)
            else:
                print(f"cpdispatch: the replay's journal is kept in {state_dir}", file=sys.stderr)


def _failsafe(args: argparse.Namespace, conf: str | None = None) -> Any:
    """The lease this driver renews (beside the cluster's slurm.conf unless --lease-file)."""
    from .slurm.failsafe import FailSafe, default_lease_file

    if args.lease < 3 * args.poll:
        raise CpdispatchError(f"--lease {args.lease}: at least 3 polls ({3 * args.poll:g} s), so that a job's "
                              "begin time is pushed before it comes")
    path = Path(args.lease_file) if args.lease_file else default_lease_file(conf or args.conf)
    return FailSafe(path, args.lease, "closed" if args.fail_closed else "open")


def cmd_slurm_status(args: argparse.Namespace) -> int:
    from .slurm.status import format_status, read_status

    print(format_status(read_status(Path(args.state_dir))))
    return 0


def cmd_slurm_lua(args: argparse.Namespace) -> int:
    from .slurm.failsafe import default_lease_file, job_submit_lua

    print(job_submit_lua(args.lease_file or default_lease_file(args.conf)), end="")
    return 0


def _live_parts(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """The dispatcher, the predictor and the commands of a live run, checked before any round."""
    from .dispatchers.base import make_dispatcher
    from .predictors import resolve_predictor
    from .slurm.commands import SlurmCommands

    if args.predictor == "real":
        from .predictors import ALIASES, PREDICTORS

        others = ", ".join(p for p in [*PREDICTORS, *ALIASES] if p != "real")
        raise CpdispatchError(f"--predictor real needs run times known in advance, which a live cluster does "
                              f"not have; use one of {others}")
    if args.poll <= 0 or args.rehold_after <= 0:
        raise CpdispatchError(f"--poll {args.poll:g}, --rehold-after {args.rehold_after:g}: both must be > 0 seconds")
    return (make_dispatcher(args.dispatcher, _options(args.option)), resolve_predictor(args.predictor),
            SlurmCommands(args.conf))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cpdispatch", description=DESCRIPTION, epilog="Usage, formats and presets: README.md of cpdispatch.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    for add in (_add_simulate, _add_tools, _add_demo, _add_instances, _add_campaign, _add_slurm):
        add(sub)
    return p


def _parser(sub: Any, name: str, help: str) -> argparse.ArgumentParser:
    """A subcommand whose --help shows every default."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name, help=help, description=help, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    return parser


FORMAT_HELP = "trace format (auto: from the suffix and the first line)"
OVERWRITE_HELP = "replace the results of an earlier run at the output location(s)"
STRICT_HELP = "stop at the first malformed line (default: skip it, warn, count it in summary.json)"


def _add_simulate(sub: Any) -> None:
    s = _parser(sub, "simulate", "replay a workload on a system with a dispatcher")
    s.add_argument("--system", required=True, help="preset name (cpdispatch systems) or TOML file")
    s.add_argument("--workload", required=True, help="SWF, Alibaba pod CSV or native CSV (plain or .gz)")
    s.add_argument("--format", default="auto", choices=["auto", "swf", "alibaba", "native"], help=FORMAT_HELP)
    s.add_argument("--dispatcher", default="easy",
                   help="built-in name (cpdispatch dispatchers), plugin name, or module:attr")
    s.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="dispatcher option (repeatable); see cpdispatch dispatchers")
    s.add_argument("--predictor", default="walltime",
                   help="duration predictor: walltime (the user's request, AccaSim's), real, last2, datadriven, "
                        "or module:attr")
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
    s.add_argument("--no-room", action="store_true",
                   help="skip the room probe (summary.json 'room': would another placement of the jobs starting "
                        "now let a queued job start earlier; one small model on some decisions)")
    s.add_argument("--record-instances", metavar="FILE.jsonl[.gz]", default=None,
                   help="save every dispatcher call's snapshot, for cpdispatch instances compare")
    s.add_argument("--no-progress", action="store_true", help="no progress bar (shown only on a terminal)")
    s.add_argument("--no-plots", action="store_true", help="skip utilization.png and queue.png")
    s.set_defaults(func=cmd_simulate)


def _add_tools(sub: Any) -> None:
    s = _parser(sub, "systems", "list presets, show one, or print it as TOML")
    s.add_argument("name", nargs="?", help="preset name or TOML file (none: list the presets)")
    s.add_argument("--toml", action="store_true", help="print the system as a TOML file to edit")
    s.set_defaults(func=cmd_systems)

    s = _parser(sub, "convert", "write any supported trace in the native CSV format")
    s.add_argument("input", help="SWF, Alibaba pod CSV or native CSV (plain or .gz)")
    s.add_argument("--system", required=True, help="preset name or TOML file the trace is read onto")
    s.add_argument("--out", required=True, help="native CSV file to write (.gz: compressed)")
    s.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    s.add_argument("--format", default="auto", choices=["auto", "swf", "alibaba", "native"], help=FORMAT_HELP)
    s.add_argument("--limit-jobs", type=int, default=None, help="keep only the first N jobs")
    s.add_argument("--strict", action="store_true", help=STRICT_HELP)
    s.set_defaults(func=cmd_convert)

    s = _parser(sub, "generate", "write a generated workload in the native CSV format")
    s.add_argument("kind", choices=["eurora"], help="generator (eurora: the 2014 paper's Eurora-like jobs)")
    s.add_argument("--jobs", type=int, required=True, help="number of jobs")
    s.add_argument("--seed", type=int, default=0, help="generator seed")
    s.add_argument("--mix", default="eurora", choices=["eurora", "gpu-contended"],
                   help="job mix (gpu-contended: GPUs offered at 0.9, GPU units of 4-12 cores)")
    s.add_argument("--out", required=True, help="native CSV file to write (.gz: compressed)")
    s.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    s.set_defaults(func=cmd_generate)

    s = _parser(sub, "dispatchers", "list dispatchers, their options, and the predictors")
    s.set_defaults(func=cmd_dispatchers)

    s = _parser(sub, "inspect", "workload statistics")
    s.add_argument("path", help="SWF, Alibaba pod CSV or native CSV (plain or .gz)")
    s.add_argument("--system", default="eurora", help="system the trace is read onto")
    s.add_argument("--format", default="auto", choices=["auto", "swf", "alibaba", "native"], help=FORMAT_HELP)
    s.add_argument("--strict", action="store_true", help=STRICT_HELP)
    s.set_defaults(func=cmd_inspect)


def _add_demo(sub: Any) -> None:
    s = _parser(sub, "demo", "the main job on an embedded default: a generated Eurora workload, dispatchers "
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


def _add_instances(sub: Any) -> None:
    s = _parser(sub, "instances", "saved dispatching instances (--record-instances)")
    isub = s.add_subparsers(dest="instances_command", required=True)
    s = _parser(isub, "compare", "replay saved instances with several dispatchers; ratio plots of the first "
                                 "over the second")
    s.add_argument("file", metavar="FILE.jsonl", help="instances recorded by simulate --record-instances")
    s.add_argument("--dispatchers", required=True, help="comma-separated, e.g. pcp20,pcp19")
    s.add_argument("--out", required=True, help="output folder (new or empty; see --overwrite)")
    s.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    s.add_argument("--limit", type=int, default=None, help="replay only the first N instances")
    s.add_argument("-o", "--option", action="append", default=[], metavar="DISPATCHER:KEY=VALUE",
                   help="dispatcher option (repeatable), e.g. pcp20:fastpath=false")
    s.set_defaults(func=cmd_instances_compare)


def _add_campaign(sub: Any) -> None:
    s = _parser(sub, "campaign", "grids of runs (dispatchers x predictors x workloads x load factors x replicas) "
                                 "on Dask; resumable")
    csub = s.add_subparsers(dest="campaign_command", required=True)
    s = _parser(csub, "run", "run the runs not yet complete (a rerun resumes an interrupted campaign)")
    s.add_argument("file", metavar="CAMPAIGN.toml", help="campaign file (see README, campaigns/)")
    s.add_argument("--out", required=True, help="campaign folder (runs/<key>/, runs.parquet, jobs.parquet)")
    s.add_argument("--workers", type=int, default=None, help="local Dask worker processes (default: the cores)")
    s.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="an existing Dask scheduler (tcp://host:port) instead of local workers")
    s.add_argument("--no-retry-failed", action="store_true", help="do not rerun the runs that failed before")
    s.add_argument("--no-progress", action="store_true", help="no progress bar (shown only on a terminal)")
    s.set_defaults(func=cmd_campaign_run)
    s = _parser(csub, "status", "runs done, failed and to run, per dispatcher")
    s.add_argument("dir", metavar="DIR", help="campaign folder")
    s.set_defaults(func=cmd_campaign_status)
    s = _parser(csub, "collect", "rebuild runs.parquet and jobs.parquet from the run folders")
    s.add_argument("dir", metavar="DIR", help="campaign folder")
    s.set_defaults(func=cmd_campaign_collect)

    s = _parser(sub, "report", "figures and tables of a campaign: one self-contained index.html")
    s.add_argument("dir", metavar="DIR", help="campaign folder")
    s.add_argument("--out", required=True, help="report folder (new or empty; see --overwrite)")
    s.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    s.add_argument("--run", default=None, metavar="KEY", help="a run whose replica is drawn over time, every "
                                                                "dispatcher of it (default: the reference's first run)")
    s.set_defaults(func=cmd_report)

    s = _parser(sub, "reproduce", "run the experiments behind the three papers' findings (paper profile beside "
                                  "our defaults; resumable) and write reproduction.md, one row per finding")
    s.add_argument("--out", required=True, help="folder of the experiments and of reproduction.md")
    s.add_argument("--quick", action="store_true", help="small cases, a few minutes (CI); default: the full "
                                                        "reproduction, whose estimated time is printed first")
    s.add_argument("--workers", type=int, default=None, help="local Dask worker processes (default: the cores)")
    s.add_argument("--docs", default=None, metavar="FILE", help="also copy the page there "
                                                              "(e.g. docs/reproduction.md)")
    s.add_argument("--traces", default=None, metavar="DIR", help="folder of the real traces (KTH-SP2, RICC, "
                                                                   "CEA-Curie; default: ../shared/workloads beside "
                                                                   "the repository)")
    s.add_argument("--no-progress", action="store_true", help="no progress bar (shown only on a terminal)")
    s.set_defaults(func=cmd_reproduce)


def _add_slurm(sub: Any) -> None:
    s = _parser(sub, "slurm", "a real Slurm cluster: dispatch it live, replay a trace on it, or start a local one")
    ssub = s.add_subparsers(dest="slurm_command", required=True)
    s = _parser(ssub, "local-cluster", "start or stop a real Slurm cluster on this host (root; Debian packages "
                                       "installed on demand)")
    s.add_argument("action", choices=["start", "stop"], help="start prints `export SLURM_CONF=...` for eval")
    s.add_argument("--nodes", type=int, default=4, help="number of nodes (start)")
    s.add_argument("--gpu-nodes", type=int, default=2, help="how many of them have 2 fake GPUs, 8 CPUs, 8000 MB "
                                                            "(the others: 4 CPUs, 4000 MB) (start)")
    s.add_argument("--dir", default=None, help="the cluster's folder (start; default: a new temporary one)")
    s.add_argument("--accounting", action="store_true",
                   help="also run MariaDB and slurmdbd, with Slurm's multifactor priority (fair share, QOS, age) "
                        "(start)")
    s.add_argument("--account", action="append", default=[], metavar="NAME=SHARES:USER[,USER...]",
                   help="an account with its fair-share shares and users, made before Slurm starts "
                        "(repeatable; implies --accounting) (start)")
    s.add_argument("--conf", default=None, help="the slurm.conf of the cluster to stop (default: $SLURM_CONF)")
    s.set_defaults(func=cmd_local_cluster)
    s = _parser(ssub, "dispatch", "drive a real Slurm cluster with a dispatcher: held jobs are pinned to the "
                                  "chosen nodes and released (see README, Running on a real Slurm cluster)")
    _add_live(s)
    s.add_argument("--shadow", action="store_true", help="decide and log, but send no command to Slurm")
    s.add_argument("--once", action="store_true", help="one round, then exit")
    s.add_argument("--metrics-port", type=int, default=None, metavar="PORT",
                   help="serve Prometheus metrics on this port (rounds, latency per part, queue, starts, lease age)")
    s.add_argument("--metrics-address", default="0.0.0.0", help="the address the metrics are served on")
    s.add_argument("--journal-max-mb", type=float, default=100.0, metavar="MB",
                   help="rotate journal.jsonl at this size (4 old files kept)")
    s.add_argument("--max-starts", type=int, default=200, metavar="N",
                   help="apply at most N starts per round, the dispatcher's first (the others are decided again "
                        "next round; 0: all): a round stays short when a backlog starts at once")
    s.add_argument("--priority", default="papers",
                   help="the jobs' weights in the dispatcher's objective: papers (all equal, the papers' "
                        "objective) or slurm (Slurm's priority over the queue's highest: fair share, QOS and age "
                        "order the queue; CP dispatchers, fail-open mode)")
    s.set_defaults(func=cmd_slurm_dispatch)
    s = _parser(ssub, "status", "what a driver did and is doing: its last rounds, each job not started and why, "
                                "its lease (from --state-dir's status.json; works while it is down)")
    s.add_argument("--state-dir", default="cpdispatch-slurm-state", help="the driver's state folder")
    s.set_defaults(func=cmd_slurm_status)
    s = _parser(ssub, "job-submit-lua", "print the job_submit.lua that makes the cluster wait for the driver "
                                        "while its lease is fresh (install it beside slurm.conf)")
    s.add_argument("--lease-file", default=None, help="the lease it reads (None: cpdispatch.lease beside slurm.conf)")
    s.add_argument("--conf", default=None, help="the cluster's slurm.conf (None: $SLURM_CONF, else Slurm's own)")
    s.set_defaults(func=cmd_slurm_lua)
    s = _parser(ssub, "replay", "submit a trace's jobs to Slurm as sleep jobs, time compressed, dispatch them "
                                "live, and compare the realised schedule with the simulator's")
    s.add_argument("trace", help="SWF, Alibaba pod CSV or native CSV (plain or .gz)")
    s.add_argument("--system", default="cluster", metavar="SYSTEM_OR_CLUSTER",
                   help="cluster: the running cluster ($SLURM_CONF); else a preset or TOML file, for which a "
                        "local cluster is started and stopped (at most 64 nodes)")
    s.add_argument("--time-scale", type=float, default=1000.0, metavar="X",
                   help="divide submit times, run times and walltimes by X (walltimes then round up to minutes)")
    s.add_argument("--limit-jobs", type=int, default=100, help="replay N jobs (after --skip-jobs)")
    s.add_argument("--skip-jobs", type=int, default=0, help="drop the first N jobs of the trace (a slice)")
    s.add_argument("--timeout", type=float, default=3600.0, help="give up after this many seconds")
    s.add_argument("--out", default=None, help="folder for comparison.csv (per job) and comparison.json")
    s.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    _add_live(s, poll=0.5, state_dir=None)
    s.set_defaults(func=cmd_slurm_replay)


def _add_live(s: Any, poll: float = 1.0, state_dir: str | None = "cpdispatch-slurm-state") -> None:
    """Options of the commands that run the live driver."""
    s.add_argument("--dispatcher", default="pcp20", help="dispatcher name (cpdispatch dispatchers)")
    s.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="dispatcher option (repeatable)")
    s.add_argument("--predictor", default="walltime", help="duration predictor (not real: run times are unknown)")
    s.add_argument("--poll", type=float, default=poll, help="seconds between rounds (Slurm acts once a second)")
    s.add_argument("--state-dir", default=state_dir,
                   help="folder of the journal (decisions, commands, results) and of finished jobs' run times" +
                        ("" if state_dir else " (None: a temporary folder, removed after a replay that finished)"))
    s.add_argument("--rehold-after", type=float, default=3.0, metavar="SECONDS",
                   help="hold again a released job not running after this long (it returns to the queue)")
    s.add_argument("--conf", default=None, help="the cluster's slurm.conf (None: $SLURM_CONF, else Slurm's own)")
    s.add_argument("--lease", type=int, default=10, metavar="SECONDS",
                   help="fail-open: a job not started by a driver whose lease (renewed every round) is this old "
                        "is Slurm's to schedule (docs/slurm.md, Fail-safe)")
    s.add_argument("--fail-closed", action="store_true",
                   help="new jobs are held until a driver releases them, even while none runs")
    s.add_argument("--lease-file", default=None,
                   help="the lease the cluster's job_submit.lua reads (None: cpdispatch.lease beside slurm.conf)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "limit_jobs", None) is not None and args.limit_jobs < 1:
        parser.error("--limit-jobs must be at least 1")
    if hasattr(args, "load_factor"):  # simulate and demo only: the others need not import the readers
        from .workloads import LOAD_FACTOR_RANGE

        low, high = LOAD_FACTOR_RANGE
        if not low <= args.load_factor <= high:
            parser.error(f"--load-factor must be between {low:g} and {high:g}")
    if getattr(args, "skip_jobs", 0) < 0:
        parser.error("--skip-jobs must be at least 0")
    try:
        with interrupt.handling():
            return int(args.func(args))
    except CpdispatchError as exc:
        print(f"cpdispatch: error: {exc}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, interrupt.Interrupted) as exc:
        signum = exc.signum if isinstance(exc, interrupt.Interrupted) else signal.SIGINT
        print(f"cpdispatch: interrupted by {signal.Signals(signum).name} (outside a simulation: nothing of this "
              "step was written)", file=sys.stderr)
        return interrupt.exit_code(signum)
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
