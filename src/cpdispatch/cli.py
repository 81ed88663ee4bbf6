"""The `cpdispatch` command line (contract on the architecture page)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .errors import CpdispatchError

DEMO_DISPATCHERS = ("fifo", "easy", "pbs", "hcp19", "pcp20")


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
) -> dict[str, Any]:
    """`cpdispatch simulate`: read the files, one `api.simulate` call, write the contract files;
    returns the summary and the raw result. The summary's `call` says how to repeat it in Python."""
    from . import api
    from .system import load_system

    system = load_system(system_name)
    workload = api.read_workload(workload_path, system, fmt=fmt, strict=strict, limit=limit, skip=skip)
    result = api.simulate(
        system, workload, dispatcher, predictor, options, load_factor=load_factor, seed=seed,
        kill_at_walltime=kill_at_walltime, charge_dispatch_time=charge_dispatch_time, progress=progress,
        record_instances=record_instances,
    )
    if out:
        result.save(out, plots=plots)
    return {"summary": result.summary, "result": result.raw}


def cmd_simulate(args: argparse.Namespace) -> int:
    from .report import format_table

    run = run_simulation(
        args.system, args.workload, args.dispatcher, args.predictor, args.out,
        fmt=args.format, options=_options(args.option), limit=args.limit_jobs, skip=args.skip_jobs, seed=args.seed,
        load_factor=args.load_factor, kill_at_walltime=args.kill_at_walltime,
        charge_dispatch_time=args.charge_dispatch_time, strict=args.strict, record_instances=args.record_instances,
        progress=False if args.no_progress else None, plots=not args.no_plots,
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
    return 0


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
    workload = generate_eurora(args.jobs, args.seed)
    write_native(args.out, workload, load_system("eurora"))
    print(f"{len(workload.jobs):,} Eurora-like jobs (seed {args.seed}) written to {args.out}")
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

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    workload_path = out / "eurora-workload.csv"
    write_native(str(workload_path), generate_eurora(args.jobs, args.seed), load_system("eurora"))
    print(f"generated {args.jobs:,} Eurora-like jobs (seed {args.seed}) -> {workload_path}; "
          f"arrivals {args.load_factor}x faster (--load-factor)")
    runs = []
    for name in args.dispatchers.split(","):
        print(f"simulating {name} ...", flush=True)
        run = run_simulation(
            "eurora", str(workload_path), name, args.predictor, str(out / name), seed=args.seed,
            load_factor=args.load_factor, progress=False,
        )
        runs.append((run["summary"], run["result"]))
    plot_comparison(runs, str(out))
    print()
    print(format_table([s for s, _ in runs]))
    print(f"\noutputs and plots in {out}/ (per dispatcher: schedule.csv, decisions.csv, summary.json)")
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
    compare(args.file, names, args.out, limit=args.limit, options=options)
    print((Path(args.out) / "comparison_summary.txt").read_text(), end="")
    print(f"outputs in {args.out}/")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="cpdispatch", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    for add in (_add_simulate, _add_tools, _add_demo, _add_instances):
        add(sub)
    return p


def _add_simulate(sub: Any) -> None:
    s = sub.add_parser("simulate", help="replay a workload on a system with a dispatcher")
    s.add_argument("--system", required=True, help="preset name or TOML file")
    s.add_argument("--workload", required=True, help="SWF, Alibaba pod CSV or native CSV (plain or .gz)")
    s.add_argument("--format", default="auto", choices=["auto", "swf", "alibaba", "native"])
    s.add_argument("--dispatcher", default="easy")
    s.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="dispatcher option (repeatable); see `cpdispatch dispatchers`")
    s.add_argument("--predictor", default="walltime")
    s.add_argument("--out", required=True, help="output folder")
    s.add_argument("--limit-jobs", type=int, default=None, help="keep only N jobs (after --skip-jobs)")
    s.add_argument("--skip-jobs", type=int, default=0, help="drop the first N jobs of the file (a slice)")
    s.add_argument("--load-factor", type=float, default=1.0, metavar="X",
                   help="divide inter-arrival times by X (X=2: twice the offered load)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--kill-at-walltime", action="store_true")
    s.add_argument("--charge-dispatch-time", action="store_true")
    s.add_argument("--strict", action="store_true", help="stop at the first malformed line")
    s.add_argument("--record-instances", metavar="FILE.jsonl", default=None)
    s.add_argument("--no-progress", action="store_true")
    s.add_argument("--no-plots", action="store_true")
    s.set_defaults(func=cmd_simulate)


def _add_tools(sub: Any) -> None:
    s = sub.add_parser("systems", help="list presets, show one, or print it as TOML")
    s.add_argument("name", nargs="?")
    s.add_argument("--toml", action="store_true")
    s.set_defaults(func=cmd_systems)

    s = sub.add_parser("convert", help="write any supported trace in the native CSV format")
    s.add_argument("input")
    s.add_argument("--system", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--format", default="auto", choices=["auto", "swf", "alibaba", "native"])
    s.add_argument("--limit-jobs", type=int, default=None)
    s.add_argument("--strict", action="store_true")
    s.set_defaults(func=cmd_convert)

    s = sub.add_parser("generate", help="write a generated workload in the native CSV format")
    s.add_argument("kind", choices=["eurora"])
    s.add_argument("--jobs", type=int, required=True)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", required=True)
    s.set_defaults(func=cmd_generate)

    s = sub.add_parser("dispatchers", help="list dispatchers, their options, and the predictors")
    s.set_defaults(func=cmd_dispatchers)

    s = sub.add_parser("inspect", help="workload statistics")
    s.add_argument("path")
    s.add_argument("--system", default="eurora", help="system the trace is read onto (default eurora)")
    s.add_argument("--format", default="auto", choices=["auto", "swf", "alibaba", "native"])
    s.add_argument("--strict", action="store_true")
    s.set_defaults(func=cmd_inspect)


def _add_demo(sub: Any) -> None:
    s = sub.add_parser("demo", help="the main job on an embedded default: generated Eurora workload, "
                                    "dispatchers compared")
    s.add_argument("--jobs", type=int, default=3000)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--dispatchers", default=",".join(DEMO_DISPATCHERS))
    s.add_argument("--predictor", default="last2")
    s.add_argument("--load-factor", type=float, default=2.0, metavar="X",
                   help="divide inter-arrival times by X (default 2: a busy system, where dispatchers differ)")
    s.add_argument("--out", default="demo-out")
    s.set_defaults(func=cmd_demo)


def _add_instances(sub: Any) -> None:
    s = sub.add_parser("instances", help="saved dispatching instances (--record-instances)")
    isub = s.add_subparsers(dest="instances_command", required=True)
    s = isub.add_parser("compare", help="replay saved instances with several dispatchers; ratio plots "
                                        "of the first over the second")
    s.add_argument("file", metavar="FILE.jsonl", help="instances recorded by simulate --record-instances")
    s.add_argument("--dispatchers", required=True, help="comma-separated, e.g. pcp20,pcp19")
    s.add_argument("--out", required=True, help="output folder")
    s.add_argument("--limit", type=int, default=None, help="replay only the first N instances")
    s.add_argument("-o", "--option", action="append", default=[], metavar="DISPATCHER:KEY=VALUE",
                   help="dispatcher option (repeatable), e.g. pcp20:fastpath=false")
    s.set_defaults(func=cmd_instances_compare)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "limit_jobs", None) is not None and args.limit_jobs < 1:
        parser.error("--limit-jobs must be at least 1")
    if not getattr(args, "load_factor", 1.0) > 0:
        parser.error("--load-factor must be > 0")
    if getattr(args, "skip_jobs", 0) < 0:
        parser.error("--skip-jobs must be at least 0")
    try:
        return int(args.func(args))
    except CpdispatchError as exc:
        print(f"cpdispatch: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("cpdispatch: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
