"""The driver's journal in `--state-dir`: every decision and every command, written (and flushed
to disk) before the command runs, then its result; and the run times of finished jobs, which
Slurm forgets after MinJobAge but the predictor must keep learning from across restarts."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import CpdispatchError
from ..job import Job


class Journal:
    """JSON lines, one object per event, each with the wall-clock time `t`. With `max_bytes`, a
    journal that reaches it is rotated (`path` -> `path.1` -> ... -> `path.<keep>`, the oldest
    dropped), so that a driver running for months keeps a bounded disk."""

    def __init__(self, path: Path, max_bytes: int = 0, keep: int = 4) -> None:
        self.path, self.max_bytes, self.keep = path, max_bytes, keep
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("a", encoding="utf-8")
        except OSError as exc:
            raise CpdispatchError(f"--state-dir {path.parent}: cannot write {path.name} ({exc.strerror})") from None

    def write(self, kind: str, **fields: Any) -> None:
        self._file.write(json.dumps({"t": round(time.time(), 3), "kind": kind, **fields}) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())
        if self.max_bytes and self._file.tell() >= self.max_bytes:
            self._rotate()

    def _rotate(self) -> None:
        self._file.close()
        for i in range(self.keep - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{i}")
            if older.exists():
                os.replace(older, self.path.with_name(f"{self.path.name}.{i + 1}"))
        os.replace(self.path, self.path.with_name(f"{self.path.name}.1"))
        self._file = self.path.open("a", encoding="utf-8")

    def close(self) -> None:
        self._file.close()


def read_journal(path: Path) -> Iterator[dict[str, Any]]:
    """The records of a journal; a last line cut by a crash is skipped."""
    if not path.exists():
        return
    with path.open(encoding="utf-8") as f:
        for line in f:
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue


def job_record(job: Job, runtime: int, end: int) -> dict[str, Any]:
    return {"job": {"id": job.id, "submit": job.submit, "units": job.units, "req": list(job.req),
                    "walltime": job.walltime, "user": job.user, "name": job.name, "queue": job.queue,
                    "default_walltime": job.default_walltime},
            "runtime": runtime, "end": end}


def job_from_record(rec: dict[str, Any]) -> tuple[Job, int, int]:
    j = rec["job"]
    job = Job(id=j["id"], submit=j["submit"], units=j["units"], req=tuple(j["req"]), walltime=j["walltime"],
              runtime=rec["runtime"], user=j["user"], name=j["name"], queue=j["queue"],
              default_walltime=j["default_walltime"])
    return job, int(rec["runtime"]), int(rec["end"])
