"""The Slurm commands the driver reads and acts with, through the CLI (22.05 has `--json` for
squeue and sinfo only; slurmrestd cannot pin jobs to nodes and PySlurm has no 22.05 release)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..errors import CpdispatchError
from .scontrol_jobs import read_jobs_text
from .state import SlurmJob, read_jobs


@dataclass(frozen=True)
class Outcome:
    """What one command did: exit status, its output, and how long it took."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class SlurmCommands:
    """Runs Slurm's client commands against the cluster `conf` names (default: $SLURM_CONF)."""

    def __init__(self, conf: str | None = None, timeout: float = 30.0) -> None:
        self.env = dict(os.environ)
        if conf:
            self.env["SLURM_CONF"] = conf
        self.timeout = timeout

    def run(self, *argv: str, stdin: str | None = None) -> Outcome:
        t0 = time.perf_counter()
        try:
            done = subprocess.run(argv, env=self.env, capture_output=True, text=True, check=False,
                                  timeout=self.timeout, input=stdin)
        except FileNotFoundError:
            raise CpdispatchError(f"{argv[0]}: not found; is the Slurm client installed?") from None
        except subprocess.TimeoutExpired:
            return Outcome(argv, 124, "", f"no answer in {self.timeout:g} s", time.perf_counter() - t0)
        return Outcome(argv, done.returncode, done.stdout, done.stderr.strip(), time.perf_counter() - t0)

    def _json(self, *argv: str) -> dict[str, Any]:
        out = self.run(*argv)
        if not out.ok:
            raise CpdispatchError(f"{' '.join(argv)} failed (exit {out.returncode}): {out.stderr[-300:]}")
        try:
            data: dict[str, Any] = json.loads(out.stdout)
        except json.JSONDecodeError as exc:
            raise CpdispatchError(f"{' '.join(argv)}: output is not JSON ({exc})") from None
        return data

    def jobs(self) -> list[SlurmJob]:
        """Every job Slurm still shows (finished ones for MinJobAge seconds), from `scontrol -d -o
        show job` (`scontrol_jobs`: 4 times faster than squeue's JSON at 2,800 jobs)."""
        out = self.run("scontrol", "-d", "-o", "show", "job")
        if not out.ok:
            raise CpdispatchError(f"scontrol show job failed (exit {out.returncode}): {out.stderr[-300:]}")
        return read_jobs_text(out.stdout)

    def jobs_json(self) -> list[SlurmJob]:
        """The same from `squeue --json` (the reference the text reader is checked against)."""
        return read_jobs(self._json("squeue", "--json")["jobs"])

    def nodes(self) -> list[dict[str, Any]]:
        return list(self._json("sinfo", "--json")["nodes"])

    def partitions(self) -> list[dict[str, str]]:
        """`scontrol -o show partition`, one dict of KEY=VALUE per partition."""
        out = self.run("scontrol", "-o", "show", "partition")
        if not out.ok:
            raise CpdispatchError(f"scontrol show partition failed (exit {out.returncode}): {out.stderr[-300:]}")
        return [dict(kv.split("=", 1) for kv in line.split() if "=" in kv) for line in out.stdout.splitlines()
                if line.strip()]

    def pin(self, pins: list[tuple[str, list[str]]], comment: str) -> Outcome:
        """Require exactly these nodes of each job (the complete set: Slurm adds nodes of its own
        choice to an incomplete one), make it eligible now (a job deferred by the fail-open lease)
        and tag the decision where only root can write. The release then starts it. One scontrol
        reads every update from its input (a process per job cost 30 ms each on a 256-node
        cluster); which updates took is read back with `required_nodes`."""
        return self.scontrol(f"update JobId={j} NodeList={','.join(n)} StartTime=now AdminComment={comment}"
                             for j, n in pins)

    def scontrol(self, lines: Iterable[str]) -> Outcome:
        """Several scontrol commands in one process (its exit status is non-zero if one failed)."""
        return self.run("scontrol", stdin="".join(f"{line}\n" for line in lines))

    def required_nodes(self) -> dict[str, str]:
        """Pending and running jobs' required nodes (a hostlist; "" for none), read cheaply (no
        JSON). Running ones too: a deferred job pinned with StartTime=now may start before the
        release, on its pinned nodes."""
        out = self.run("squeue", "-h", "-O", "JobID:|,ReqNodes:|")
        if not out.ok:
            raise CpdispatchError(f"squeue -O JobID,ReqNodes failed (exit {out.returncode}): {out.stderr[-300:]}")
        rows = (line.split("|") for line in out.stdout.splitlines())
        return {r[0].strip(): r[1].strip() for r in rows if len(r) >= 2}

    def defer(self, job_ids: list[str], seconds: int, comment: str | None = None, unpin: Iterable[str] = (),
              release: bool = False) -> Outcome:
        """Push the jobs' begin time to now + `seconds` (one update for the list: past it, Slurm
        starts them by itself), then drop the pins of `unpin` (a line each: Slurm refuses a list
        there) and, with `release`, release them. One scontrol process, which outlives a killed
        driver: no job is left half done, held under the fail-open tag (until a driver comes back)
        or eligible and unpinned before its deferral."""
        tag = f" AdminComment={comment}" if comment else ""
        lines = [f"update JobId={','.join(job_ids)} StartTime=now+{seconds}{tag}"]
        lines += [f"update JobId={j} NodeList=" for j in unpin]
        return self.scontrol([*lines, f"release {','.join(job_ids)}"] if release else lines)

    def tag(self, job_ids: list[str], comment: str) -> Outcome:
        return self.run("scontrol", "update", f"JobId={','.join(job_ids)}", f"AdminComment={comment}")

    def release(self, job_ids: list[str]) -> Outcome:
        return self.run("scontrol", "release", ",".join(job_ids))

    def hold(self, job_ids: list[str]) -> Outcome:
        return self.run("scontrol", "hold", ",".join(job_ids))
