"""`cpdispatch slurm dispatch` on a real local Slurm cluster (4 nodes, 2 with GPUs): jobs run on
exactly the nodes decided; a killed driver fails open (or closed when asked), loses nothing and
starts nothing twice; shadow mode sends no command; and the pieces (hostlists, requests,
placement checks) on their own."""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cpdispatch as cpd
from cpdispatch.errors import CpdispatchError
from cpdispatch.job import Job
from cpdispatch.slurm.hostlist import expand
from cpdispatch.slurm.intents import read_journal
from cpdispatch.slurm.placement import place
from cpdispatch.slurm.state import Request, parse_gres, read_request
from cpdispatch.slurm.status import read_status
from cpdispatch.system import NodeGroup, System

from .slurm_helpers import completions, job, jobs, lease, run, running_cluster, wait_for


@pytest.fixture(scope="module")
def cluster() -> Iterator[dict[str, str]]:
    with running_cluster(4, 2) as env:
        yield env


# -- pieces ------------------------------------------------------------------------------------


def test_hostlists_expand() -> None:
    assert expand("n[1-3,7],m05") == ["n1", "n2", "n3", "n7", "m05"]
    assert expand("gpu[08-10]") == ["gpu08", "gpu09", "gpu10"]
    assert expand("r[1-2]c[1-2]") == ["r1c1", "r1c2", "r2c1", "r2c2"]
    assert expand("") == [] and expand("(null)") == []


def test_gres_strings() -> None:
    assert parse_gres("gpu:2") == {"gpu": 2}
    assert parse_gres("gpu:a100:1(IDX:0,2),gres:mic:1") == {"gpu": 1, "mic": 1}
    assert parse_gres("gres:gpu:2") == {"gpu": 2} and parse_gres("") == {} and parse_gres(None) == {}
    assert parse_gres("gres/gpu:2") == {"gpu": 2}


def test_requests_become_units() -> None:
    base = {"memory_per_cpu": 100, "memory_per_node": None, "tres_per_node": "", "tres_per_job": "", "shared": None}
    r = read_request({**base, "node_count": 2, "cpus": 4, "tasks": 2, "minimum_cpus_per_node": 2,
                      "tres_per_node": "gres:gpu:1"})
    assert r == Request(2, {"core": 2, "mem": 200, "gpu": 1}, True, False)  # -N 2: one unit per node
    r = read_request({**base, "node_count": 1, "cpus": 6, "tasks": 6, "max_nodes": 0})
    assert r == Request(6, {"core": 1, "mem": 100}, False, False)  # -n 6: tasks placed freely
    r = read_request({**base, "node_count": 1, "cpus": 1, "tasks": 1, "tres_per_job": "gres:gpu:3",
                      "memory_per_cpu": None, "memory_per_node": 500, "shared": "none"})
    assert r == Request(1, {"core": 1, "mem": 500, "gpu": 3}, False, True)


def test_placement_checked_and_repaired() -> None:
    cap = np.array([[8, 800, 2], [8, 800, 2], [4, 400, 0]], dtype=np.int64)
    free = cap.copy()
    free[1] = [1, 100, 0]
    allowed = np.ones(3, dtype=bool)
    distinct = Request(2, {"core": 2, "mem": 200, "gpu": 1}, True, False)
    req = distinct.req(("core", "mem", "gpu"))
    assert place((0, 0), distinct, req, free, cap, allowed) == (None, "units share a node but Slurm gives each "
                                                                     "listed node its own part")  # n2 full, n3 no GPU
    free[1] = cap[1]
    nodes, why = place((0, 0), distinct, req, free, cap, allowed)
    assert nodes == [0, 1] and "share a node" in why
    assert place((0, 1), distinct, req, free, cap, allowed) == ([0, 1], "")
    tasks = Request(6, {"core": 1, "mem": 100}, False, False)
    nodes, why = place((2,) * 6, tasks, (1, 100, 0), free, cap, allowed)  # 4 fit on n3: the rest go first-fit
    assert nodes is not None and sorted(nodes) == [0, 0, 2, 2, 2, 2] and why == "the chosen nodes cannot hold it now"
    allowed[:] = [False, False, True]  # its partition: n3 only
    assert place((0,), Request(1, {"core": 1}, False, False), (1, 0, 0), free, cap, allowed)[0] == [2]
    exclusive = Request(1, {"core": 1}, False, True)
    free[2, 0] = 3
    assert place((2,), exclusive, (1, 0, 0), free, cap, allowed)[0] is None  # n3 is not idle


# -- on the real cluster ---------------------------------------------------------------------------


def _submit(env: dict[str, str], out: Path, n: int, sleep: int) -> dict[str, list[str]]:
    """`n` jobs: 1-2 CPUs, every 5th a GPU job, every 7th a 2-node job, every 9th 6 tasks. Each
    writes where it ran, from inside."""
    out.mkdir(parents=True, exist_ok=True)
    kinds: dict[str, list[str]] = {}
    for i in range(n):
        args = ["-c", str(1 + i % 2)]
        if i % 7 == 3:
            args = ["-N", "2", "-c", "2"]
        elif i % 9 == 4:
            args = ["-n", "6"]
        if i % 5 == 0:
            args += ["--gres=gpu:1"]
        where = '"$SLURM_JOB_ID $SLURM_JOB_NODELIST $CUDA_VISIBLE_DEVICES"'
        script = f"echo {where} > {out}/$SLURM_JOB_ID.out; sleep {sleep}"
        done = run(env, "sbatch", "--parsable", "-t", "1", "-o", "/dev/null", *args, "--wrap", script)
        assert done.returncode == 0, done.stderr
        kinds[done.stdout.strip()] = args
    return kinds


def _sim_job(job_id: str, args: list[str], sleep: int) -> Job:
    """The job `_submit` made, as the simulator sees it (100 MB per CPU, Slurm's DefMemPerCPU)."""
    gpu = int("--gres=gpu:1" in args)
    if "-N" in args:
        return Job(job_id, 0, 2, (2, 200, gpu), 60, sleep, one_per_node=True)
    if "-n" in args:
        return Job(job_id, 0, 6, (1, 100, 0), 60, sleep)
    cpus = int(args[args.index("-c") + 1])
    return Job(job_id, 0, 1, (cpus, 100 * cpus, gpu), 60, sleep)


def _driver(env: dict[str, str], state: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "cpdispatch", "slurm", "dispatch", "--state-dir", str(state),
                             "--poll", "0.5", *extra], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _pins(state: Path) -> dict[str, list[list[str]]]:
    out: dict[str, list[list[str]]] = {}
    for rec in read_journal(state / "journal.jsonl"):
        for start in rec["starts"] if rec["kind"] == "pins" else ():
            out.setdefault(start["job"], []).append(start["nodes"])
    return out


def _history(state: Path, job_id: str) -> list[dict[str, object]]:
    """The journal's records that name `job_id`, with the round's other starts (for a failure's message)."""
    return [r for r in read_journal(state / "journal.jsonl")
            if r["kind"] in ("decision", "rehold", "refused", "adjusted") and f'"{job_id}"' in json.dumps(r)]


def _finished(env: dict[str, str], ids: set[str]) -> bool:
    return sum(1 for c in completions(env) if c["JobId"] in ids) >= len(ids)


def _check_ran_where_pinned(env: dict[str, str], ids: set[str], state: Path, out: Path) -> list[dict[str, str]]:
    """Each job completed exactly once, on the nodes of its last pin (by Slurm's completion log
    and from inside the job)."""
    done = [c for c in completions(env) if c["JobId"] in ids]
    assert sorted(c["JobId"] for c in done) == sorted(ids)  # each exactly once
    assert {c["JobState"] for c in done} == {"COMPLETED"}
    pins = _pins(state)
    for c in done:
        assert sorted(c["nodes"]) == sorted(pins[c["JobId"]][-1]), (c, _history(state, c["JobId"]))
        inside = (out / f"{c['JobId']}.out").read_text().split()
        assert sorted(expand(inside[1])) == sorted(c["nodes"])
    return done


@pytest.mark.parametrize("dispatcher", ["pcp20", "easy", "hcp19", "pcp19"])
def test_fifty_jobs_run_where_the_dispatcher_put_them(cluster: dict[str, str], tmp_path: Path,
                                                      dispatcher: str) -> None:
    """As decided: every start of every dispatcher runs on the nodes it chose (none moved by the
    driver, the 2-node jobs included), checked by Slurm and from inside each job."""
    out, state = Path(cluster["SLURM_CONF"]).parent.parent / f"fifty-{dispatcher}", tmp_path / "state"
    lease(cluster, "closed")  # held until the driver comes (which then defers them: fail-open)
    kinds = _submit(cluster, out, 50, 2)
    ids = set(kinds)
    t0 = time.time()
    driver = _driver(cluster, state, "--dispatcher", dispatcher, "--predictor", "last2")
    try:
        wait_for(lambda: _finished(cluster, ids), 180, "50 jobs completed")
    finally:
        driver.send_signal(signal.SIGTERM)
        stdout, stderr = driver.communicate(timeout=30)
    live = time.time() - t0
    assert driver.returncode == 143, stderr
    started, reheld = (int(x) for x in re.search(r"(\d+) jobs started, (\d+) re-held", stdout).groups())  # type: ignore[union-attr]
    assert 50 <= started <= 50 + reheld and "ms per round" in stdout  # a re-held job is started again
    assert " 0 moved, 0 refused" in stdout  # as decided: the dispatcher's nodes are Slurm's
    assert not [r for r in read_journal(state / "journal.jsonl") if r["kind"] in ("adjusted", "refused")]
    done = _check_ran_where_pinned(cluster, ids, state, out)
    for c in done:
        inside = (out / f"{c['JobId']}.out").read_text().split()
        assert ("--gres=gpu:1" in kinds[c["JobId"]]) == (len(inside) == 3)  # GPU jobs see their GPU
        if "-N" in kinds[c["JobId"]]:
            assert len(c["nodes"]) == 2
    # the simulator's makespan for the same jobs, dispatcher and predictor
    system = System.build("local", [NodeGroup("g", 2, {"core": 8, "mem": 8000, "gpu": 2}),
                                    NodeGroup("c", 2, {"core": 4, "mem": 4000, "gpu": 0})])
    sim = cpd.simulate(system, [_sim_job(i, kinds[i], 2) for i in sorted(kinds, key=int)], dispatcher, "last2")
    makespan = sim.summary["makespan"]
    print(f"live {live:.1f} s, simulated makespan {makespan} s")
    assert live < 2 * makespan + 15  # Slurm starts released jobs on its 1-second ticks


def _running(env: dict[str, str], ids: set[str]) -> int:
    return sum(1 for j in jobs(env) if str(j["job_id"]) in ids and j["job_state"] == "RUNNING")


def _held(env: dict[str, str], ids: set[str]) -> list[str]:
    return [str(j["job_id"]) for j in jobs(env) if str(j["job_id"]) in ids and j["priority"] == 0]


def test_a_dead_driver_fails_open_and_a_new_one_takes_over(cluster: dict[str, str], tmp_path: Path) -> None:
    """SIGKILLed while jobs wait: once its lease is out, Slurm's own scheduler runs them; a
    restarted driver dispatches the next jobs again; every job runs exactly once."""
    out, state, seconds = Path(cluster["SLURM_CONF"]).parent.parent / "failopen", tmp_path / "state", 4
    lease(cluster, "closed")  # submitted before any driver: held
    first = set(_submit(cluster, out, 50, 3))
    driver = _driver(cluster, state, "--dispatcher", "easy", "--lease", str(seconds))
    # until the driver has taken over every held job (a share per round): a driver killed before
    # leaves the rest held, as the lua does without a driver
    wait_for(lambda: _running(cluster, first) >= 3 and not _held(cluster, first), 60,
             "a few jobs running, none held")
    driver.kill()  # SIGKILL: nothing of the driver survives but Slurm's state and the journal
    driver.communicate()
    killed = time.time()
    waiting = [j for j in jobs(cluster) if str(j["job_id"]) in first and j["job_state"] == "PENDING"]
    assert waiting, "the kill came after every job was decided"
    # none held: each deferred under the lease, or pinned by the driver just before its death (then
    # Slurm starts it there)
    odd = [(j["job_id"], j["admin_comment"], j["priority"], j["state_reason"]) for j in waiting
           if j["priority"] == 0 or not (j["admin_comment"].startswith("cpdispatch:wait") or j["required_nodes"])]
    assert not odd and any(j["admin_comment"].startswith("cpdispatch:wait") for j in waiting), odd
    wait_for(lambda: _finished(cluster, first), seconds + 120, "the first 50 completed under Slurm's own scheduler")
    by_slurm = [j for j in jobs(cluster) if str(j["job_id"]) in first
                and j["admin_comment"].startswith("cpdispatch:wait")]  # never pinned: Slurm placed them
    assert by_slurm and min(j["start_time"] for j in by_slurm) <= killed + seconds + 8  # 2-s scheduling passes
    second = _driver(cluster, state, "--dispatcher", "easy", "--lease", str(seconds))
    wait_for(lambda: (Path(cluster["SLURM_CONF"]).parent / "cpdispatch.lease").stat().st_mtime > killed + 1, 30,
             "the new driver's lease")
    following = set(_submit(cluster, out, 50, 1))
    try:
        wait_for(lambda: _finished(cluster, following), 180, "the next 50 completed")
    finally:
        second.send_signal(signal.SIGINT)
        second.communicate(timeout=30)
    assert second.returncode == 130
    _check_ran_where_pinned(cluster, following, state, out)  # each once, where the new driver put it
    done = [c["JobId"] for c in completions(cluster) if c["JobId"] in first | following]
    assert sorted(done) == sorted(first | following)  # nothing ran twice
    assert len([r for r in read_journal(state / "journal.jsonl") if r["kind"] == "start"]) == 2


def test_fail_closed_starts_nothing_while_the_driver_is_dead(cluster: dict[str, str], tmp_path: Path) -> None:
    state = tmp_path / "state"
    once = [sys.executable, "-m", "cpdispatch", "slurm", "dispatch", "--once", "--dispatcher", "fifo", "--state-dir",
            str(state), "--lease", "3"]
    assert subprocess.run([*once, "--fail-closed"], env=cluster, capture_output=True, check=False).returncode == 0
    ids = set(_submit(cluster, tmp_path / "out", 5, 1))
    time.sleep(3 + 5)  # the lease is long out, as is a scheduling pass
    mine = [j for j in jobs(cluster) if str(j["job_id"]) in ids]
    assert all(j["job_state"] == "PENDING" and j["priority"] == 0 for j in mine)
    assert subprocess.run(once, env=cluster, capture_output=True, check=False).returncode == 0  # back, open
    wait_for(lambda: _finished(cluster, ids), 60, "the held jobs completed once a driver came back")


def test_shadow_sends_no_command(cluster: dict[str, str], tmp_path: Path) -> None:
    state = tmp_path / "state"
    lease(cluster, "closed")
    ids = set(_submit(cluster, tmp_path / "out", 5, 1))
    proc = subprocess.Popen([sys.executable, "-m", "cpdispatch", "slurm", "dispatch", "--shadow", "--poll", "0.3",
                             "--dispatcher", "fifo", "--state-dir", str(state)], env=cluster, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    wait_for(lambda: sum(1 for r in read_journal(state / "journal.jsonl") if r["kind"] == "decision") >= 3, 60,
             "three rounds that decided")
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    records = list(read_journal(state / "journal.jsonl"))
    decisions = [r for r in records if r["kind"] == "decision"]
    would = {s["job"] for r in decisions for s in r["starts"]}
    # each counted once, not once per round; the -n 6 job may wait beside the others (Slurm lays it out)
    assert f"(shadow: no command sent): {len(would)} jobs would start" in out
    assert all(r["shadow"] and {s["job"] for s in r["starts"]} | set(r["next_round"]) == ids for r in decisions)
    assert len(would) >= 4
    time.sleep(1.5)
    mine = [j for j in jobs(cluster) if str(j["job_id"]) in ids]
    assert all(j["job_state"] == "PENDING" and j["priority"] == 0 and not j["required_nodes"] for j in mine)
    assert not [r for r in records if r["kind"] in ("pins", "release", "result")]
    capped = subprocess.run([sys.executable, "-m", "cpdispatch", "slurm", "dispatch", "--shadow", "--once",
                             "--max-starts", "2", "--dispatcher", "fifo", "--state-dir", str(state)], env=cluster,
                            capture_output=True, text=True, check=False)
    assert capped.returncode == 0, capped.stderr
    last = [r for r in read_journal(state / "journal.jsonl") if r["kind"] == "decision"][-1]
    assert len(last["starts"]) == 2 and len(last["next_round"]) == 3  # the others are decided again next round
    why = {w["job"]: w["why"] for w in read_status(state)["waiting"]}
    assert all(why[j].startswith("decided again next round: ") for j in last["next_round"]), why
    run(cluster, "scancel", *ids)


def test_live_options_are_checked(tmp_path: Path) -> None:
    from .test_cli import cli

    code, _, err = cli("slurm", "dispatch", "--predictor", "real", "--state-dir", str(tmp_path))
    assert code == 2 and "run times known in advance" in err and "last2" in err and "tsafrir" not in err
    code, _, err = cli("slurm", "dispatch", "--dispatcher", "nope", "--state-dir", str(tmp_path))
    assert code == 2 and "nope" in err


def test_replay_of_kth_ends_with_the_comparison(cluster: dict[str, str], workloads_dir: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from .test_cli import cli

    monkeypatch.setenv("SLURM_CONF", cluster["SLURM_CONF"])
    code, out, err = cli("slurm", "replay", str(workloads_dir / "KTH-SP2-1996-2.1-cln.swf.gz"), "--time-scale",
                         "4000", "--limit-jobs", "100", "--dispatcher", "pcp20", "--predictor", "last2",
                         "--out", str(tmp_path / "replay"), "--state-dir", str(tmp_path / "state"))
    assert code == 0, err
    print(out)
    assert "12 never fit the system" in out  # KTH jobs wider than the cluster's 24 cores
    for row in ("mean wait (s)", "median wait (s)", "mean bounded slowdown", "makespan (s)", "same nodes"):
        assert row in out
    rows = pd.read_csv(tmp_path / "replay" / "comparison.csv")
    assert f"{len(rows)} jobs compared" in out and len(rows) >= 85
    assert set(rows["state"]) == {"COMPLETED"} and (rows["live_wait"] >= 0).all() and (rows["sim_wait"] >= 0).all()
    assert (rows["live_run"] - rows["sleep_s"]).abs().max() <= 2  # each job slept its compressed run time


def test_replay_systems_are_checked() -> None:
    from cpdispatch.slurm.replay import sbatch_request, specs_for

    with pytest.raises(CpdispatchError, match="at most 64 slurmd"):
        specs_for(System.preset("kth-sp2"))
    with pytest.raises(CpdispatchError, match="core, mem and gpu only"):
        specs_for(System.preset("eurora"))
    types = ("core", "mem", "gpu")
    assert sbatch_request(Job("a", 0, 3, (2, 500, 0), 60, 1), types) == ["-c", "2", "--mem-per-cpu=250", "-n", "3"]
    assert sbatch_request(Job("b", 0, 2, (1, 0, 1), 60, 1), types) == ["-c", "1", "-N", "2", "--ntasks-per-node=1",
                                                                        "--gres=gpu:1"]
    specs = specs_for(System.build("s", [NodeGroup("g", 2, {"core": 4, "gpu": 1})]))
    assert [(s.name, s.cpus, s.memory_mb, s.gpus) for s in specs] == [("n1", 4, 400, 1), ("n2", 4, 400, 1)]


def test_replay_on_a_cluster_shaped_like_a_system(workloads_dir: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """`--system FILE`: the replay starts its own local cluster with those nodes, stops it, and
    leaves no folder behind (its cluster's and its journal's are temporary)."""
    from .test_cli import cli

    with running_cluster(1, 0):  # (only to skip where no cluster can run)
        pass
    toml = tmp_path / "two.toml"
    toml.write_text('name = "two"\n[[nodes]]\ngroup = "n"\ncount = 2\nresources = { core = 16, mem = 4000 }\n')
    temp = Path(tempfile.mkdtemp(prefix="cpdispatch-test-temp-"))  # munged needs a path all can traverse
    temp.chmod(0o755)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    try:
        code, out, err = cli("slurm", "replay", str(workloads_dir / "KTH-SP2-1996-2.1-cln.swf.gz"), "--system",
                             str(toml), "--time-scale", "20000", "--limit-jobs", "15", "--dispatcher", "easy")
        assert code == 0, err
        assert "jobs compared" in out and "mean wait (s)" in out
        left = subprocess.run(["pgrep", "-f", str(temp)], capture_output=True, text=True, check=False)
        assert not left.stdout.strip()  # the daemons it started are gone
        assert not list(temp.iterdir())  # and so are its folders
    finally:
        shutil.rmtree(temp, ignore_errors=True)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_placement_never_overbooks(data: st.DataObject) -> None:
    """Whatever nodes a dispatcher proposes, what `place` returns fits the free amounts, keeps a
    `-N K` job's units on distinct allowed nodes, and is None only when no such placement exists."""
    n = data.draw(st.integers(1, 6))
    cap = np.array(data.draw(st.lists(st.tuples(st.integers(0, 8), st.integers(0, 800), st.integers(0, 2)),
                                      min_size=n, max_size=n)), dtype=np.int64)
    used = np.array([[data.draw(st.integers(0, int(c))) for c in row] for row in cap], dtype=np.int64)
    free = cap - used
    allowed = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    units = data.draw(st.integers(1, 4))
    per = {"core": data.draw(st.integers(1, 4)), "mem": data.draw(st.integers(0, 300)),
           "gpu": data.draw(st.integers(0, 1))}
    request = Request(units, per, data.draw(st.booleans()), data.draw(st.booleans()))
    req = request.req(("core", "mem", "gpu"))
    chosen = tuple(data.draw(st.lists(st.integers(0, n - 1), min_size=units, max_size=units)))
    nodes, _ = place(chosen, request, req, free, cap, allowed)

    def valid(placement: tuple[int, ...]) -> bool:
        counts = {k: placement.count(k) for k in set(placement)}
        return all(allowed[k] and (not request.distinct or c == 1) and (free[k] >= c * np.asarray(req)).all()
                   and (not request.exclusive or (free[k] == cap[k]).all()) for k, c in counts.items())

    if nodes is None:  # then no placement at all exists
        assert not any(valid(p) for p in itertools.combinations_with_replacement(range(n), units))
        return
    assert valid(tuple(nodes))
    assert len(nodes) == units and all(allowed[k] for k in nodes)
    counts = {k: nodes.count(k) for k in set(nodes)}
    if request.distinct:
        assert set(counts.values()) == {1}
    for k, c in counts.items():
        assert (free[k] >= c * np.asarray(req)).all()
        if request.exclusive:
            assert (free[k] == cap[k]).all()


def test_nodes_of_later_slurm_versions_and_features() -> None:
    from cpdispatch.slurm.state import build_system, feature_match, read_node

    raw = {"name": "g1", "state": ["IDLE", "DRAIN"], "cpus": 8, "real_memory": 800, "gres": "gpu:2",
           "partitions": ["main"], "active_features": "a100,ib"}
    drained = read_node(raw, {"main"})
    assert drained.unusable == "state idle+DRAIN" and drained.features == {"a100", "ib"}
    cpu = read_node({"name": "c1", "state": "mixed", "cpus": 4, "real_memory": 400, "partitions": ["main"]}, {"main"})
    assert not cpu.unusable
    system = build_system([cpu], "s", [drained, cpu])
    assert system.types == ("core", "mem", "gpu") and system.node_names == ("c1",)  # a GPU request still counts
    assert feature_match("a100&ib", drained.features) and not feature_match("a100,v100", drained.features)
    assert feature_match("a100|v100", frozenset())  # left to Slurm


def test_bad_live_settings_and_unreachable_slurm(tmp_path: Path) -> None:
    from cpdispatch.slurm.replay import compare

    from .test_cli import cli

    code, _, err = cli("slurm", "dispatch", "--rehold-after", "0", "--state-dir", str(tmp_path))
    assert code == 2 and "--rehold-after" in err
    conf = tmp_path / "slurm.conf"  # a controller nobody runs
    conf.write_text(f"ClusterName=none\nSlurmctldHost=localhost\nSlurmctldPort={_closed_port()}\n")
    (tmp_path / "file").write_text("")
    code, _, err = cli("slurm", "dispatch", "--state-dir", str(tmp_path / "file"), "--once", "--conf", str(conf))
    assert code == 2 and "cannot write" in err
    t0 = time.monotonic()
    code, _, err = cli("slurm", "dispatch", "--state-dir", str(tmp_path / "st"), "--conf", str(tmp_path / "x.conf"))
    assert code == 2 and err.strip().endswith(f"--conf {tmp_path / 'x.conf'}: no such file")
    assert time.monotonic() - t0 < 10 and len(err.strip().splitlines()) == 1  # before any round
    with pytest.raises(CpdispatchError, match="nothing to compare"):
        compare([])
    # a driver whose Slurm does not answer skips rounds instead of dying (a slurmctld restart)
    env = {**os.environ, "SLURM_CONF": str(conf)}
    proc = subprocess.Popen([sys.executable, "-m", "cpdispatch", "slurm", "dispatch", "--state-dir",
                             str(tmp_path / "st"), "--poll", "0.2"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    time.sleep(4)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 143 and "round skipped" in err and "Traceback" not in err
    assert re.search(r"[1-9]\d* rounds skipped", out)


def test_scontrol_text_reads_as_squeue_json(cluster: dict[str, str]) -> None:
    """The driver reads jobs from `scontrol -d -o show job` (4 times faster at 2,800 jobs); every
    field it uses equals what `squeue --json` gives, on jobs of every kind."""
    from dataclasses import asdict

    from cpdispatch.slurm.commands import SlurmCommands

    lease(cluster, "closed")
    sb = ["sbatch", "--parsable", "-o", "/dev/null"]
    ids = [run(cluster, *sb, *args).stdout.strip() for args in (
        ["-t", "5", "-c", "2", "--wrap", "sleep 60"], ["-t", "5", "-N", "2", "-c", "2", "--gres=gpu:1", "--wrap",
                                                      "sleep 60"],
        ["-t", "5", "-n", "6", "--wrap", "sleep 60"], ["-t", "5", "--exclusive", "--wrap", "true"],
        ["-t", "5", "--array=0-3", "--wrap", "true"], ["-t", "5", "--mem=500", "-J", "a name with spaces", "--wrap",
                                                       "true"],
        ["-N", "1-2", "-t", "5", "--wrap", "true"], ["-N", "2", "-t", "90", "--wrap", "true"],
        ["-t", "2-00:00:00", "--mem-per-cpu=1G", "-n", "2", "--gres=gpu:2", "--wrap", "true"],
        ["--wrap", "true"], ["-t", "5", "--begin=now+600", "--wrap", "true"])]
    ids.append(run(cluster, *sb, f"--dependency=afterok:{ids[0]}", "-t", "5", "--wrap", "true").stdout.strip())
    for job_id, nodes in zip(ids[:3], ("n1", "n1,n2", "n3,n4")):
        run(cluster, "scontrol", "update", f"JobId={job_id}", f"NodeList={nodes}", "AdminComment=cpdispatch:t:1:1")
        run(cluster, "scontrol", "release", job_id)
    wait_for(lambda: sum(j["job_state"] == "RUNNING" for j in jobs(cluster)) >= 3, 30, "three jobs running")
    commands = SlurmCommands(cluster["SLURM_CONF"])
    text = {j.id: asdict(j) for j in commands.jobs()}
    reference = {j.id: asdict(j) for j in commands.jobs_json()}
    try:
        assert sorted(text) == sorted(reference) and len(text) >= len(ids) + 3  # the array's four tasks
        for job_id, ref in reference.items():
            got = text[job_id]
            if ref["state"] == "PENDING":  # Slurm's expected start and end of a pending job
                for d in (got, ref):
                    d.pop("start"), d.pop("end")
            if not ref["nodes"] and ref["state"] != "PENDING":  # cancelled before it ran: the JSON
                got.pop("request"), ref.pop("request")  # loses its CPUs (`cpus` null), the text has them
            assert got == ref, (job_id, {k: (got[k], ref[k]) for k in ref if got[k] != ref[k]})
        assert text[ids[5]]["name"] == "a name with spaces" and text[ids[1]]["usage"]["n2"]["gpu"] == 1
    finally:
        run(cluster, "scancel", *ids)


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_no_slurm_configuration_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from .test_cli import cli

    if Path("/etc/slurm/slurm.conf").exists():
        pytest.skip("this host has a Slurm configuration in its default place")
    monkeypatch.delenv("SLURM_CONF", raising=False)
    code, _, err = cli("slurm", "dispatch", "--state-dir", str(tmp_path))
    assert code == 2 and "no Slurm configuration: set SLURM_CONF or give --conf" in err
    code, out, _ = cli("slurm", "dispatch", "--help")
    flat = re.sub(r"-\s+", "-", " ".join(out.split()))  # argparse wraps lines at hyphens too
    assert code == 0 and "None: a temporary" not in flat and "(default: cpdispatch-slurm-state)" in flat
    code, out, _ = cli("slurm", "replay", "--help")
    assert code == 0 and "removed after a replay that finished" in " ".join(out.split())


def test_dependencies_wait_and_bad_pins_are_taken_back(cluster: dict[str, str], tmp_path: Path) -> None:
    """A job whose dependency is unmet stays held (and `slurm status` says why); a released job
    Slurm cannot run where it is pinned (a GPU job on a CPU node, as a broken earlier driver might
    leave it) returns to the queue and then starts where it can run."""
    from .test_cli import cli

    lease(cluster, "closed")
    first = run(cluster, "sbatch", "--parsable", "-t", "1", "-o", "/dev/null", "--wrap", "sleep 3").stdout.strip()
    after = run(cluster, "sbatch", "--parsable", "-t", "1", "-o", "/dev/null", f"--dependency=afterok:{first}",
                "--wrap", "true").stdout.strip()
    gpu = run(cluster, "sbatch", "--parsable", "-t", "1", "-o", "/dev/null", "--gres=gpu:1", "--wrap", "true")
    gpu_id = gpu.stdout.strip()
    assert run(cluster, "scontrol", "update", f"JobId={gpu_id}", "NodeList=n3",
               f"AdminComment=cpdispatch:test:{int(time.time())}:0").returncode == 0
    assert run(cluster, "scontrol", "release", gpu_id).returncode == 0
    state = tmp_path / "state"

    def once() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cpdispatch", "slurm", "dispatch", "--once", "--dispatcher",
                               "fifo", "--state-dir", str(state), "--fail-closed"], env=cluster, capture_output=True,
                              text=True, check=False)

    wait_for(lambda: job(cluster, gpu_id)["state_reason"] != "None", 20, "Slurm's verdict on the bad pin")
    done = once()
    assert done.returncode == 0, done.stderr
    assert f"job {after} stays held: dependency not met" in done.stderr
    assert job(cluster, after)["priority"] == 0
    code, out, _ = cli("slurm", "status", "--state-dir", str(state))
    assert code == 0 and re.search(rf"{after}  dependency not met \(afterok:{first}", out), out
    assert "lease (closed, 10 s" in out and "new jobs are held while no driver runs" in out
    # Slurm itself holds a job it cannot run where pinned (BadConstraints, priority 0); others the
    # driver holds again: either way it returns to the queue and is pinned where it can run
    wait_for(lambda: once().returncode == 0 and job(cluster, gpu_id)["job_state"] == "COMPLETED", 60,
             "the GPU job started where it can run")
    assert expand(job(cluster, gpu_id)["nodes"])[0] in ("n1", "n2")
    pins = _pins(state)[gpu_id]
    assert pins and pins[-1][0] in ("n1", "n2")
    run(cluster, "scancel", first, after)
