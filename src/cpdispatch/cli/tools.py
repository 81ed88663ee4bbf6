"""`cpdispatch systems`, `convert`, `generate`, `dispatchers` and `inspect`: systems, workloads and
the catalogue of dispatchers."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import CpdispatchError
from ..outputs_safety import check_out_file
from .arguments import FORMAT_HELP, OVERWRITE_HELP, STRICT_HELP, subcommand


def cmd_systems(args: argparse.Namespace) -> int:
    from ..system import load_system, preset_names

    if not args.name:
        for name in preset_names():
            print(load_system(name).describe().splitlines()[0])
        return 0
    system = load_system(args.name)
    print(system.to_toml() if args.toml else system.describe())
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    from ..system import load_system
    from ..workloads import load_workload, write_native

    system = load_system(args.system)
    check_out_file(args.out, overwrite=args.overwrite, flag="--out")
    workload = load_workload(args.input, system, fmt=args.format, strict=args.strict, limit=args.limit_jobs)
    write_native(args.out, workload, system)
    print(f"{len(workload.jobs):,} jobs written to {args.out} ({len(workload.rejected):,} rejected while "
          f"reading, {len(workload.skipped):,} malformed lines skipped)")
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    from ..system import load_system
    from ..workloads import write_native
    from ..workloads.generator import generate_eurora

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
    from ..api import catalogue

    print(catalogue())
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    from ..system import load_system
    from ..workloads import format_stats, load_workload, workload_stats

    system = load_system(args.system)
    workload = load_workload(args.path, system, fmt=args.format, strict=args.strict)
    print(format_stats(workload_stats(workload, system)))
    return 0


def add_tools(sub: Any) -> None:
    s = subcommand(sub, "systems", "list presets, show one, or print it as TOML")
    s.add_argument("name", nargs="?", help="preset name or TOML file (none: list the presets)")
    s.add_argument("--toml", action="store_true", help="print the system as a TOML file to edit")
    s.set_defaults(func=cmd_systems)

    s = subcommand(sub, "convert", "write any supported trace in the native CSV format")
    s.add_argument("input", help="SWF, Alibaba pod CSV or native CSV (plain or .gz)")
    s.add_argument("--system", required=True, help="preset name or TOML file the trace is read onto")
    s.add_argument("--out", required=True, help="native CSV file to write (.gz: compressed)")
    s.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    s.add_argument("--format", default="auto", choices=["auto", "swf", "alibaba", "native"], help=FORMAT_HELP)
    s.add_argument("--limit-jobs", type=int, default=None, help="keep only the first N jobs")
    s.add_argument("--strict", action="store_true", help=STRICT_HELP)
    s.set_defaults(func=cmd_convert)

    s = subcommand(sub, "generate", "write a generated workload in the native CSV format")
    s.add_argument("kind", choices=["eurora"], help="generator (eurora: the 2014 paper's Eurora-like jobs)")
    s.add_argument("--jobs", type=int, required=True, help="number of jobs")
    s.add_argument("--seed", type=int, default=0, help="generator seed")
    s.add_argument("--mix", default="eurora", choices=["eurora", "gpu-contended"],
                   help="job mix (gpu-contended: GPUs offered at 0.9, GPU units of 4-12 cores)")
    s.add_argument("--out", required=True, help="native CSV file to write (.gz: compressed)")
    s.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    s.set_defaults(func=cmd_generate)

    s = subcommand(sub, "dispatchers", "list dispatchers, their options, and the predictors")
    s.set_defaults(func=cmd_dispatchers)

    s = subcommand(sub, "inspect", "workload statistics")
    s.add_argument("path", help="SWF, Alibaba pod CSV or native CSV (plain or .gz)")
    s.add_argument("--system", default="eurora", help="system the trace is read onto")
    s.add_argument("--format", default="auto", choices=["auto", "swf", "alibaba", "native"], help=FORMAT_HELP)
    s.add_argument("--strict", action="store_true", help=STRICT_HELP)
    s.set_defaults(func=cmd_inspect)
