"""The native workload CSV (the contract of the architecture page), and the reading rules every
reader shares: opening plain or gzip files, mapping named demands onto a system's types, and the
default wall-time of jobs whose trace gives none.

Columns: `job_id, submit, user, name, queue, units, walltime, runtime`, then `req_<type>` with the
per-unit amount of each type (`mem` in MB). Times are integer seconds from trace time 0; an unknown
walltime is empty. An optional `recorded_wait` column (written when some job has one) carries the
wait the real scheduler gave the job (SWF field 3, for the `recorded` baseline; empty or not a
whole number: unknown). Reading onto a system: a `req_<type>` column the system lacks rejects the
jobs that ask a non-zero amount of it; a system type the file lacks is 0. Columns are found by name.
"""

from __future__ import annotations

import csv
import gzip
import io
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import IO

from ..errors import InputError
from ..gcpause import no_gc
from ..job import Job, Rejection
from ..system import System
from .base import Workload

NATIVE_COLUMNS = ("job_id", "submit", "user", "name", "queue", "units", "walltime", "runtime")
RECORDED_WAIT = "recorded_wait"

WALLTIME_RULE = (
    "jobs without a requested time keep walltime empty; their default_walltime is the largest "
    "run time of their queue in the trace (the queue's default wall-time, as in CP'19)"
)


# ---------------------------------------------------------------- shared reading rules


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


# ---------------------------------------------------------------- native reader / writer


def _parse_int(path: str, line: int, column: str, text: str, minimum: int = 0) -> int:
    try:
        value = int(text)
    except ValueError:
        raise InputError(path, line, column, f"expected an integer, got {text!r}") from None
    if value < minimum:
        raise InputError(path, line, column, f"expected an integer >= {minimum}, got {value}")
    return value


def _row_error(path: str, line: int, row: list[str], width: int, col: dict[str, int]) -> InputError:
    """The first problem of a row that failed the fast path, naming its column."""
    if len(row) != width:
        return InputError(path, line, None, f"expected {width} fields, got {len(row)}")
    if not row[col["job_id"]].strip():
        return InputError(path, line, "job_id", "empty job id")
    try:
        for name in ("submit", "units", "walltime", "runtime", *(c for c in col if c.startswith("req_"))):
            text = row[col[name]]
            if name != "walltime" or text.strip():
                _parse_int(path, line, name, text, minimum=1 if name == "units" else 0)
    except InputError as err:
        return err
    return InputError(path, line, None, "malformed row")


def read_native(path: str, system: System, strict: bool = False, limit: int | None = None) -> Workload:
    """Read a native CSV onto `system` (see the module docstring for the mapping rules)."""
    check_limit(limit)
    text = read_text(path)
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if not header:
        raise InputError(path, 1, None, "empty file, expected the native header row")
    col = check_header(path, header, NATIVE_COLUMNS)
    req_names = [name[4:] for name in col if name.startswith("req_")]
    req_idx = [col[f"req_{t}"] for t in req_names]
    mapper = RequestMapper(system)
    requests: dict[tuple[int, ...], tuple[int, ...] | str] = {}
    zero = tuple(0 for _ in system.types)
    jobs: list[Job] = []
    rejected: list[Rejection] = []
    skipped: list[InputError] = []
    c_id, c_sub, c_user, c_name, c_queue, c_units, c_wall, c_run = (col[c] for c in NATIVE_COLUMNS)
    c_rec = col.get(RECORDED_WAIT)
    width = len(header)
    with no_gc():
        for row in reader:
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            try:
                if len(row) != width:
                    raise ValueError
                jid = row[c_id].strip()
                submit = int(row[c_sub])
                units = int(row[c_units])
                runtime = int(row[c_run])
                wall_s = row[c_wall]
                walltime = int(wall_s) if wall_s.strip() else None
                amounts = tuple([int(row[i]) for i in req_idx])
                if (
                    not jid or submit < 0 or units < 1 or runtime < 0 or (walltime is not None and walltime < 0)
                    or (amounts and min(amounts) < 0)
                ):
                    raise ValueError
            except ValueError:
                record_error(_row_error(path, reader.line_num, row, width, col), strict, skipped)
                continue
            req = requests.get(amounts)
            if req is None:
                req = requests[amounts] = mapper.map(dict(zip(req_names, amounts)))
            job = Job(
                jid, submit, units, req if isinstance(req, tuple) else zero, walltime, runtime,
                row[c_user], row[c_name], row[c_queue], reader.line_num,
                recorded_wait=int(row[c_rec]) if c_rec is not None and row[c_rec].strip().isdigit() else None,
            )
            if isinstance(req, str):
                rejected.append(Rejection(job, req))
            else:
                jobs.append(job)
            if limit is not None and len(jobs) + len(rejected) >= limit:
                break
    notes: dict[str, object] = {"format": "native"}
    sort_by_submit(jobs)
    jobs = fill_default_walltime(jobs, notes)
    return Workload(source=path, jobs=jobs, rejected=rejected, skipped=skipped, notes=notes)


@contextmanager
def open_write(path: str) -> Iterator[IO[str]]:
    """A text file for writing; gzip (with a fixed timestamp, so output is byte-reproducible)
    when the name ends with `.gz`."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    if path.lower().endswith(".gz"):
        with (
            open(path, "wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz,
            io.TextIOWrapper(gz, encoding="utf-8", newline="") as fh,
        ):
            yield fh
    else:
        with open(path, "w", encoding="utf-8", newline="") as fh:
            yield fh


def write_native(path: str, workload: Workload, system: System) -> int:
    """Write the runnable jobs of `workload` (their `req` aligned with `system.types`) as native
    CSV; returns the number of rows. Rejected jobs and skipped lines are not written."""
    width = len(system.types)
    bad = next((j for j in workload.jobs if len(j.req) != width), None)
    if bad is not None:
        raise ValueError(f"job {bad.id} has {len(bad.req)} request amounts, system {system.name} has {width} types")
    with open_write(path) as fh:
        w = csv.writer(fh, lineterminator="\n")
        recorded = any(j.recorded_wait is not None for j in workload.jobs)  # the column only if it says something
        w.writerow([*NATIVE_COLUMNS, *(f"req_{t}" for t in system.types), *([RECORDED_WAIT] if recorded else [])])
        for j in workload.jobs:
            row = [j.id, j.submit, j.user, j.name, j.queue, j.units, "" if j.walltime is None else j.walltime,
                   j.runtime, *j.req]
            if recorded:
                row.append("" if j.recorded_wait is None else j.recorded_wait)
            w.writerow(row)
    return len(workload.jobs)
