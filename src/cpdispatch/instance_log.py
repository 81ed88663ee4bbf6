"""The instance log: every dispatcher call of a run saved to a file, and read back as snapshots
(PCP'20 paper, Section 5.3; `instance_replay` replays them with other dispatchers).

Different dispatchers drive a simulation into different states, so model sizes and solve times
only compare on the *same* instances. A run with `--record-instances FILE.jsonl[.gz]` saves each
snapshot here; `instance_replay.compare` replays them with several dispatchers.

File format (JSON lines, gzip when the name ends in .gz). Line 1 is a header::

    {"kind": "system", "format": 1, "toml": "...", "types": [...], "nodes": N,
     "queued_fields": [...], "running_fields": [...]}

then one line per dispatcher call, self-contained (any line can be read alone)::

    {"t": time, "q": [queued rows], "r": [running rows], "free": [free total per type],
     "d": {"starts": [[job id, [node, ...]], ...], "status": s, "wall_ms": ms,
           "variables": v, "constraints": c, "objective": o}}

Rows are arrays in the order the header names. An instance holds only what a dispatcher may see:
no real run time (loaded jobs get runtime 0; `estimate` is stored so `Job.estimate` is kept).
The free array is not stored but derived on load (capacity minus running usage); `free` holds
its per-type totals as a check. `d` is the decision taken in the run, for reference.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar, cast

import numpy as np

from .errors import CpdispatchError, InputError
from .job import Job
from .outputs_safety import replacing
from .snapshot import Allocation, Decision, QueuedJob, RunningJob, Snapshot, Start
from .system import System, parse_system

T = TypeVar("T")

#: Format 2 adds `one_per_node` and `weight` to queued rows; format 1 files are still read.
FORMAT = 2
JOB_FIELDS = ("id", "submit", "units", "req", "walltime", "estimate", "user", "name", "queue")
QUEUED_FIELDS = (*JOB_FIELDS, "predicted", "one_per_node", "weight")
QUEUED_FIELDS_1 = QUEUED_FIELDS[:-2]
RUNNING_FIELDS = (*JOB_FIELDS, "start", "predicted", "nodes")


def _open(path: str | Path, mode: str) -> IO[str]:
    if str(path).endswith(".gz"):
        # level 6: 1.7x smaller than level 3 on these files for ~10 us more per line; 9 is slower still
        return cast(IO[str], gzip.open(path, mode + "t", encoding="utf-8", compresslevel=6))
    return open(path, mode, encoding="utf-8")


def _plain(o: object) -> Any:
    """numpy scalars (e.g. node indices a dispatcher built with numpy) as Python numbers."""
    if isinstance(o, np.generic):
        return o.item()
    raise TypeError(f"not JSON serializable: {o!r}")


_dumps = json.JSONEncoder(separators=(",", ":"), default=_plain).encode  # one encoder: json.dumps builds one per call


def _queued_row(q: QueuedJob) -> str:
    j = q.job
    return _dumps([j.id, j.submit, j.units, j.req, j.walltime, j.estimate, j.user, j.name, j.queue, q.predicted,
                   int(j.one_per_node), q.weight])


def _running_row(r: RunningJob) -> str:
    j = r.job
    return _dumps([j.id, j.submit, j.units, j.req, j.walltime, j.estimate, j.user, j.name, j.queue,
                   r.start, r.predicted, r.alloc.per_unit()])


def _rows(items: Iterable[Any], cache: dict[str, tuple[object, str]], make: Callable[[Any], str]
          ) -> tuple[str, dict[str, tuple[object, str]]]:
    """The JSON rows of `items` joined, and the cache for the next call (this call's items only)."""
    new: dict[str, tuple[object, str]] = {}
    parts: list[str] = []
    for it in items:
        hit = cache.get(it.job.id)
        if hit is None or hit[0] is not it:
            hit = (it, make(it))
        new[it.job.id] = hit
        parts.append(hit[1])
    return ",".join(parts), new


class InstanceRecorder:
    """A simulator hook (`on_decision`) that appends each instance to a file as it happens.

    Nothing accumulates (a run has hundreds of thousands of instances): only the JSON rows of the
    last snapshot's jobs are kept, to be reused while those jobs stay queued or running. The file
    is opened at once (a bad path fails before the run, not after it); the header is written with
    the first instance, since only then is the system known.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._writing = ExitStack()  # the file appears, whole, when closed
        tmp = self._writing.enter_context(replacing(self.path))
        try:
            self._file: IO[str] | None = _open(tmp, "w")
        except OSError as exc:
            raise CpdispatchError(f"{self.path}: cannot write instances: {exc.strerror}") from None
        self._system: System | None = None
        # JSON row of each job of the last snapshot, keyed by id, reused while the QueuedJob /
        # RunningJob object is the same (jobs stay queued or running over many calls).
        self._queued: dict[str, tuple[object, str]] = {}
        self._running: dict[str, tuple[object, str]] = {}
        self.count = 0

    def record(self, snapshot: Snapshot, decision: Decision, wall_s: float) -> None:
        f = self._file
        if f is None:
            raise CpdispatchError(f"{self.path}: recorder already closed")
        if self._system is None:
            self._system = snapshot.system
            f.write(json.dumps(_header(snapshot.system)) + "\n")
        queued, self._queued = _rows(snapshot.queued, self._queued, _queued_row)
        running, self._running = _rows(snapshot.running, self._running, _running_row)
        d = decision
        tail = {
            "free": snapshot.free.sum(axis=0).tolist(),
            "d": {
                "starts": [[s.job_id, s.nodes] for s in d.starts],
                "status": d.status,
                "wall_ms": round(wall_s * 1e3, 3),
                "variables": d.variables,
                "constraints": d.constraints,
                "objective": d.objective,
            },
        }
        f.write(f'{{"t":{int(snapshot.time)},"q":[{queued}],"r":[{running}],{_dumps(tail)[1:]}\n')
        self.count += 1

    def close(self) -> None:
        """Complete the file (also after an interruption: the instances so far, well-formed)."""
        if self._file is not None:
            self._file.close()
            self._file = None
            self._writing.close()

    def __enter__(self) -> InstanceRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _header(system: System) -> dict[str, Any]:
    return {
        "kind": "system",
        "format": FORMAT,
        "toml": system.to_toml(),
        "types": list(system.types),
        "nodes": system.n_nodes,
        "queued_fields": list(QUEUED_FIELDS),
        "running_fields": list(RUNNING_FIELDS),
    }


# -- loading ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedInstance:
    """One saved instance: `index` (0-based, file order), its file `line`, the snapshot, and the
    decision taken in the recorded run."""

    index: int
    line: int
    snapshot: Snapshot
    starts: tuple[Start, ...]
    status: str
    wall_ms: float | None
    variables: int | None
    constraints: int | None
    objective: float | None


class _Bad(Exception):
    """A malformed field; turned into an InputError naming file and line."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _int(v: object, field: str, optional: bool = False) -> Any:
    if (v is None and optional) or (isinstance(v, int) and not isinstance(v, bool)):
        return v
    raise _Bad(field, f"expected an integer, got {v!r}")


def _str(v: object, field: str) -> str:
    if isinstance(v, str):
        return v
    raise _Bad(field, f"expected a string, got {v!r}")


def _job(row: list[Any], where: str, n_types: int) -> Job:
    jid = _str(row[0], f"{where}.id")
    req = row[3]
    if not isinstance(req, list) or len(req) != n_types:
        raise _Bad(f"{where}.req", f"expected {n_types} amounts, got {req!r}")
    walltime = _int(row[4], f"{where}.walltime", optional=True)
    return Job(
        id=jid,
        submit=_int(row[1], f"{where}.submit"),
        units=_int(row[2], f"{where}.units"),
        req=tuple(_int(a, f"{where}.req") for a in req),
        walltime=walltime,
        runtime=0,  # never seen by a dispatcher, never stored
        user=_str(row[6], f"{where}.user"),
        name=_str(row[7], f"{where}.name"),
        queue=_str(row[8], f"{where}.queue"),
        default_walltime=None if walltime is not None else _int(row[5], f"{where}.estimate"),
    )


def _reuse(rows: list[Any], field: str, previous: dict[str, tuple[list[Any], T]],
           make: Callable[[Any, str], T]) -> dict[str, tuple[list[Any], T]]:
    """Each row's (row, object) by job id: the previous line's object when its row is identical,
    else a newly checked one (`make(row, where)`)."""
    out: dict[str, tuple[list[Any], T]] = {}
    for i, row in enumerate(rows):
        hit = previous.get(row[0]) if type(row) is list and type(row[0]) is str else None
        if hit is None or hit[0] != row:
            hit = (row, make(row, f"{field}[{i}]"))
        out[row[0]] = hit
    return out


class _Reader:
    """Turns instance lines into snapshots. Rows identical to the previous line's (a job stays
    queued or running over many calls) reuse its checked QueuedJob / RunningJob objects, and the
    used amounts are updated only for the running jobs that changed."""

    def __init__(self, system: System, queued_width: int = len(QUEUED_FIELDS)) -> None:
        self.system = system
        self.queued_width = queued_width
        self.queued: dict[str, tuple[list[Any], QueuedJob]] = {}
        self.running: dict[str, tuple[list[Any], RunningJob]] = {}
        self.used = np.zeros_like(system.capacity, dtype=np.int64)  # by self.running

    def _use(self, r: RunningJob, sign: int) -> None:
        self.used[list(r.alloc.nodes)] += sign * np.outer(r.alloc.counts, r.job.req)

    def snapshot(self, rec: dict[str, Any]) -> Snapshot:
        system = self.system
        queued = _reuse(rec["q"], "q", self.queued, self._queued)
        running = _reuse(rec["r"], "r", self.running, self._running)
        if len(queued) != len(rec["q"]) or len(running) != len(rec["r"]):
            raise _Bad("q", "a job id appears twice")
        for jid, (_, r) in self.running.items():  # usage follows the few jobs that ended or started
            if running.get(jid, (None, None))[1] is not r:
                self._use(r, -1)
        for jid, (_, r) in running.items():
            if self.running.get(jid, (None, None))[1] is not r:
                self._use(r, 1)
        self.queued, self.running = queued, running
        free = system.capacity - self.used
        if (free < 0).any():
            node, k = (int(x) for x in np.argwhere(free < 0)[0])
            raise _Bad("r", f"running jobs use more {system.types[k]} than node {system.node_names[node]} has")
        if free.sum(axis=0).tolist() != rec["free"]:
            raise _Bad("free", f"free totals {rec['free']} differ from capacity minus running jobs "
                               f"{free.sum(axis=0).tolist()} (nodes out of service are not recorded)")
        free.setflags(write=False)
        return Snapshot(_int(rec["t"], "t"), system, tuple(q for _, q in queued.values()),
                        tuple(r for _, r in running.values()), free)

    def _queued(self, row: Any, where: str) -> QueuedJob:
        if not isinstance(row, list) or len(row) != self.queued_width:
            raise _Bad(where, f"expected an array of {self.queued_width} fields")
        job = _job(row, where, len(self.system.types))
        if len(row) == len(QUEUED_FIELDS_1):
            return QueuedJob(job, _int(row[9], f"{where}.predicted"))
        if row[10] not in (0, 1):
            raise _Bad(f"{where}.one_per_node", f"expected 0 or 1, got {row[10]!r}")
        weight = row[11]
        if type(weight) not in (int, float) or not 0 <= weight <= 1:
            raise _Bad(f"{where}.weight", f"expected a number in [0, 1], got {weight!r}")
        if row[10]:
            job = dataclasses.replace(job, one_per_node=True)
        return QueuedJob(job, _int(row[9], f"{where}.predicted"), float(weight))

    def _running(self, row: Any, where: str) -> RunningJob:
        if not isinstance(row, list) or len(row) != len(RUNNING_FIELDS):
            raise _Bad(where, f"expected an array of {len(RUNNING_FIELDS)} fields")
        job = _job(row, where, len(self.system.types))
        nodes = row[11]
        if not isinstance(nodes, list) or len(nodes) != job.units:
            raise _Bad(f"{where}.nodes", f"expected {job.units} node indices, got {nodes!r}")
        n_nodes = self.system.n_nodes
        for n in nodes:
            if type(n) is not int or not 0 <= n < n_nodes:
                raise _Bad(f"{where}.nodes", f"node index {n!r} out of range 0..{n_nodes - 1}")
        return RunningJob(job, _int(row[9], f"{where}.start"), _int(row[10], f"{where}.predicted"),
                          Allocation.of_units(nodes))

    def instance(self, text: str, path: str, lineno: int, index: int) -> RecordedInstance:
        try:
            rec = json.loads(text)
            if not isinstance(rec, dict):
                raise _Bad("", "expected a JSON object")
            snap = self.snapshot(rec)
            d = rec["d"]
            starts = tuple(Start(_str(s[0], "d.starts"), tuple(s[1])) for s in d["starts"])
            return RecordedInstance(index, lineno, snap, starts, d["status"], d.get("wall_ms"),
                                    d.get("variables"), d.get("constraints"), d.get("objective"))
        except _Bad as exc:
            raise InputError(path, lineno, exc.field or None, str(exc)) from None
        except KeyError as exc:
            raise InputError(path, lineno, str(exc.args[0]), "missing") from None
        except json.JSONDecodeError as exc:
            raise InputError(path, lineno, None, f"invalid JSON: {exc}") from None
        except (IndexError, TypeError, ValueError) as exc:
            raise InputError(path, lineno, None, f"malformed instance: {exc}") from None


def _parse_header(text: str, path: str) -> _Reader:
    try:
        head = json.loads(text)
    except ValueError as exc:
        raise InputError(path, 1, None, f"not a JSON header: {exc}") from None
    if not isinstance(head, dict) or head.get("kind") != "system":
        raise InputError(path, 1, "kind", 'expected a header record {"kind": "system", ...}')
    if head.get("format") not in (1, FORMAT):
        raise InputError(path, 1, "format", f"unsupported format {head.get('format')!r} (this reads 1 and {FORMAT})")
    queued = QUEUED_FIELDS if head["format"] == FORMAT else QUEUED_FIELDS_1
    for key, want in (("queued_fields", queued), ("running_fields", RUNNING_FIELDS)):
        if head.get(key) != list(want):
            raise InputError(path, 1, key, f"expected {list(want)}")
    toml = head.get("toml")
    if not isinstance(toml, str):
        raise InputError(path, 1, "toml", "expected the system as a TOML string")
    system = parse_system(toml, f"{path}:1 (system)")
    if head.get("types") != list(system.types) or head.get("nodes") != system.n_nodes:
        raise InputError(path, 1, "types", "types/nodes do not match the embedded system")
    return _Reader(system, len(queued))


def iter_recorded(path: str | Path) -> Iterator[RecordedInstance]:
    """Stream the saved instances of `path` with the decision of the recorded run."""
    path = str(path)
    lineno = 0
    try:
        with _open(path, "r") as f:
            reader: _Reader | None = None
            index = 0
            for lineno, text in enumerate(f, 1):
                if reader is None:
                    reader = _parse_header(text, path)
                    continue
                if not text.strip():
                    continue
                yield reader.instance(text, path, lineno, index)
                index += 1
    except FileNotFoundError:
        raise InputError(path, None, None, "no such instances file") from None
    except (EOFError, gzip.BadGzipFile, UnicodeDecodeError) as exc:
        raise InputError(path, lineno + 1, None, f"unreadable (truncated or corrupt file?): {exc}") from None


def load_instances(path: str | Path) -> Iterator[Snapshot]:
    """Stream the saved snapshots of `path`, ready for any `Dispatcher.decide`."""
    for rec in iter_recorded(path):
        yield rec.snapshot
