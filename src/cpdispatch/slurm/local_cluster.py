"""A real Slurm cluster on this host, for tests, demos and trying a dispatcher: a private munged,
one slurmctld and one slurmd per node (Debian builds Slurm with multiple-slurmd), fake GPUs as
GRES on character devices, and the fail-safe `job_submit.lua` (`failsafe`: new jobs wait for the
dispatcher while its lease, `etc/cpdispatch.lease`, is fresh; only root may release or modify a
job). Slurm's main scheduling pass runs every 2 s (`sched_interval`) so that jobs whose lease ran
out start soon. With accounts (`--accounting`), a private MariaDB and slurmdbd give Slurm's
multifactor priority its fair share (`accounting`). Everything lives in one folder with its own
ports; `SLURM_CONF` points the usual commands at it. Measured facts behind each setting:
`../shared/design/slurm-findings.md` of the project's design notes.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import CpdispatchError
from . import accounting
from .failsafe import LEASE_NAME, job_submit_lua
from .steps import run_step

PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
DAEMONS = ("munged", "slurmctld", "slurmd")


@dataclass(frozen=True)
class NodeSpec:
    name: str
    cpus: int
    memory_mb: int
    gpus: int


def node_specs(nodes: int, gpu_nodes: int, cpus: int = 8, memory_mb: int = 8000, gpus: int = 2,
               cpu_node_cpus: int = 4, cpu_node_memory_mb: int = 4000) -> list[NodeSpec]:
    """`gpu_nodes` nodes with GPUs first (n1...), then CPU-only nodes (half the size by default)."""
    if nodes < 1 or not 0 <= gpu_nodes <= nodes:
        raise CpdispatchError(f"--nodes {nodes} --gpu-nodes {gpu_nodes}: need nodes >= 1, 0 <= gpu-nodes <= nodes")
    return [NodeSpec(f"n{i}", cpus, memory_mb, gpus) if i <= gpu_nodes
            else NodeSpec(f"n{i}", cpu_node_cpus, cpu_node_memory_mb, 0) for i in range(1, nodes + 1)]


def ensure_packages(with_accounting: bool = False) -> None:
    """Install Debian's Slurm and munge (and slurmdbd and MariaDB `with_accounting`) when missing
    (as root; their services are kept from starting system-wide by a policy-rc.d, created only if
    none exists)."""
    daemons = DAEMONS + (accounting.DAEMONS if with_accounting else ())
    packages = PACKAGES + (accounting.PACKAGES if with_accounting else ())
    if all(shutil.which(d) for d in daemons) and shutil.which("sbatch"):
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise CpdispatchError(f"Slurm is not installed; as root run: apt-get install {' '.join(packages)}")
    policy = Path("/usr/sbin/policy-rc.d")
    made = not policy.exists()
    if made:
        policy.write_text("#!/bin/sh\nexit 101\n")
        policy.chmod(0o755)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    try:
        for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "--no-install-recommends",
                                                    *packages]):
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            if done.returncode and cmd[1] == "install":
                raise CpdispatchError(f"apt-get install {' '.join(packages)} failed: {done.stderr.strip()[-300:]}")
    finally:
        if made:
            policy.unlink()


def _free_ports(count: int) -> int:
    """A base port p with p .. p+count-1 free (checked by binding each), below the ephemeral range:
    there, the clients' own connections took a 256-node cluster's ports between this check and the
    daemons' start."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    rng = random.Random()
    for _ in range(50):
        base = rng.randrange(10000, max(10001, low - count))
        try:
            held = []
            for p in range(base, base + count):
                sock = socket.socket()
                held.append(sock)
                sock.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for sock in held:
                sock.close()
    raise CpdispatchError("no block of free ports found for the local cluster")


def slurm_conf(base: Path, specs: list[NodeSpec], port: int, with_accounting: bool = False) -> str:
    """The cluster's slurm.conf (node i's slurmd listens on port + 2 + i; with accounting,
    slurmdbd on port + 3 + the node count)."""
    b = str(base)
    lines = [
        "ClusterName=local", "SlurmctldHost=localhost", "SlurmUser=root", "SlurmdUser=root",
        f"SlurmctldPort={port}", f"SlurmdPort={port + 2}", "AuthType=auth/munge", "CredType=cred/munge",
        f"AuthInfo=socket={b}/munge/munge.socket", f"StateSaveLocation={b}/spool/ctld",
        f"SlurmdSpoolDir={b}/spool/d/%n", f"SlurmctldPidFile={b}/run/slurmctld.pid",
        f"SlurmdPidFile={b}/run/slurmd-%n.pid", f"SlurmctldLogFile={b}/log/slurmctld.log",
        f"SlurmdLogFile={b}/log/slurmd-%n.log", "MailProg=/bin/true", "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none", "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/filetxt", f"JobCompLoc={b}/log/jobcomp.log", "MpiDefault=none", "SwitchType=switch/none",
        "SlurmdParameters=config_overrides", "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core_Memory",
        "DefMemPerCPU=100", "GresTypes=gpu", "SchedulerType=sched/builtin",
        "SchedulerParameters=batch_sched_delay=0,sched_interval=2", "PriorityType=priority/basic", "ReturnToService=2",
        "MinJobAge=300", "KillWait=5", "InactiveLimit=0", "SlurmdTimeout=60", "JobSubmitPlugins=lua",
    ]
    if with_accounting:
        lines = [x for x in lines if x.split("=")[0] not in ("AccountingStorageType", "PriorityType")]
        lines += accounting.conf_lines(base, port + 3 + len(specs))
    for i, n in enumerate(specs):
        gres = f" Gres=gpu:{n.gpus}" if n.gpus else ""
        lines.append(f"NodeName={n.name} NodeHostname=localhost NodeAddr=127.0.0.1 Port={port + 2 + i} "
                     f"CPUs={n.cpus} RealMemory={n.memory_mb}{gres} State=UNKNOWN")
    lines.append("PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE DefaultTime=60 State=UP")
    return "\n".join(lines) + "\n"


def _gres_conf(base: Path, specs: list[NodeSpec]) -> str:
    """Fake GPUs: character devices (c 1 3, /dev/null's numbers) so that jobs get
    CUDA_VISIBLE_DEVICES; regular files would register without it."""
    lines = ["AutoDetect=off"]
    for n in specs:
        if not n.gpus:
            continue
        files = []
        for k in range(n.gpus):
            dev = base / "dev" / f"{n.name}-gpu{k}"
            try:
                os.mknod(dev, 0o666 | 0o020000, os.makedev(1, 3))
                files.append(str(dev))
            except OSError:  # no mknod here: real character devices do as well
                files.append(("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")[k % 5])
        lines.append(f"NodeName={n.name} Name=gpu File={','.join(files)}")
    return "\n".join(lines) + "\n"


def start(specs: list[NodeSpec], base: str | Path | None = None, timeout: float = 30.0,
          accounts: list[accounting.Account] | None = None) -> Path:
    """Start the cluster; returns its slurm.conf path once every node is idle. With `accounts`
    (even empty), Slurm's accounting runs too (`accounting`), with these accounts."""
    with_accounting = accounts is not None
    ensure_packages(with_accounting)
    root = (Path(base) if base else Path(tempfile.mkdtemp(prefix="cpdispatch-slurm-"))).resolve()
    closed = [str(a) for a in root.parents if a.exists() and not a.stat().st_mode & 0o001]
    if closed:  # munged refuses a socket under a folder others cannot traverse
        raise CpdispatchError(f"--dir {root}: {closed[0]} is not traversable by all users (chmod o+x it, or "
                              "choose a folder elsewhere)")
    for sub in ("etc", "munge", "log", "run", "spool/ctld", "dev", "db", *(f"spool/d/{n.name}" for n in specs)):
        (root / sub).mkdir(parents=True, exist_ok=True)
    for d in (root, root / "munge"):
        d.chmod(0o755)  # munged refuses a socket folder others cannot traverse
    key = root / "munge" / "munge.key"
    if not key.exists():
        key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    conf = root / "etc" / "slurm.conf"
    port = _free_ports(len(specs) + 4)
    conf.write_text(slurm_conf(root, specs, port, with_accounting))
    (root / "etc" / "gres.conf").write_text(_gres_conf(root, specs))
    (root / "etc" / "job_submit.lua").write_text(job_submit_lua(root / "etc" / LEASE_NAME))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    m = root / "munge"
    run_step(["munged", f"--key-file={key}", f"--socket={m}/munge.socket", f"--pid-file={m}/munged.pid",
          f"--log-file={root}/log/munged.log", f"--seed-file={m}/munged.seed"], env, "munged")
    try:
        if accounts is not None:
            accounting.start(root, port + 2 + len(specs), port + 3 + len(specs), accounts, env)
        run_step(["slurmctld", "-f", str(conf)], env, "slurmctld")
        for n in specs:
            run_step(["slurmd", "-f", str(conf), "-N", n.name], env, f"slurmd {n.name}")
        _wait_idle(env, len(specs), timeout, root)
    except CpdispatchError:
        stop(conf)  # nothing of a cluster that did not come up keeps running (its logs are kept)
        raise
    return conf


def _wait_idle(env: dict[str, str], count: int, timeout: float, root: Path) -> None:
    deadline = time.monotonic() + timeout
    states: list[str] = []
    while time.monotonic() < deadline:
        done = subprocess.run(["sinfo", "--json"], env=env, capture_output=True, text=True, check=False)
        if done.returncode == 0:
            nodes = json.loads(done.stdout).get("nodes", [])
            states = [f"{n['name']}:{n['state']}" for n in nodes]
            if len(nodes) == count and all(n["state"] == "idle" and not n.get("state_flags") for n in nodes):
                return
        time.sleep(0.1)
    raise CpdispatchError(f"local cluster in {root}: nodes not idle after {timeout:g} s ({', '.join(states)}); "
                          f"see {root}/log")


def stop(conf: str | Path) -> list[str]:
    """Stop the daemons this cluster started (by the process ids in its run folder); returns
    what was stopped."""
    root = Path(conf).resolve().parent.parent
    if not (root / "run").is_dir() or not (root / "munge").is_dir():
        raise CpdispatchError(f"{conf}: not a cpdispatch local cluster (no run/ and munge/ beside etc/)")
    _cancel_all({**os.environ, "SLURM_CONF": str(conf)})
    pids = sorted((root / "run").glob("slurmd-*.pid")) + [root / "run" / "slurmctld.pid",
                                                          *(root / p for p in accounting.PID_FILES),
                                                          root / "munge" / "munged.pid"]
    stopped = []
    for pid_file in pids:
        if not pid_file.exists():
            continue
        pid = int(pid_file.read_text().split()[0])
        try:
            os.kill(pid, signal.SIGTERM)
            stopped.append(f"{pid_file.stem} ({pid})")
        except ProcessLookupError:
            pass
        for _ in range(50):  # a daemon writes its state on SIGTERM: wait for it
            if not _alive(pid):
                break
            time.sleep(0.1)
        pid_file.unlink(missing_ok=True)
    return stopped


def _cancel_all(env: dict[str, str], wait: float = 15.0) -> None:
    """Cancel the cluster's jobs and wait for their steps to end: a job step (slurmstepd and the
    job's processes) outlives its slurmd."""
    listed = subprocess.run(["squeue", "-h", "-o", "%A"], env=env, capture_output=True, text=True, check=False,
                            timeout=30)
    ids = sorted(set(listed.stdout.split())) if listed.returncode == 0 else []
    if not ids:
        return
    subprocess.run(["scancel", *ids], env=env, capture_output=True, check=False, timeout=60)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        left = subprocess.run(["squeue", "-h", "-t", "R,CG", "-o", "%A"], env=env, capture_output=True, text=True,
                              check=False, timeout=30)
        if left.returncode or not left.stdout.strip():
            return
        time.sleep(0.2)


def _alive(pid: int) -> bool:
    """Running, not a zombie (daemons are reaped by init, sometimes lazily)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False
