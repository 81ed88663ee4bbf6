"""Where results go, checked before any work, and written so that no reader sees half a file.

Runs take hours: an output location that cannot be used must be refused before the first
simulated second, and an interrupted write must leave the previous file (or none), never a
truncated one. Every writer goes through `replacing`: it writes a temporary name beside the
target and renames it over the target when complete (atomic on one file system).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import CpdispatchError

#: What a cpdispatch run writes into an output folder (and may remove with --overwrite).
RUN_FILES = ("schedule.csv", "decisions.csv", "summary.json", "utilization.png", "queue.png",
             "schedule.parquet", "decisions.parquet")
#: Besides, `demo` writes its workload, comparison plots and one run folder per dispatcher.
DEMO_FILES = ("eurora-workload.csv",)
COMPARE_FILES = ("comparison.csv", "comparison_summary.txt")


@contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """A temporary path beside `path` (same suffix, so formats guessed from it still work),
    renamed to `path` when the block ends normally and removed when it fails."""
    target = Path(path)
    tmp = target.with_name(f".{target.stem}.partial-{os.getpid()}{target.suffix}")
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _ours(entry: Path) -> bool:
    """A file or folder a cpdispatch run wrote (a run folder: one holding a summary.json)."""
    if entry.is_dir():
        return all(_ours(e) for e in entry.iterdir()) and (entry / "summary.json").exists()
    name = entry.name
    return (name in RUN_FILES or name in DEMO_FILES or name in COMPARE_FILES or name == "index.html"
            or name.endswith((".png", ".svg"))
            or (name.startswith(".") and ".partial-" in name))


def check_out_dir(out: str | Path, *, overwrite: bool, flag: str = "--out") -> Path:
    """Refuse an output folder that cannot be used, before any work: an existing file, a path
    under a file, an unwritable folder, or one already holding results (unless `overwrite`, then
    cpdispatch's own files are removed first; a folder with other files is never emptied)."""
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise CpdispatchError(f"{flag} {out}: exists and is not a folder")
    parent = path
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise CpdispatchError(f"{flag} {out}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CpdispatchError(f"{flag} {out}: {parent} is not writable")
    if path.is_dir():
        entries = sorted(path.iterdir())
        if entries and not overwrite:
            raise CpdispatchError(f"{flag} {out}: not empty ({entries[0].name}, ...); give --overwrite to "
                                  "replace earlier results, or another folder")
        foreign = [e.name for e in entries if not _ours(e)]
        if foreign:
            raise CpdispatchError(f"{flag} {out}: holds files cpdispatch did not write ({', '.join(foreign[:3])}); "
                                  "--overwrite only replaces cpdispatch's own results: choose another folder")
        for e in entries:
            shutil.rmtree(e) if e.is_dir() else e.unlink()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CpdispatchError(f"{flag} {out}: cannot create it ({exc.strerror})") from None
    return path


def check_out_file(out: str | Path, *, overwrite: bool, flag: str) -> Path:
    """An output file: its folder must be creatable and writable; an existing file is replaced
    only with `overwrite`."""
    path = Path(out)
    if path.is_dir():
        raise CpdispatchError(f"{flag} {out}: is a folder, not a file")
    if path.exists() and not overwrite:
        raise CpdispatchError(f"{flag} {out}: exists; give --overwrite to replace it")
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise CpdispatchError(f"{flag} {out}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise CpdispatchError(f"{flag} {out}: not writable")
    return path
