"""Reading rules every trace reader shares: whole-file text (plain or gzip), the first line for
format detection, request mapping onto a system's types, the default walltime rule, submit order,
header and limit checks, and strict/lenient handling of bad lines."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Mapping
from dataclasses import replace

from ..errors import InputError
from ..job import Job
from ..system import System

#: The largest time (seconds), count or amount a trace may hold: 2^40, about 35,000 years. Sums
#: over millions of jobs of such values stay exact in 64-bit integers (metrics, CP-SAT domains);
#: anything larger is a corrupt field, rejected at its line like any other malformed value.
MAX_VALUE = 1 << 40


def above_max(value: int) -> str:
    return f"{value} is above the largest accepted value, 2^40 = {MAX_VALUE:,}"


WALLTIME_RULE = (
    "jobs without a requested time keep walltime empty; their default_walltime is the largest "
    "run time of their queue in the trace (the queue's default wall-time, as in CP'19)"
)


def read_text(path: str) -> str:
    """The whole file as text; gzip when the name ends with `.gz`. Bad bytes become U+FFFD so
    they surface as a field error on their line rather than as a decoding crash."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        if path.lower().endswith(".gz"):
            data = gzip.decompress(data)
    except FileNotFoundError:
        raise InputError(path, None, None, "no such file") from None
    except IsADirectoryError:
        raise InputError(path, None, None, "is a directory, expected a workload file") from None
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(path, None, None, f"cannot read: {exc}") from None
    return data.decode("utf-8", errors="replace")


def first_line(path: str) -> str:
    """The first line of a plain or gzip file (for format detection), without reading it all."""
    try:
        if path.lower().endswith(".gz"):
            with gzip.open(path, "rb") as gz:
                head = gz.readline(4096)
        else:
            with open(path, "rb") as fh:
                head = fh.readline(4096)
        return head.decode("utf-8", errors="replace").strip()
    except FileNotFoundError:
        raise InputError(path, None, None, "no such file") from None
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(path, None, None, f"cannot read: {exc}") from None




class RequestMapper:
    """Turns named per-unit demands into a request tuple aligned with `system.types`.

    A non-zero demand of a type the system lacks cannot be served: `map` returns the rejection
    reason instead of a tuple. Types the demand omits are 0. Tuples are shared between jobs.
    """

    def __init__(self, system: System) -> None:
        self.system = system
        self.index = {t: k for k, t in enumerate(system.types)}
        self._cache: dict[tuple[tuple[str, int], ...], tuple[int, ...] | str] = {}

    def map(self, demands: Mapping[str, int]) -> tuple[int, ...] | str:
        key = tuple(demands.items())
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        req = [0] * len(self.system.types)
        out: tuple[int, ...] | str
        missing = [t for t, a in demands.items() if a and t not in self.index]
        if missing:
            out = f"requests {', '.join(missing)}, which system {self.system.name} does not have"
        else:
            for t, a in demands.items():
                if t in self.index:
                    req[self.index[t]] = a
            out = tuple(req)
        self._cache[key] = out
        return out


def fill_default_walltime(jobs: list[Job], notes: dict[str, object]) -> list[Job]:
    """Give every job without a walltime the largest run time of its queue (all loaded jobs of the
    queue count); record the rule and the number of jobs it touched in notes["walltime_default"]."""
    missing = sum(1 for j in jobs if j.walltime is None)
    if not missing:
        return jobs
    longest: dict[str, int] = {}
    for j in jobs:
        if j.runtime > longest.get(j.queue, -1):
            longest[j.queue] = j.runtime
    out = [j if j.walltime is not None else replace(j, default_walltime=longest[j.queue]) for j in jobs]
    notes["walltime_default"] = {
        "rule": WALLTIME_RULE,
        "jobs": missing,
        "per_queue": {q: longest[q] for q in sorted(longest)},
    }
    return out


def sort_by_submit(jobs: list[Job]) -> None:
    """Stable sort by submit time (a no-op check for the usual, already sorted trace)."""
    if any(a.submit > b.submit for a, b in zip(jobs, jobs[1:])):
        jobs.sort(key=lambda j: j.submit)


def check_header(path: str, header: list[str], required: tuple[str, ...]) -> dict[str, int]:
    """Column name -> index; a missing or repeated required column is an error on line 1."""
    index: dict[str, int] = {}
    for i, name in enumerate(header):
        name = name.strip()
        if name in index:
            raise InputError(path, 1, name, "column appears twice in the header")
        index[name] = i
    for name in required:
        if name not in index:
            raise InputError(path, 1, name, f"missing column in the header (expected {', '.join(required)})")
    return index


def check_limit(limit: int | None) -> None:
    """`limit` keeps the first N jobs of a file: N must be at least 1."""
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be >= 1 (or None for all jobs), got {limit}")


def record_error(err: InputError, strict: bool, skipped: list[InputError]) -> None:
    """Strict mode raises the first bad line; the default mode collects it and goes on."""
    if strict:
        raise err
    skipped.append(err)
