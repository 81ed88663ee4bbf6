"""A real local Slurm cluster (`cpdispatch slurm local-cluster`): before any driver every job is
held at submit, only root pins and releases it, and it then runs on exactly the chosen node with
its fake GPUs; under a driver's lease a job waits for it, and no user can fake or pull that."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cpdispatch.slurm.commands import Outcome, SlurmCommands
from cpdispatch.slurm.failsafe import WAIT_TAG, read_lease

from .slurm_helpers import job, lease, run, running_cluster
from .test_cli import cli


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict[str, str]]:
    """4 nodes, n1 and n2 with 2 GPUs; the environment that talks to it."""
    with running_cluster(4, 2) as env:
        yield env


def test_nodes_are_what_was_asked(cluster: dict[str, str]) -> None:
    nodes = {n["name"]: n for n in json.loads(run(cluster, "sinfo", "--json").stdout)["nodes"]}
    assert sorted(nodes) == ["n1", "n2", "n3", "n4"]
    assert [nodes[n]["cpus"] for n in sorted(nodes)] == [8, 8, 4, 4]
    assert [nodes[n]["gres"] for n in sorted(nodes)] == ["gpu:2", "gpu:2", "", ""]
    assert all(n["state"] == "idle" for n in nodes.values())


def test_held_job_runs_where_root_pins_it(cluster: dict[str, str]) -> None:
    lease(cluster, "closed")
    out = Path(cluster["SLURM_CONF"]).parent.parent / "job.out"
    submitted = run(cluster, "sbatch", "--parsable", "-t", "1", "-c", "1", "--gres=gpu:1", "-o", str(out),
                     "--wrap", "echo $SLURMD_NODENAME $CUDA_VISIBLE_DEVICES")
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    time.sleep(2)
    found = job(cluster, job_id)
    assert found["job_state"] == "PENDING" and found["priority"] == 0  # held at submit, by job_submit.lua
    assert run(cluster, "scontrol", "update", f"JobId={job_id}", "NodeList=n2",
                "AdminComment=cpdispatch:test").returncode == 0
    assert run(cluster, "scontrol", "release", job_id).returncode == 0
    deadline = time.monotonic() + 30
    while job(cluster, job_id)["job_state"] != "COMPLETED" and time.monotonic() < deadline:
        time.sleep(0.2)
    found = job(cluster, job_id)
    assert found["job_state"] == "COMPLETED" and found["nodes"] == "n2" and found["admin_comment"] == "cpdispatch:test"
    assert out.read_text().split() == ["n2", "0"]  # on the chosen node, with a fake GPU


def test_a_user_cannot_release_or_repin(cluster: dict[str, str]) -> None:
    if shutil.which("runuser") is None:
        pytest.skip("runuser is needed to act as another user")
    lease(cluster, "closed")
    submitted = run(cluster, "sbatch", "--parsable", "-t", "1", "-o", "/dev/null", "--wrap", "true", user="nobody")
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    assert run(cluster, "scontrol", "release", job_id, user="nobody").returncode != 0
    assert run(cluster, "scontrol", "update", f"JobId={job_id}", "NodeList=n3", user="nobody").returncode != 0
    time.sleep(1.5)
    found = job(cluster, job_id)
    assert found["job_state"] == "PENDING" and found["priority"] == 0 and not found.get("required_nodes")
    run(cluster, "scancel", job_id)


def test_bad_sizes_and_stop_without_a_cluster(tmp_path: Path) -> None:
    code, _, err = cli("slurm", "local-cluster", "start", "--nodes", "2", "--gpu-nodes", "3")
    assert code == 2 and "gpu-nodes" in err
    code, _, err = cli("slurm", "local-cluster", "stop", "--conf", str(tmp_path / "etc" / "slurm.conf"))
    assert code == 2 and "not a cpdispatch local cluster" in err


def test_a_user_can_neither_fake_the_lease_nor_escape_it(cluster: dict[str, str]) -> None:
    if shutil.which("runuser") is None:
        pytest.skip("runuser is needed to act as another user")
    path = lease(cluster, "open", 120)
    before = path.read_text()
    assert run(cluster, "sh", "-c", f"echo '0 1 open' > {path}", user="nobody").returncode != 0  # a dead driver
    assert run(cluster, "sh", "-c", f"echo '9999999999 1 open' > {path}", user="nobody").returncode != 0
    assert run(cluster, "rm", "-f", str(path), user="nobody").returncode != 0
    assert path.read_text() == before and read_lease(path) is not None
    submitted = run(cluster, "sbatch", "--parsable", "-t", "1", "-o", "/dev/null", "--wrap", "true", user="nobody")
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    found = job(cluster, job_id)
    assert found["admin_comment"] == WAIT_TAG and found["eligible_time"] > time.time() + 100  # waits for a driver
    assert run(cluster, "scontrol", "update", f"JobId={job_id}", "StartTime=now", user="nobody").returncode != 0
    time.sleep(3)  # past a scheduling pass
    assert job(cluster, job_id)["job_state"] == "PENDING"
    run(cluster, "scancel", job_id)
    path.unlink()


def test_a_pinned_held_job_is_deferred_unpinned_and_released_at_once(cluster: dict[str, str]) -> None:
    """The driver's take-over of a held job is one scontrol process (which outlives a killed
    driver), deferring before it unpins or releases: never held under the fail-open tag, never
    eligible and unpinned."""
    lease(cluster, "closed")
    submitted = run(cluster, "sbatch", "--parsable", "-t", "1", "-o", "/dev/null", "--wrap", "true")
    assert submitted.returncode == 0, submitted.stderr
    job_id = submitted.stdout.strip()
    assert run(cluster, "scontrol", "update", f"JobId={job_id}", "NodeList=n3").returncode == 0
    calls: list[tuple[tuple[str, ...], str | None]] = []
    commands = SlurmCommands(cluster["SLURM_CONF"])
    real = commands.run

    def recorded(*argv: str, stdin: str | None = None) -> Outcome:
        calls.append((argv, stdin))
        return real(*argv, stdin=stdin)

    commands.run = recorded  # type: ignore[method-assign]
    out = commands.defer([job_id], 60, WAIT_TAG, unpin=[job_id], release=True)
    assert out.ok, out.stderr
    assert [argv for argv, _ in calls] == [("scontrol",)]  # one process
    assert calls[0][1] == (f"update JobId={job_id} StartTime=now+60 AdminComment={WAIT_TAG}\n"
                           f"update JobId={job_id} NodeList=\nrelease {job_id}\n")
    found = job(cluster, job_id)
    assert found["priority"] > 0 and found["admin_comment"] == WAIT_TAG and not found["required_nodes"]
    assert found["eligible_time"] > time.time() + 50
    time.sleep(3)  # past a scheduling pass
    assert job(cluster, job_id)["job_state"] == "PENDING"
    run(cluster, "scancel", job_id)
