"""Accounting for a local cluster (`local-cluster start --accounting`): a private MariaDB and a
slurmdbd, so that Slurm's multifactor priority has fair share and QOS, as on a production cluster.

Measured facts behind the steps (docs/slurm.md, "Slurm's priorities"): slurmdbd reads
`slurmdbd.conf` from the folder of `$SLURM_CONF` and has no option to point elsewhere; slurmctld
reaches it through the private munge socket only when `AccountingStoragePass` names that socket;
accounts must exist before slurmctld starts, or their jobs get priority 1 until the next priority
pass (up to a minute); with no usage yet, shares alone rank nobody (every user's factor is 1), but
an account with 0 shares ranks below the others at once.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import CpdispatchError
from .steps import run_step

PACKAGES = ("slurmdbd", "mariadb-server")
DAEMONS = ("slurmdbd", "mariadbd", "mariadb-install-db")
#: pid files of the accounting daemons, in the order they stop (after slurmctld)
PID_FILES = ("run/slurmdbd.pid", "run/mariadbd.pid")


@dataclass(frozen=True)
class Account:
    """A Slurm account with its fair-share shares and its users."""

    name: str
    shares: int
    users: tuple[str, ...]


def parse_account(text: str) -> Account:
    """`NAME=SHARES:USER[,USER...]`, as `--account` takes it."""
    try:
        name, rest = text.split("=", 1)
        shares, users = rest.split(":", 1)
        account = Account(name.strip(), int(shares), tuple(u.strip() for u in users.split(",") if u.strip()))
    except ValueError:
        raise CpdispatchError(f"--account {text}: expected NAME=SHARES:USER[,USER...] (e.g. physics=10:alice,bob)"
                              ) from None
    if not account.name or account.shares < 0 or not account.users:
        raise CpdispatchError(f"--account {text}: needs a name, shares >= 0 and at least one user")
    return account


def conf_lines(root: Path, dbd_port: int) -> list[str]:
    """The slurm.conf lines of accounting and multifactor priority (fair share, QOS, age)."""
    return [
        "AccountingStorageType=accounting_storage/slurmdbd", "AccountingStorageHost=localhost",
        f"AccountingStoragePort={dbd_port}", f"AccountingStoragePass={root}/munge/munge.socket",
        "PriorityType=priority/multifactor", "PriorityWeightFairshare=10000", "PriorityWeightQOS=10000",
        "PriorityWeightAge=1000", "PriorityWeightJobSize=0", "PriorityWeightPartition=0",
        "PriorityDecayHalfLife=7-0", "PriorityCalcPeriod=1",
    ]


def start(root: Path, db_port: int, dbd_port: int, accounts: list[Account], env: dict[str, str],
          timeout: float = 60.0) -> None:
    """MariaDB, then slurmdbd, then the cluster's accounts (before slurmctld starts)."""
    cnf = root / "etc" / "my.cnf"
    cnf.write_text("\n".join([
        "[mysqld]", "user=root", f"datadir={root}/db", f"socket={root}/run/mysqld.sock",
        f"pid-file={root}/run/mariadbd.pid", f"port={db_port}", "bind-address=127.0.0.1",
        f"log-error={root}/log/mariadbd.log", "innodb_log_file_size=8M", "innodb_buffer_pool_size=64M"]) + "\n")
    if not (root / "db" / "mysql").is_dir():
        run_step(["mariadb-install-db", f"--defaults-file={cnf}", "--auth-root-authentication-method=normal",
              "--skip-test-db"], env, "mariadb-install-db")
    run_step(["setsid", "-f", "mariadbd", f"--defaults-file={cnf}"], env, "mariadbd")
    _wait(["mariadb-admin", "--no-defaults", "-S", f"{root}/run/mysqld.sock", "-uroot", "ping"], env, timeout,
          f"MariaDB (see {root}/log/mariadbd.log)")
    dbd = root / "etc" / "slurmdbd.conf"
    dbd.write_text("\n".join([
        "DbdHost=localhost", f"DbdPort={dbd_port}", "SlurmUser=root", "AuthType=auth/munge",
        f"AuthInfo=socket={root}/munge/munge.socket", "StorageType=accounting_storage/mysql",
        "StorageHost=127.0.0.1", f"StoragePort={db_port}", "StorageUser=root", "StorageLoc=slurm_acct_db",
        f"PidFile={root}/run/slurmdbd.pid", f"LogFile={root}/log/slurmdbd.log"]) + "\n")
    dbd.chmod(0o600)  # slurmdbd refuses a readable one
    run_step(["slurmdbd"], env, "slurmdbd")
    _wait(["sacctmgr", "-n", "list", "cluster"], env, timeout, f"slurmdbd (see {root}/log/slurmdbd.log)")
    listed = subprocess.run(["sacctmgr", "-n", "-P", "list", "cluster", "format=cluster"], env=env,
                            capture_output=True, text=True, check=False).stdout.split()
    if "local" not in listed:
        run_step(["sacctmgr", "-i", "add", "cluster", "local"], env, "sacctmgr add cluster")
    for a in accounts:
        run_step(["sacctmgr", "-i", "add", "account", a.name, f"Fairshare={a.shares}"], env,
                 f"sacctmgr add account {a.name}")
        for user in a.users:
            run_step(["sacctmgr", "-i", "add", "user", user, f"Account={a.name}"], env, f"sacctmgr add user {user}")


def _wait(cmd: list[str], env: dict[str, str], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while subprocess.run(cmd, env=env, capture_output=True, check=False).returncode:
        if time.monotonic() > deadline:
            raise CpdispatchError(f"{what}: not answering after {timeout:g} s")
        time.sleep(0.1)
