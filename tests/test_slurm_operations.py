"""What an operator looks at (no Slurm needed): the journal rotated by size, `slurm status` from
the state folder, and the Prometheus metrics of a driver whose Slurm does not answer."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from cpdispatch.slurm.failsafe import Lease, write_lease
from cpdispatch.slurm.intents import Journal, read_journal
from cpdispatch.slurm.status import format_status, write_status

from .test_cli import cli


def test_the_journal_is_rotated_by_size(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.jsonl", max_bytes=1000, keep=2)
    for i in range(200):
        journal.write("round", round=i)
    journal.close()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["journal.jsonl", "journal.jsonl.1", "journal.jsonl.2"]  # the oldest dropped
    assert all((tmp_path / f).stat().st_size < 1100 for f in files)
    newest = [r["round"] for r in read_journal(tmp_path / "journal.jsonl")]
    older = [r["round"] for r in read_journal(tmp_path / "journal.jsonl.1")]
    assert newest[-1] == 199 and older[-1] == newest[0] - 1  # nothing lost between the two


def test_status_says_what_waits_and_whether_the_lease_holds(tmp_path: Path) -> None:
    lease = tmp_path / "cpdispatch.lease"
    write_lease(lease, Lease(1000, 10, "open"))
    status = {"t": 1004.0, "round": 7, "pid": 42, "dispatcher": "pcp20", "predictor": "last2", "shadow": False,
              "failsafe": {"mode": "open", "seconds": 10, "file": str(lease)}, "counts": {},
              "rounds": [{"round": 7, "time": 1004, "queued": 3, "running": 2, "started": 1, "read_ms": 40.0,
                          "decide_ms": 5.0, "apply_ms": 12.0}],
              "waiting": [{"job": "12", "why": "dependency not met (afterok:11(unfulfilled))"}]}
    text = format_status(status, now=1005.0)
    assert "driver: pcp20 with last2 (pid 42), round 7" in text and "fresh: new jobs wait for the driver" in text
    assert "jobs not started: 1" in text and "12  dependency not met" in text
    assert "STALE: Slurm's own scheduler runs the jobs" in format_status(status, now=1020.0)
    write_status(tmp_path, status)
    code, out, _ = cli("slurm", "status", "--state-dir", str(tmp_path))
    assert code == 0 and "jobs not started: 1" in out
    code, _, err = cli("slurm", "status", "--state-dir", str(tmp_path / "none"))
    assert code == 2 and "no status.json" in err


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_metrics_are_served_while_slurm_does_not_answer(tmp_path: Path) -> None:
    conf = tmp_path / "slurm.conf"  # a controller nobody runs
    conf.write_text(f"ClusterName=none\nSlurmctldHost=localhost\nSlurmctldPort={_port()}\n")
    port = _port()
    proc = subprocess.Popen([sys.executable, "-m", "cpdispatch", "slurm", "dispatch", "--conf", str(conf),
                             "--state-dir", str(tmp_path / "st"), "--poll", "0.2", "--lease", "2",
                             "--metrics-port", str(port), "--metrics-address", "127.0.0.1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    values: dict[str, float] = {}
    try:
        deadline = time.monotonic() + 90
        while values.get("cpdispatch_failed_reads_total", 0) < 1 and time.monotonic() < deadline:
            time.sleep(0.3)
            try:
                text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
            except OSError:
                continue
            values = {line.split()[0]: float(line.split()[1]) for line in text.splitlines()
                      if line.startswith("cpdispatch_") and " " in line}
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert values.get("cpdispatch_failed_reads_total", 0) >= 1, (values, err[-500:])
    assert values["cpdispatch_rounds_total"] == 0 and values["cpdispatch_queue_jobs"] == 0
    assert values["cpdispatch_lease_age_seconds"] >= 0  # renewed at each round's start, answer or not
