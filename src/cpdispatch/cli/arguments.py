"""What every command of the command line shares: the KEY=VALUE options, the subcommand parser
that shows every default, and the help texts of the options several commands have."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from ..errors import CpdispatchError

FORMAT_HELP = "trace format (auto: from the suffix and the first line)"
OVERWRITE_HELP = "replace the results of an earlier run at the output location(s)"
STRICT_HELP = "stop at the first malformed line (default: skip it, warn, count it in summary.json)"


def parse_options(pairs: Sequence[str]) -> dict[str, str]:
    """`-o KEY=VALUE` pairs as a dict (a dash in a key reads as an underscore)."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CpdispatchError(f"dispatcher option '{pair}': expected KEY=VALUE")
        out[key.strip().replace("-", "_")] = value.strip()
    return out


def subcommand(sub: Any, name: str, help: str) -> argparse.ArgumentParser:
    """A subcommand whose --help shows every default."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name, help=help, description=help, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    return parser
