"""The fail-safe lease on its own (no Slurm needed): what the driver writes, who may write it,
and the lua that reads it inside slurmctld."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from cpdispatch.errors import CpdispatchError
from cpdispatch.slurm.failsafe import (
    HELD_TAG,
    WAIT_TAG,
    FailSafe,
    check_lease_file,
    default_lease_file,
    job_submit_lua,
    read_lease,
)
from cpdispatch.slurm.state import SlurmJob, read_request

from .test_cli import cli


def test_the_lease_is_renewed_atomically_and_read_as_the_lua_reads_it(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    path = tmp_path / "cpdispatch.lease"
    assert read_lease(path) is None
    fs = FailSafe(path, 10, "open")
    check_lease_file(path)
    fs.renew(1000.7)
    lease = read_lease(path)
    assert lease is not None and lease.line() == "1000 10 open\n" and path.read_text() == lease.line()
    assert lease.fresh(1010) and not lease.fresh(1011)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644 and list(tmp_path.iterdir()) == [path]
    path.write_text("garbage\n")
    assert read_lease(path) is None  # the lua holds jobs on a line it does not understand


def test_a_lease_others_could_write_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "etc"
    with pytest.raises(CpdispatchError, match="does not exist"):
        check_lease_file(folder / "cpdispatch.lease")
    folder.mkdir()
    folder.chmod(0o777)
    with pytest.raises(CpdispatchError, match="writable by other users.*chmod go-w"):
        check_lease_file(folder / "cpdispatch.lease")
    folder.chmod(0o755)
    (folder / "cpdispatch.lease").write_text("")
    (folder / "cpdispatch.lease").chmod(0o666)
    with pytest.raises(CpdispatchError, match="writable by other users"):
        check_lease_file(folder / "cpdispatch.lease")
    with pytest.raises(CpdispatchError, match="one of open, closed"):
        FailSafe(folder / "x", 10, "ajar")


def test_the_lua_reads_the_lease_it_names() -> None:
    lua = job_submit_lua("/etc/slurm/cpdispatch.lease")
    assert 'local LEASE_FILE = "/etc/slurm/cpdispatch.lease"' in lua
    assert f'"{WAIT_TAG}"' in lua and f'"{HELD_TAG}"' in lua and "modify_uid ~= 0" in lua
    with pytest.raises(CpdispatchError, match="lua string"):
        job_submit_lua('/etc/"x"')
    assert default_lease_file("/opt/slurm/etc/slurm.conf") == Path("/opt/slurm/etc/cpdispatch.lease")
    code, out, _ = cli("slurm", "job-submit-lua", "--lease-file", "/srv/lease")
    assert code == 0 and out == job_submit_lua("/srv/lease")


def _job(comment: str, priority: int, dependency: str = "") -> SlurmJob:
    return SlurmJob("7", "PENDING", "BeginTime", priority, 0, 0, 0, 60, "u", "n", "main", dependency, "", comment,
                    (), (), read_request({"cpus": 1}))


def test_jobs_are_told_apart_by_the_tags_of_the_fail_safe() -> None:
    assert _job(WAIT_TAG, 5).kind == "waiting" and _job(WAIT_TAG, 5).begin_after == 0
    assert _job(f"{WAIT_TAG}:1900000000", 5).begin_after == 1900000000  # the user's own --begin
    assert _job(HELD_TAG, 0).kind == "held" and _job(HELD_TAG, 0).tagged
    assert _job("", 0).kind == "held" and not _job("", 0).tagged  # its user's --hold
    assert _job("", 5).kind == "foreign"
    assert _job(WAIT_TAG, 5, "afterok:3(unfulfilled)").kind == "blocked"


def test_a_lease_shorter_than_three_polls_is_refused(tmp_path: Path) -> None:
    code, _, err = cli("slurm", "dispatch", "--lease", "2", "--poll", "1", "--state-dir", str(tmp_path))
    assert code == 2 and "--lease 2: at least 3 polls" in err
