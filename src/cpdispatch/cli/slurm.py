"""`cpdispatch slurm`: drive a real Slurm cluster live, replay a trace on it, start a local one."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .. import interrupt
from ..errors import CpdispatchError
from ..outputs_safety import check_out_dir
from .arguments import OVERWRITE_HELP, parse_options, subcommand


def cmd_local_cluster(args: argparse.Namespace) -> int:
    import os

    from ..slurm import local_cluster

    if args.action == "start":
        from ..slurm.accounting import parse_account

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
    from ..slurm.driver import Driver
    from ..slurm.figures import format_summary
    from ..slurm.metrics import Metrics
    from ..slurm.priority import check_priority

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
    from ..slurm.replay import ReplayRun, replay_trace

    if args.time_scale <= 0:
        raise CpdispatchError(f"--time-scale {args.time_scale}: must be > 0")
    _live_parts(args)  # the dispatcher's and predictor's names and options, before the cluster
    if args.system == "cluster":
        _check_conf(args)
    out = check_out_dir(args.out, overwrite=args.overwrite) if args.out else None
    run = ReplayRun(args.trace, args.system, args.conf, args.time_scale, args.limit_jobs, args.skip_jobs,
                    args.timeout, args.poll, args.rehold_after, Path(args.state_dir) if args.state_dir else None, out)
    return replay_trace(run, lambda: _live_parts(args)[:2], lambda conf: _failsafe(args, conf))


def _failsafe(args: argparse.Namespace, conf: str | None = None) -> Any:
    """The lease this driver renews (beside the cluster's slurm.conf unless --lease-file)."""
    from ..slurm.failsafe import FailSafe, default_lease_file

    if args.lease < 3 * args.poll:
        raise CpdispatchError(f"--lease {args.lease}: at least 3 polls ({3 * args.poll:g} s), so that a job's "
                              "begin time is pushed before it comes")
    path = Path(args.lease_file) if args.lease_file else default_lease_file(conf or args.conf)
    return FailSafe(path, args.lease, "closed" if args.fail_closed else "open")


def cmd_slurm_status(args: argparse.Namespace) -> int:
    from ..slurm.status import format_status, read_status

    print(format_status(read_status(Path(args.state_dir))))
    return 0


def cmd_slurm_lua(args: argparse.Namespace) -> int:
    from ..slurm.failsafe import default_lease_file, job_submit_lua

    print(job_submit_lua(args.lease_file or default_lease_file(args.conf)), end="")
    return 0


def _live_parts(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """The dispatcher, the predictor and the commands of a live run, checked before any round."""
    from ..dispatchers.base import make_dispatcher
    from ..predictors import resolve_predictor
    from ..slurm.commands import SlurmCommands

    if args.predictor == "real":
        from ..predictors import ALIASES, PREDICTORS

        others = ", ".join(p for p in [*PREDICTORS, *ALIASES] if p != "real")
        raise CpdispatchError(f"--predictor real needs run times known in advance, which a live cluster does "
                              f"not have; use one of {others}")
    if args.poll <= 0 or args.rehold_after <= 0:
        raise CpdispatchError(f"--poll {args.poll:g}, --rehold-after {args.rehold_after:g}: both must be > 0 seconds")
    return (make_dispatcher(args.dispatcher, parse_options(args.option)), resolve_predictor(args.predictor),
            SlurmCommands(args.conf))


def add_slurm(sub: Any) -> None:
    s = subcommand(sub, "slurm", "a real Slurm cluster: dispatch it live, replay a trace on it, or start a local one")
    ssub = s.add_subparsers(dest="slurm_command", required=True)
    s = subcommand(ssub, "local-cluster", "start or stop a real Slurm cluster on this host (root; Debian packages "
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
    s = subcommand(ssub, "dispatch", "drive a real Slurm cluster with a dispatcher: held jobs are pinned to the "
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
    s = subcommand(ssub, "status", "what a driver did and is doing: its last rounds, each job not started and why, "
                                "its lease (from --state-dir's status.json; works while it is down)")
    s.add_argument("--state-dir", default="cpdispatch-slurm-state", help="the driver's state folder")
    s.set_defaults(func=cmd_slurm_status)
    s = subcommand(ssub, "job-submit-lua", "print the job_submit.lua that makes the cluster wait for the driver "
                                        "while its lease is fresh (install it beside slurm.conf)")
    s.add_argument("--lease-file", default=None, help="the lease it reads (None: cpdispatch.lease beside slurm.conf)")
    s.add_argument("--conf", default=None, help="the cluster's slurm.conf (None: $SLURM_CONF, else Slurm's own)")
    s.set_defaults(func=cmd_slurm_lua)
    s = subcommand(ssub, "replay", "submit a trace's jobs to Slurm as sleep jobs, time compressed, dispatch them "
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
