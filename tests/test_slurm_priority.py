"""`slurm dispatch --priority slurm`: Slurm's priorities become the dispatcher's job weights."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cpdispatch.dispatchers import make_dispatcher
from cpdispatch.errors import CpdispatchError
from cpdispatch.slurm.accounting import Account, parse_account
from cpdispatch.slurm.intents import read_journal
from cpdispatch.slurm.local_cluster import node_specs, slurm_conf
from cpdispatch.slurm.priority import check_priority, slurm_weights

from .slurm_helpers import completions, job, lease, run, running_cluster, wait_for
from .test_cli import cli


def test_weights_are_priorities_over_the_highest() -> None:
    assert slurm_weights([4000, 1000, 2000]) == [1.0, 0.25, 0.5]
    assert slurm_weights([4000, 0, 2000]) == [1.0, 0.75, 0.5]  # not computed yet: the others' mean
    assert slurm_weights([0, 0]) == [1.0, 1.0]
    assert slurm_weights([]) == []


def test_a_dispatcher_that_would_ignore_the_weights_is_refused() -> None:
    check_priority("slurm", make_dispatcher("pcp20"))
    check_priority("papers", make_dispatcher("easy"))
    with pytest.raises(CpdispatchError, match="dispatcher easy has no per-job objective"):
        check_priority("slurm", make_dispatcher("easy"))
    with pytest.raises(CpdispatchError, match="dispatcher eurora14 has no per-job objective"):
        check_priority("slurm", make_dispatcher("eurora14", {"objective": "makespan"}))
    with pytest.raises(CpdispatchError, match="--priority fair: expected one of papers, slurm"):
        check_priority("fair", make_dispatcher("pcp20"))


@pytest.mark.parametrize("args, message", [
    (["--dispatcher", "easy", "--priority", "slurm"], "dispatcher easy has no per-job objective to weigh"),
    (["--priority", "slurm", "--fail-closed"], "--priority slurm needs the fail-open lease"),
])
def test_the_command_refuses_before_any_round(tmp_path: Path, args: list[str], message: str) -> None:
    code, _, err = cli("slurm", "dispatch", "--state-dir", str(tmp_path), "--conf", str(tmp_path / "none"), *args)
    assert code == 2 and message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_accounts_are_read_as_written_or_refused_in_one_line() -> None:
    assert parse_account("physics=10:alice, bob") == Account("physics", 10, ("alice", "bob"))
    for bad in ("physics", "physics=ten:alice", "physics=1:", "=1:alice", "physics=-1:alice"):
        with pytest.raises(CpdispatchError, match=r"--account .*: (expected NAME=SHARES|needs a name)"):
            parse_account(bad)


def test_accounting_turns_on_the_multifactor_priority(tmp_path: Path) -> None:
    specs = node_specs(2, 1)
    plain = slurm_conf(tmp_path, specs, 20000).splitlines()
    assert "PriorityType=priority/basic" in plain and "AccountingStorageType=accounting_storage/none" in plain
    conf = slurm_conf(tmp_path, specs, 20000, with_accounting=True).splitlines()
    assert "PriorityType=priority/multifactor" in conf and "PriorityType=priority/basic" not in conf
    assert "AccountingStoragePort=20005" in conf  # slurmdbd after the two slurmd (20002, 20003) and MariaDB
    assert f"AccountingStoragePass={tmp_path}/munge/munge.socket" in conf


@pytest.fixture(scope="module")
def fair_share() -> Iterator[dict[str, str]]:
    """One 4-CPU node; `nobody`'s account has a share, `daemon`'s none: Slurm's fair share ranks
    nobody's jobs first from the start (with no usage yet, shares alone would rank nobody)."""
    for user in ("nobody", "daemon"):
        if subprocess.run(["id", user], capture_output=True, check=False).returncode:
            pytest.skip(f"no user {user} on this host")
    with running_cluster(1, 0, ("favoured=1:nobody", "other=0:daemon")) as env:
        yield env


def _priorities(env: dict[str, str], ids: list[str]) -> list[int]:
    return [int(job(env, i)["priority"]) for i in ids]


@pytest.mark.parametrize("dispatcher", ["pcp20", "hcp19"])
def test_fair_share_orders_the_queue_only_with_priority_slurm(fair_share: dict[str, str], tmp_path: Path,
                                                              dispatcher: str) -> None:
    """`daemon` (no share) submits two whole-node jobs, then `nobody` two identical ones: with
    `--priority slurm` nobody's start first. By default they tie in the papers' objective: pcp20
    breaks the tie by its priority order (the longest wait first), hcp19 arbitrarily."""
    env = fair_share
    order = {}
    for mode in ("papers", "slurm") if dispatcher == "pcp20" else ("slurm",):
        lease(env, "open")
        ids = [run(env, "sbatch", "--parsable", "-n", "4", "-t", "1", "-o", "/dev/null", "--wrap", "sleep 1",
                   user=user).stdout.strip() for user in ("daemon", "daemon", "nobody", "nobody")]
        low, _, high, _ = _priorities(env, ids)
        assert high > low > 0, f"Slurm's fair share did not rank nobody first: {_priorities(env, ids)}"
        state = tmp_path / mode
        proc = subprocess.Popen([sys.executable, "-m", "cpdispatch", "slurm", "dispatch", "--state-dir", str(state),
                                 "--poll", "0.5", "--lease", "3600", "--dispatcher", dispatcher, "--priority", mode],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_for(lambda ids=ids: {c["JobId"] for c in completions(env)} >= set(ids), 90,  # type: ignore[misc]
                     "the four jobs done")
        finally:
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=30)
        assert "Traceback" not in err, err
        pinned = [s["job"] for r in read_journal(state / "journal.jsonl") if r["kind"] == "pins" for s in r["starts"]]
        order[mode] = ["daemon" if i in ids[:2] else "nobody" for i in pinned]
    assert order.get("papers", ["daemon", "daemon", "nobody", "nobody"]) == ["daemon", "daemon", "nobody", "nobody"]
    assert order["slurm"] == ["nobody", "nobody", "daemon", "daemon"], order
