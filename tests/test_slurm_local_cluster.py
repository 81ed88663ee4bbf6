"""A real local Slurm cluster (`cpdispatch slurm local-cluster`): every job is held at submit,
only root pins and releases it, and it then runs on exactly the chosen node with its fake GPUs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cpdispatch.errors import CpdispatchError
from cpdispatch.slurm import local_cluster

from .test_cli import cli


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """4 nodes, n1 and n2 with 2 GPUs; the environment that talks to it."""
    if os.geteuid() != 0:
        pytest.skip("a local Slurm cluster needs root (its daemons run as root)")
    try:
        local_cluster.ensure_packages()
    except CpdispatchError as exc:
        pytest.skip(f"Slurm cannot be installed here: {exc}")
    base = Path(tempfile.mkdtemp(prefix="cpdispatch-test-slurm-"))  # munged needs a path all can traverse
    code, out, err = cli("slurm", "local-cluster", "start", "--nodes", "4", "--gpu-nodes", "2", "--dir", str(base))
    assert code == 0, err
    conf = out.splitlines()[0].removeprefix("export SLURM_CONF=")
    env = {**os.environ, "SLURM_CONF": conf}
    yield env
    subprocess.run(["scancel", "--user=root"], env=env, check=False)
    subprocess.run(["scancel", "--user=nobody"], env=env, check=False)
    code, out, err = cli("slurm", "local-cluster", "stop", "--conf", conf)
    assert code == 0 and "stopped 6 daemons" in out, err
    shutil.rmtree(base, ignore_errors=True)


def _run(env: dict[str, str], *cmd: str, user: str | None = None) -> subprocess.CompletedProcess[str]:
    prefix = ["runuser", "-u", user, "--"] if user else []
    return subprocess.run([*prefix, *cmd], env=env, capture_output=True, text=True, check=False)


def _job(env: dict[str, str], job_id: str) -> dict[str, object]:
    jobs = json.loads(_run(env, "squeue", "--json").stdout)["jobs"]
    return next(j for j in jobs if str(j["job_id"]) == job_id)


def test_nodes_are_what_was_asked(cluster: dict[str, str]) -> None:
    nodes = {n["name"]: n for n in json.loads(_run(cluster, "sinfo", "--json").stdout)["nodes"]}
    assert sorted(nodes) == ["n1", "n2", "n3", "n4"]
    assert [nodes[n]["cpus"] for n in sorted(nodes)] == [8, 8, 4, 4]
    assert [nodes[n]["gres"] for n in sorted(nodes)] == ["gpu:2", "gpu:2", "", ""]
    assert all(n["state"] == "idle" for n in nodes.values())


def test_held_job_runs_where_root_pins_it(cluster: dict[str, str]) -> None:
    out = Path(cluster["SLURM_CONF"]).parent.parent / "job.out"
    submitted = _run(cluster, "sbatch", "--parsable", "-t", "1", "-c", "1", "--gres=gpu:1", "-o", str(out),
                     "--wrap", "echo $SLURMD_NODENAME $CUDA_VISIBLE_DEVICES")
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    time.sleep(2)
    job = _job(cluster, job_id)
    assert job["job_state"] == "PENDING" and job["priority"] == 0  # held at submit, by job_submit.lua
    assert _run(cluster, "scontrol", "update", f"JobId={job_id}", "NodeList=n2",
                "AdminComment=cpdispatch:test").returncode == 0
    assert _run(cluster, "scontrol", "release", job_id).returncode == 0
    deadline = time.monotonic() + 30
    while _job(cluster, job_id)["job_state"] != "COMPLETED" and time.monotonic() < deadline:
        time.sleep(0.2)
    job = _job(cluster, job_id)
    assert job["job_state"] == "COMPLETED" and job["nodes"] == "n2" and job["admin_comment"] == "cpdispatch:test"
    assert out.read_text().split() == ["n2", "0"]  # on the chosen node, with a fake GPU


def test_a_user_cannot_release_or_repin(cluster: dict[str, str]) -> None:
    if shutil.which("runuser") is None:
        pytest.skip("runuser is needed to act as another user")
    submitted = _run(cluster, "sbatch", "--parsable", "-t", "1", "-o", "/dev/null", "--wrap", "true", user="nobody")
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    assert _run(cluster, "scontrol", "release", job_id, user="nobody").returncode != 0
    assert _run(cluster, "scontrol", "update", f"JobId={job_id}", "NodeList=n3", user="nobody").returncode != 0
    time.sleep(1.5)
    job = _job(cluster, job_id)
    assert job["job_state"] == "PENDING" and job["priority"] == 0 and not job.get("required_nodes")
    _run(cluster, "scancel", job_id)


def test_bad_sizes_and_stop_without_a_cluster(tmp_path: Path) -> None:
    code, _, err = cli("slurm", "local-cluster", "start", "--nodes", "2", "--gpu-nodes", "3")
    assert code == 2 and "gpu-nodes" in err
    code, _, err = cli("slurm", "local-cluster", "stop", "--conf", str(tmp_path / "etc" / "slurm.conf"))
    assert code == 2 and "not a cpdispatch local cluster" in err
