"""What `cpdispatch slurm status` shows: the driver writes `status.json` in its state folder at
every round (atomically), so the status works while the driver runs, after it died, and without
reading Slurm: the last rounds, each job not started with why, and the lease."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from ..errors import CpdispatchError
from .failsafe import read_lease

STATUS = "status.json"
KEEP_ROUNDS = 20


def write_status(state_dir: Path, status: dict[str, Any]) -> None:
    path = state_dir / STATUS
    tmp = path.with_name(f".{STATUS}.{os.getpid()}")
    tmp.write_text(json.dumps(status, separators=(",", ":")) + "\n")
    os.replace(tmp, path)


def read_status(state_dir: Path) -> dict[str, Any]:
    path = state_dir / STATUS
    try:
        status: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        raise CpdispatchError(f"--state-dir {state_dir}: no {STATUS} (no driver has completed a round with this "
                              "state folder)") from None
    except (OSError, ValueError) as exc:
        raise CpdispatchError(f"{path}: unreadable ({exc})") from None
    return status


def _when(t: float, now: float) -> str:
    return f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(t))} ({now - t:.0f} s ago)"


def format_status(status: dict[str, Any], now: float | None = None) -> str:
    """The text `slurm status` prints."""
    now = time.time() if now is None else now
    lines = [f"driver: {status['dispatcher']} with {status['predictor']} (pid {status['pid']}"
             f"{', shadow' if status.get('shadow') else ''}), round {status['round']} at {_when(status['t'], now)}"]
    fs = status.get("failsafe")
    if fs:
        lease = read_lease(Path(fs["file"]))
        if lease is None:
            state = "missing or unreadable: new jobs are held"
        elif lease.mode == "closed":
            state = f"renewed {_when(lease.at, now)}; closed: new jobs are held while no driver runs"
        elif lease.fresh(now):
            state = f"renewed {_when(lease.at, now)}; fresh: new jobs wait for the driver"
        else:
            state = f"renewed {_when(lease.at, now)}; STALE: Slurm's own scheduler runs the jobs"
        lines.append(f"lease ({fs['mode']}, {fs['seconds']} s, {fs['file']}): {state}")
    else:
        lines.append("lease: none written (shadow, or a driver without a fail-safe)")
    lines.append(f"{'round':>7} {'time':>9} {'queued':>7} {'running':>8} {'started':>8} {'read ms':>8} "
                 f"{'decide ms':>10} {'apply ms':>9}")
    for r in status["rounds"][-10:]:
        lines.append(f"{r['round']:>7} {time.strftime('%H:%M:%S', time.localtime(r['time'])):>9} {r['queued']:>7} "
                     f"{r['running']:>8} {r['started']:>8} {r['read_ms']:>8.0f} {r['decide_ms']:>10.0f} "
                     f"{r['apply_ms']:>9.0f}")
    waiting = status["waiting"]
    lines.append(f"jobs not started: {len(waiting)}")
    lines += [f"  {w['job']:>12}  {w['why']}" for w in waiting[:50]]
    if len(waiting) > 50:
        lines.append(f"  ... and {len(waiting) - 50} more (in {STATUS})")
    return "\n".join(lines)
