"""The native workload CSV (the contract of the architecture page).

Columns: `job_id, submit, user, name, queue, units, walltime, runtime`, then `req_<type>` with the
per-unit amount of each type (`mem` in MB). Times are integer seconds from trace time 0; an unknown
walltime is empty. An optional `recorded_wait` column (written when some job has one) carries the
wait the real scheduler gave the job (SWF field 3, for the `recorded` baseline; empty or not a
whole number: unknown). An optional `one_per_node` column (1: the job's units need distinct
nodes, as Slurm's `-N`; empty or 0: they may share one; written when some job has 1). Reading onto
a system: a `req_<type>` column the system lacks rejects the jobs that ask a non-zero amount of it;
a system type the file lacks is 0. Columns are found by name.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ..errors import InputError
from ..gcpause import no_gc
from ..job import Job, Rejection
from ..outputs_safety import replacing
from ..system import System
from .base import Workload
from .reading import (
    MAX_VALUE,
    RequestMapper,
    above_max,
    check_header,
    check_limit,
    fill_default_walltime,
    read_text,
    record_error,
    sort_by_submit,
)

NATIVE_COLUMNS = ("job_id", "submit", "user", "name", "queue", "units", "walltime", "runtime")
RECORDED_WAIT = "recorded_wait"
ONE_PER_NODE = "one_per_node"


def _parse_int(path: str, line: int, column: str, text: str, minimum: int = 0) -> int:
    try:
        value = int(text)
    except ValueError:
        raise InputError(path, line, column, f"expected an integer, got {text!r}") from None
    if value < minimum:
        raise InputError(path, line, column, f"expected an integer >= {minimum}, got {value}")
    if value > MAX_VALUE:
        raise InputError(path, line, column, above_max(value))
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
    if ONE_PER_NODE in col and row[col[ONE_PER_NODE]].strip() not in ("", "0", "1"):
        return InputError(path, line, ONE_PER_NODE, f"{row[col[ONE_PER_NODE]]!r} is not 0 or 1")
    return InputError(path, line, None, "malformed row")


class _Requests:
    """Request tuples per distinct row of `req_<type>` amounts, mapped onto the system once each
    (a str instead when the system cannot serve them: the rejection reason)."""

    def __init__(self, system: System, req_names: list[str]) -> None:
        self.mapper = RequestMapper(system)
        self.names = req_names
        self.zero = tuple(0 for _ in system.types)
        self.cache: dict[tuple[int, ...], tuple[int, ...] | str] = {}

    def get(self, amounts: tuple[int, ...]) -> tuple[int, ...] | str:
        req = self.cache.get(amounts)
        if req is None:
            req = self.cache[amounts] = self.mapper.map(dict(zip(self.names, amounts)))
        return req


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
    requests = _Requests(system, req_names)
    request, zero = requests.get, requests.zero
    jobs: list[Job] = []
    rejected: list[Rejection] = []
    skipped: list[InputError] = []
    c_id, c_sub, c_user, c_name, c_queue, c_units, c_wall, c_run = (col[c] for c in NATIVE_COLUMNS)
    c_rec, c_one = col.get(RECORDED_WAIT), col.get(ONE_PER_NODE)
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
                one = c_one is not None and row[c_one].strip() == "1"
                if (c_one is not None and not one and row[c_one].strip() not in ("", "0")) or (
                    not jid or submit < 0 or units < 1 or runtime < 0 or (walltime is not None and walltime < 0)
                    or (amounts and min(amounts) < 0)
                    or max(submit, units, runtime, walltime or 0, *amounts) > MAX_VALUE
                ):
                    raise ValueError
            except ValueError:
                record_error(_row_error(path, reader.line_num, row, width, col), strict, skipped)
                continue
            req = request(amounts)
            job = Job(
                jid, submit, units, req if isinstance(req, tuple) else zero, walltime, runtime,
                row[c_user], row[c_name], row[c_queue], reader.line_num,
                recorded_wait=int(row[c_rec]) if c_rec is not None and row[c_rec].strip().isdigit() else None,
                one_per_node=one,
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
            replacing(path) as tmp,
            open(tmp, "wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz,
            io.TextIOWrapper(gz, encoding="utf-8", newline="") as fh,
        ):
            yield fh
    else:
        with replacing(path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as fh:
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
        recorded = any(j.recorded_wait is not None for j in workload.jobs)  # the columns only if they say something
        spread = any(j.one_per_node for j in workload.jobs)
        w.writerow([*NATIVE_COLUMNS, *(f"req_{t}" for t in system.types), *([RECORDED_WAIT] if recorded else []),
                    *([ONE_PER_NODE] if spread else [])])
        for j in workload.jobs:
            row = [j.id, j.submit, j.user, j.name, j.queue, j.units, "" if j.walltime is None else j.walltime,
                   j.runtime, *j.req]
            if recorded:
                row.append("" if j.recorded_wait is None else j.recorded_wait)
            if spread:
                row.append(int(j.one_per_node))
            w.writerow(row)
    return len(workload.jobs)
