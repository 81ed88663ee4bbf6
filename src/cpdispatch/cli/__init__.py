"""The `cpdispatch` command line: each command checks its arguments and output locations, builds
calls to the Python API (api.py) and prints; a signal stops a run gracefully (interrupt.py).

One module per family of commands, each with its `add` (its part of the parser) and its `cmd_*`
functions; this module holds the parser and `main`."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence

from .. import interrupt
from ..errors import CpdispatchError
from . import campaign, simulate, slurm, tools
from .simulate import run_simulation

DESCRIPTION = ("On-line HPC job dispatching with constraint programming: replay real traces with CP "
               "dispatchers (PCP'20, PCP'19, HCP'19, Eurora 2014) and baselines.")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="cpdispatch", description=DESCRIPTION, epilog="Usage, formats and presets: README.md of cpdispatch.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    for add in (simulate.add_simulate, tools.add_tools, simulate.add_demo, simulate.add_instances,
                campaign.add_campaign, slurm.add_slurm):
        add(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "limit_jobs", None) is not None and args.limit_jobs < 1:
        parser.error("--limit-jobs must be at least 1")
    if hasattr(args, "load_factor"):  # simulate and demo only: the others need not import the readers
        from ..workloads import LOAD_FACTOR_RANGE

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


__all__ = ["build_parser", "main", "run_simulation"]
