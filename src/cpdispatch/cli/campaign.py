"""`cpdispatch campaign`, `report` and `reproduce`: grids of runs, their report, and the papers'
experiments."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import Any

from .. import interrupt
from ..outputs_safety import check_out_dir
from .arguments import OVERWRITE_HELP, subcommand


def cmd_campaign_run(args: argparse.Namespace) -> int:
    from ..campaign import run_campaign

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
    from ..campaign import status

    print(status(args.dir))
    return 0


def cmd_campaign_collect(args: argparse.Namespace) -> int:
    from ..campaign import campaign_folder, collect

    runs, jobs, done, failed = collect(campaign_folder(args.dir))
    print(f"{done} runs done, {failed} failed: {runs}, {jobs}")
    return 0


def cmd_campaign_blocks(args: argparse.Namespace) -> int:
    from ..campaign import campaign_folder, collect
    from ..campaign.blocks import BEST_BASELINE, job_table, markdown
    from ..campaign.frames import load_jobs_all
    from ..campaign.runner import complete_runs
    from ..errors import CpdispatchError

    root = campaign_folder(args.dir)
    jobs = root / "jobs.parquet"
    newest = max((p.stat().st_mtime for p in complete_runs(root)), default=0.0)
    if not jobs.is_file() or jobs.stat().st_mtime < newest:  # runs finished since the last collect
        collect(root)
    references = []
    for ref in args.reference:
        if ref == "best":
            references.append(BEST_BASELINE)
            continue
        dispatcher, sep, predictor = ref.partition(":")
        if not sep or not dispatcher or not predictor:
            raise CpdispatchError(f"--reference {ref!r}: expected DISPATCHER:PREDICTOR (e.g. easy:walltime) or best")
        references.append((dispatcher, predictor))
    print(markdown(job_table(load_jobs_all(jobs), args.days), references))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from ..campaign import campaign_folder, collect
    from ..campaign.report import choose_run, load_runs, write_report

    campaign_folder(args.dir)  # before anything is written there or into --out
    if not (Path(args.dir) / "runs.parquet").is_file():
        collect(args.dir)
    choose_run(load_runs(args.dir), args.run)  # a bad --run fails before an earlier report is removed
    check_out_dir(args.out, overwrite=args.overwrite)
    print(f"report: {write_report(args.dir, args.out, args.run)}")
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    import os

    from ..reproduce import reproduce
    from ..reproduce.experiments import TRACES_VARIABLE

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


def add_campaign(sub: Any) -> None:
    s = subcommand(sub, "campaign", "grids of runs (dispatchers x predictors x workloads x load factors x replicas) "
                                 "on Dask; resumable")
    csub = s.add_subparsers(dest="campaign_command", required=True)
    s = subcommand(csub, "run", "run the runs not yet complete (a rerun resumes an interrupted campaign)")
    s.add_argument("file", metavar="CAMPAIGN.toml", help="campaign file (see README, campaigns/)")
    s.add_argument("--out", required=True, help="campaign folder (runs/<key>/, runs.parquet, jobs.parquet)")
    s.add_argument("--workers", type=int, default=None, help="local Dask worker processes (default: the cores)")
    s.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="an existing Dask scheduler (tcp://host:port) instead of local workers")
    s.add_argument("--no-retry-failed", action="store_true", help="do not rerun the runs that failed before")
    s.add_argument("--no-progress", action="store_true", help="no progress bar (shown only on a terminal)")
    s.set_defaults(func=cmd_campaign_run)
    s = subcommand(csub, "status", "runs done, failed and to run, per dispatcher")
    s.add_argument("dir", metavar="DIR", help="campaign folder")
    s.set_defaults(func=cmd_campaign_status)
    s = subcommand(csub, "collect", "rebuild runs.parquet and jobs.parquet from the run folders")
    s.add_argument("dir", metavar="DIR", help="campaign folder")
    s.set_defaults(func=cmd_campaign_collect)
    s = subcommand(csub, "blocks", "whole-trace runs cut into blocks of submit time: per configuration the mean "
                                   "bounded slowdown per job class, and paired differences over blocks (markdown)")
    s.add_argument("dir", metavar="DIR", help="campaign folder")
    s.add_argument("--reference", action="append", required=True, metavar="DISPATCHER:PREDICTOR",
                   help="configuration the others are paired with (repeatable), e.g. easy:walltime; 'best': per "
                        "workload, the non-CP configuration with the lowest mean bounded slowdown")
    s.add_argument("--days", type=float, default=30.0, help="block length in days (default: 30)")
    s.set_defaults(func=cmd_campaign_blocks)

    s = subcommand(sub, "report", "figures and tables of a campaign: one self-contained index.html")
    s.add_argument("dir", metavar="DIR", help="campaign folder")
    s.add_argument("--out", required=True, help="report folder (new or empty; see --overwrite)")
    s.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    s.add_argument("--run", default=None, metavar="KEY", help="a run whose replica is drawn over time, every "
                                                                "dispatcher of it (default: the reference's first run)")
    s.set_defaults(func=cmd_report)

    s = subcommand(sub, "reproduce", "run the experiments behind the three papers' findings (paper profile beside "
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
