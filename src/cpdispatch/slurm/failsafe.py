"""What happens while the driver is down: a lease the driver renews every round, and the
`job_submit.lua` that reads it inside slurmctld, so the fail-safe needs no live process of ours.

The lease is one line, ``<epoch seconds> <lease seconds> <open|closed>``, in a file only root can
write (beside slurm.conf by default). At submission the lua:

- *open*, lease fresh: defers the job by a begin time ``now + lease`` and tags it
  ``cpdispatch:wait`` (with the user's own ``--begin``, if later, as ``cpdispatch:wait:<epoch>``).
  The driver pushes the begin time of the jobs it has not started yet every round; once nobody
  pushes, Slurm's own scheduler starts them (fail-open, inside Slurm).
- *open*, lease stale: plain submission (Slurm schedules it). A job submitted with ``--hold``
  stays held, untagged: its user's (only root can release it).
- *closed*, or no lease yet: holds the job (priority 0), tagged ``cpdispatch:held``; nothing
  starts until a driver releases it.

Users cannot modify their jobs (only root), nor write the lease, so they can neither fake a dead
driver nor a live one. Measured facts: `../shared/design/slurm-findings.md` (dead man's switch).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ..errors import CpdispatchError

WAIT_TAG = "cpdispatch:wait"
HELD_TAG = "cpdispatch:held"
MODES = ("open", "closed")
LEASE_NAME = "cpdispatch.lease"

JOB_SUBMIT_LUA = """-- cpdispatch: new jobs wait for the dispatcher while its lease is fresh
local LEASE_FILE = "{lease}"
local function lease()
   local f = io.open(LEASE_FILE, "r")
   if f == nil then return nil end
   local line = f:read("*l")
   f:close()
   if line == nil then return nil end
   local t, secs, mode = string.match(line, "^(%d+) (%d+) (%a+)")
   return tonumber(t), tonumber(secs), mode
end

function slurm_job_submit(job_desc, part_list, submit_uid)
   local t, secs, mode = lease()
   local now = os.time()
   if mode == "open" then
      if now - t > secs then return slurm.SUCCESS end          -- driver gone: Slurm schedules
      if job_desc.priority == 0 then return slurm.SUCCESS end  -- the user's --hold, kept
      local wanted = job_desc.begin_time
      if wanted ~= nil and wanted > now + secs then          -- the user's own --begin, kept
         job_desc.admin_comment = "{wait}:" .. wanted
      else
         job_desc.begin_time = now + secs
         job_desc.admin_comment = "{wait}"
      end
   else                                                        -- closed, or no driver yet
      job_desc.priority = 0
      job_desc.admin_comment = "{held}"
   end
   return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
   if modify_uid ~= 0 then return slurm.ERROR end            -- only root may release or re-pin
   return slurm.SUCCESS
end
"""


def job_submit_lua(lease_file: str | Path) -> str:
    """The plugin to install as slurm.conf's `job_submit.lua` (with `JobSubmitPlugins=lua`)."""
    text = str(lease_file)
    if '"' in text or "\\" in text or "\n" in text:
        raise CpdispatchError(f"lease file {text!r}: quotes, backslashes and newlines cannot go in a lua string")
    return JOB_SUBMIT_LUA.format(lease=text, wait=WAIT_TAG, held=HELD_TAG)


def default_lease_file(conf: str | None) -> Path:
    """Beside the cluster's slurm.conf, where slurmctld (which runs the lua) can read it."""
    path = conf or os.environ.get("SLURM_CONF") or "/etc/slurm/slurm.conf"
    return Path(path).parent / LEASE_NAME


@dataclass(frozen=True)
class Lease:
    at: int
    seconds: int
    mode: str

    def line(self) -> str:
        return f"{self.at} {self.seconds} {self.mode}\n"

    def age(self, now: float) -> float:
        return now - self.at

    def fresh(self, now: float) -> bool:
        return self.age(now) <= self.seconds


def read_lease(path: Path) -> Lease | None:
    """The lease as the lua reads it (None: no lease, or a line it would not understand)."""
    try:
        at, seconds, mode = path.read_text().split()[:3]
        return Lease(int(at), int(seconds), mode)
    except (OSError, ValueError):
        return None


def check_lease_file(path: Path) -> None:
    """The lease must be writable by the driver and by nobody else: a user who could write it
    could fake a dead driver (and escape dispatching) or a live one."""
    folder = path.parent
    if not folder.is_dir():
        raise CpdispatchError(f"lease file {path}: folder {folder} does not exist (give --lease-file)")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise CpdispatchError(f"lease file {path}: not writable by this user; run the driver as the account "
                              "that owns it (root or SlurmUser)")
    for p in (folder, path) if path.exists() else (folder,):
        mode = p.stat().st_mode
        if mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise CpdispatchError(f"lease file {path}: {p} is writable by other users, who could fake the "
                                  f"driver's lease; chmod go-w {p}")


def write_lease(path: Path, lease: Lease) -> None:
    """Atomically (the lua never reads half a line), readable by all, writable by the owner."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(lease.line())
    tmp.chmod(0o644)
    os.replace(tmp, path)


@dataclass(frozen=True)
class FailSafe:
    """The driver's side: which mode it announces, and for how long each renewal holds."""

    path: Path
    seconds: int = 10
    mode: str = "open"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise CpdispatchError(f"fail-safe mode {self.mode!r}: one of {', '.join(MODES)}")
        if self.seconds < 2:
            raise CpdispatchError(f"--lease {self.seconds}: at least 2 seconds")

    @property
    def open(self) -> bool:
        return self.mode == "open"

    def renew(self, now: float) -> None:
        write_lease(self.path, Lease(int(now), self.seconds, self.mode))
