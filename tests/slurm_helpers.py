"""A real local Slurm cluster for a test module (skipped, with the reason, where one cannot run)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from cpdispatch.errors import CpdispatchError
from cpdispatch.slurm import local_cluster
from cpdispatch.slurm.failsafe import Lease, default_lease_file, write_lease
from cpdispatch.slurm.hostlist import expand

from .test_cli import cli


@contextmanager
def running_cluster(nodes: int = 4, gpu_nodes: int = 2, accounts: tuple[str, ...] = ()) -> Iterator[dict[str, str]]:
    """The environment that talks to a fresh cluster (n1.. with GPUs first; with `accounts`,
    `--account` values, also MariaDB and slurmdbd); stopped after."""
    if os.geteuid() != 0:
        pytest.skip("a local Slurm cluster needs root (its daemons run as root)")
    try:
        local_cluster.ensure_packages(with_accounting=bool(accounts))
    except CpdispatchError as exc:
        pytest.skip(f"Slurm cannot be installed here: {exc}")
    base = Path(tempfile.mkdtemp(prefix="cpdispatch-test-slurm-"))  # munged needs a path all can traverse
    code, out, err = cli("slurm", "local-cluster", "start", "--nodes", str(nodes), "--gpu-nodes", str(gpu_nodes),
                         "--dir", str(base), *(x for a in accounts for x in ("--account", a)))
    assert code == 0, err
    conf = out.splitlines()[0].removeprefix("export SLURM_CONF=")
    env = {**os.environ, "SLURM_CONF": conf}
    try:
        yield env
    finally:
        subprocess.run(["scancel", "--user=root"], env=env, check=False)
        subprocess.run(["scancel", "--user=nobody"], env=env, check=False)
        code, out, err = cli("slurm", "local-cluster", "stop", "--conf", conf)
        daemons = nodes + 2 + (2 if accounts else 0)
        assert code == 0 and f"stopped {daemons} daemons" in out and "its folder is kept" in out, err
        shutil.rmtree(base, ignore_errors=True)


def run(env: dict[str, str], *cmd: str, user: str | None = None) -> subprocess.CompletedProcess[str]:
    prefix = ["runuser", "-u", user, "--"] if user else []
    return subprocess.run([*prefix, *cmd], env=env, capture_output=True, text=True, check=False)


def jobs(env: dict[str, str]) -> list[dict[str, Any]]:
    return list(json.loads(run(env, "squeue", "--json").stdout)["jobs"])


def job(env: dict[str, str], job_id: str) -> dict[str, Any]:
    return next(j for j in jobs(env) if str(j["job_id"]) == job_id)


def wait_for(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {timeout:g} s")
        time.sleep(0.2)


def completions(env: dict[str, str]) -> list[dict[str, Any]]:
    """The cluster's job completion log: one dict per finished job (JobId, JobState, nodes...)."""
    log = Path(env["SLURM_CONF"]).parent.parent / "log" / "jobcomp.log"
    out = []
    for line in log.read_text().splitlines() if log.exists() else []:
        rec: dict[str, Any] = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
        rec["nodes"] = expand(rec.get("NodeList"))
        out.append(rec)
    return out


def lease(env: dict[str, str], mode: str, seconds: int = 3600) -> Path:
    """Write the cluster's lease as a driver in `mode` would (closed: new jobs are held, whatever
    the tests before left); returns its path."""
    path = default_lease_file(env["SLURM_CONF"])
    write_lease(path, Lease(int(time.time()), seconds, mode))
    return path
