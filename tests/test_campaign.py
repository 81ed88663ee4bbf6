"""Campaigns: the file's checks, run keys, Dask runs (local workers and a real scheduler with two
real workers), resuming after an interruption, and the Parquet results."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import psutil
import pytest

from cpdispatch.campaign import load_campaign, run_campaign
from cpdispatch.campaign.collect import collect
from cpdispatch.campaign.runner import build_workload, complete_runs
from cpdispatch.campaign.spec import run_key
from cpdispatch.errors import CpdispatchError, InputError

from .conftest import WORKLOADS, needs_traces
from .test_cli import cli

KTH = WORKLOADS / "KTH-SP2-1996-2.1-cln.swf.gz"
pytestmark = needs_traces  # the campaigns here read KTH-SP2

SMALL = f"""
name = "small"
replicas = 2
jitter = 60
dispatchers = ["fifo", "easy", {{ name = "pcp20", label = "pcp20-b10", options = {{ fast_budget = 0.01 }} }}]
predictors = ["real", "last2"]
load_factors = [1.0, 2.0]

[[workloads]]
generate = "eurora"
jobs = 60
system = "eurora"

[[workloads]]
path = "{KTH}"
system = "kth-sp2"
limit_jobs = 150
"""


def _write(tmp_path: Path, text: str = SMALL, name: str = "c.toml") -> Path:
    """The campaign file, its trace path relative to it (as in campaigns/)."""
    path = tmp_path / name
    path.write_text(text.replace(str(KTH), os.path.relpath(KTH, tmp_path)))
    return path


def test_runs_are_the_product_and_keys_ignore_order(tmp_path: Path) -> None:
    campaign = load_campaign(_write(tmp_path))
    assert len(campaign.runs) == 2 * 2 * 3 * 2 * 2  # workloads x replicas x dispatchers x predictors x loads
    shuffled = SMALL.replace('replicas = 2\njitter = 60', 'jitter = 60\nreplicas = 2').replace(
        "options = { fast_budget = 0.01 } }", "options = { fast_budget = 0.01 }, label = \"pcp20-b10\" }").replace(
        'name = "pcp20", label = "pcp20-b10",', 'name = "pcp20",')
    again = load_campaign(_write(tmp_path, shuffled, "d.toml"))
    assert sorted(map(run_key, campaign.runs)) == sorted(map(run_key, again.runs))
    assert len(set(map(run_key, campaign.runs))) == len(campaign.runs)
    # a workload's own loads replace the campaign's
    own = load_campaign(_write(tmp_path, SMALL.replace('jobs = 60\n', 'jobs = 60\nload_factors = [3.0]\n'), "f.toml"))
    assert sorted({r["load_factor"] for r in own.runs if "generate" in r["workload"]}) == [3.0]
    assert len(own.runs) == 2 * 3 * 2 * 1 + 2 * 3 * 2 * 2
    # a workload's own dispatchers: a subset of the campaign's, by label
    only_easy = SMALL.replace('limit_jobs = 150\n', 'limit_jobs = 150\ndispatchers = ["easy"]\n')
    sub = load_campaign(_write(tmp_path, only_easy, "g.toml"))
    assert {r["dispatcher"]["label"] for r in sub.runs if "path" in r["workload"]} == {"easy"}
    assert len(sub.runs) == 2 * 3 * 2 * 2 + 2 * 1 * 2 * 2
    # a dispatcher's own predictors: a subset of the campaign's; the other runs keep their keys
    fifo_real = SMALL.replace('dispatchers = ["fifo",', 'dispatchers = [{ name = "fifo", predictors = ["real"] },')
    sub = load_campaign(_write(tmp_path, fifo_real, "h.toml"))
    assert {r["predictor"] for r in sub.runs if r["dispatcher"]["name"] == "fifo"} == {"real"}
    assert len(sub.runs) == len(campaign.runs) - 2 * 2 * 1 * 2
    assert set(map(run_key, sub.runs)) < set(map(run_key, campaign.runs))
    # no jitter: a trace is replayed as it is, once
    plain = load_campaign(_write(tmp_path, SMALL.replace("jitter = 60", "jitter = 0"), "e.toml"))
    assert sum(1 for r in plain.runs if "path" in r["workload"]) == 12


def test_jitter_moves_submissions_within_bounds_and_keeps_order(tmp_path: Path) -> None:
    campaign = load_campaign(_write(tmp_path))
    trace_runs = [r for r in campaign.runs if "path" in r["workload"]]
    base = build_workload({**trace_runs[0], "jitter": 0})
    one, two = (build_workload({**trace_runs[0], "replica": k}) for k in (1, 2))
    for jittered in (one, two):
        by_id = {j.id: j.submit for j in base.jobs}
        assert all(abs(j.submit - by_id[j.id]) <= 60 for j in jittered.jobs)
        assert [j.submit for j in jittered.jobs] == sorted(j.submit for j in jittered.jobs)
    assert [j.submit for j in one.jobs] != [j.submit for j in two.jobs]


@pytest.mark.parametrize(("edit", "key"), [
    (("dispatchers = [", "dispatcher = ["), "dispatcher"),  # unknown key -> did you mean
    (('"fifo"', '"fifoo"'), "dispatchers[0]"),
    (("fast_budget", "fast_budgt"), "dispatchers[2]"),
    (('predictors = ["real"', 'predictors = ["nope"'), "predictors[0]"),
    (("load_factors = [1.0", "load_factors = [0"), "load_factors[0]"),
    (("limit_jobs = 150", "limit_jobs = 0"), "workloads[1].limit_jobs"),
    (("generate = \"eurora\"", "generate = \"curie\""), "workloads[0].generate"),
    ((str(KTH), "/nonexistent/trace.swf"), "workloads[1].path"),
    (("jitter = 60", 'jitter = 60\nroom = "yes"'), "room"),
    (("limit_jobs = 150", 'limit_jobs = 150\ndispatchers = ["pcp20"]'), "workloads[1].dispatchers"),
    (('dispatchers = ["fifo",', 'dispatchers = [{ name = "fifo", predictors = ["walltime"] },'),
     "dispatchers[0].predictors"),
])
def test_bad_campaign_file_names_the_key(tmp_path: Path, edit: tuple[str, str], key: str) -> None:
    path = _write(tmp_path, SMALL.replace(*edit, 1))
    with pytest.raises(InputError) as err:
        load_campaign(path)
    assert err.value.field == key, str(err.value)
    code, _, stderr = cli("campaign", "run", str(path), "--out", str(tmp_path / "out"))
    assert code == 2 and f"field '{key}'" in stderr and "Traceback" not in stderr
    assert not (tmp_path / "out").exists()


def test_the_room_probe_runs_only_in_a_campaign_that_asks_for_it(tmp_path: Path) -> None:
    """`room = true` adds the probe's figures to each run's summary; without it a run has none,
    and its key is the one it had before the key existed (earlier campaign folders stay valid)."""
    from cpdispatch.campaign.runner import run_dir, run_one

    text = SMALL.replace("replicas = 2", "replicas = 1").replace('"real", "last2"]', '"real"]')
    plain = [r for r in load_campaign(_write(tmp_path, text)).runs if r["dispatcher"]["name"] == "fifo"]
    asked = [r for r in load_campaign(_write(tmp_path, "room = true\n" + text, "r.toml")).runs
             if r["dispatcher"]["name"] == "fifo"]
    assert "room" not in plain[0] and asked[0]["room"] is True
    assert run_key(plain[0]) == run_key({k: v for k, v in asked[0].items() if k != "room"}) != run_key(asked[0])
    for settings, has_room in ((plain[0], False), (asked[0], True)):
        assert run_one(settings, str(tmp_path / "out"))["status"] == "done"
        summary = json.loads((run_dir(tmp_path / "out", run_key(settings)) / "summary.json").read_text())
        assert ("room" in summary) is has_room


def _results(out: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What must not depend on how the campaign ran: figures and schedules, not wall times."""
    runs = pd.read_parquet(out / "runs.parquet")
    keep = ["key", "workload", "dispatcher", "predictor", "load_factor", "replica", "status", "jobs", "completed",
            "rejected", "avg_wait", "avg_bounded_slowdown", "makespan", "dispatch_calls"]
    jobs = pd.read_parquet(out / "jobs.parquet")
    return (runs[keep].sort_values("key").reset_index(drop=True),
            jobs.sort_values(["key", "job_id"]).reset_index(drop=True))


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small campaign run once, uninterrupted, on two local Dask workers."""
    tmp = tmp_path_factory.mktemp("reference")
    out = tmp / "out"
    counts = run_campaign(_write(tmp), out, workers=2, progress=False)
    assert counts["done"] == 48 and counts["failed"] == 0
    return out


def test_rerun_skips_complete_runs_and_collect_rebuilds_from_folders(reference: Path, tmp_path: Path) -> None:
    before = {p: p.stat().st_mtime_ns for p in complete_runs(reference)}
    counts = run_campaign(_write(tmp_path), reference, workers=1, progress=False)
    assert counts == {"total": 48, "skipped_done": 48, "done": 0, "failed": 0, "not_retried": 0}
    assert {p: p.stat().st_mtime_ns for p in complete_runs(reference)} == before
    runs, jobs = _results(reference)
    (reference / "runs.parquet").unlink()
    (reference / "jobs.parquet").unlink()
    partial = reference / "runs" / ".cut-short.0123abcd.partial"  # killed between its run.json and its rename
    shutil.copytree(complete_runs(reference)[0].parent, partial)
    try:
        code, out, err = cli("campaign", "collect", str(reference))
        assert code == 0 and "48 runs done, 0 failed" in out, err
    finally:
        shutil.rmtree(partial)
    again_runs, again_jobs = _results(reference)
    pd.testing.assert_frame_equal(runs, again_runs)
    pd.testing.assert_frame_equal(jobs, again_jobs)
    assert len(jobs) == 24 * 60 + 24 * 150  # every job of every run, settings as columns
    assert set(jobs["dispatcher"]) == {"fifo", "easy", "pcp20-b10"}
    run = json.loads(complete_runs(reference)[0].read_text())
    assert run["versions"]["ortools"] and "settings" in run and "solver" in run


def test_blocks_pair_configurations_over_blocks_of_the_trace(reference: Path) -> None:
    code, out, err = cli("campaign", "blocks", str(reference), "--reference", "easy:real", "--days", "0.25")
    assert code == 0, err
    assert out.count("### ") == 2 and "| easy | real |" in out and out.count(" ref |") == 2
    assert "vs easy real: Δ bsld (95% CI)" in out
    code, _, err = cli("campaign", "blocks", str(reference), "--reference", "easy")
    assert code != 0 and "DISPATCHER:PREDICTOR" in err


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_interrupted_campaign_resumes_to_the_same_results(reference: Path, tmp_path: Path, signum: int) -> None:
    """Stopped (SIGTERM) or killed (SIGKILL: a crash, a reboot) half-way, then run again."""
    path, out = _write(tmp_path), tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "cpdispatch", "campaign", "run", str(path), "--out", str(out),
                             "--workers", "2", "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + 120
    while len(complete_runs(out)) < 10 and time.monotonic() < deadline:
        time.sleep(0.05)
    workers = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=60)
    if signum == signal.SIGTERM:
        assert proc.returncode == 143 and "the same command resumes it" in stderr, stderr
    else:
        assert proc.returncode == -signal.SIGKILL
    _, alive = psutil.wait_procs(workers, timeout=60)  # the local workers notice their parent is gone and stop
    assert not alive, alive
    first = {p.parent.name: p.stat().st_mtime_ns for p in complete_runs(out)}
    assert 10 <= len(first) < 48
    code, stdout, stderr = cli("campaign", "status", str(out))
    assert code == 0 and f"{'all':<20} {len(first):>6}" in stdout, stdout
    code, stdout, stderr = cli("campaign", "run", str(path), "--out", str(out), "--workers", "2")
    assert code == 0, stderr
    assert f"{48 - len(first)} runs done, 0 failed, {len(first)} were complete" in stdout
    second = {p.parent.name: p.stat().st_mtime_ns for p in complete_runs(out)}
    assert all(second[k] == t for k, t in first.items())  # no complete run ran twice
    assert not list((out / "runs").glob(".*.partial"))
    for mine, ref in zip(_results(out), _results(reference)):
        pd.testing.assert_frame_equal(mine, ref)


def test_failed_run_is_recorded_and_retried(tmp_path: Path) -> None:
    text = SMALL.replace('dispatchers = ["fifo", "easy", { name = "pcp20", label = "pcp20-b10", options = '
                         '{ fast_budget = 0.01 } }]', 'dispatchers = ["fifo", "cpd_failing_plugin:explode"]')
    text = text.replace("replicas = 2", "replicas = 1").replace("load_factors = [1.0, 2.0]", "load_factors = [1.0]")
    (tmp_path / "cpd_failing_plugin.py").write_text(
        "def explode(snapshot):\n    raise RuntimeError('boom at ' + str(snapshot.time))\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    path, out = _write(tmp_path, text), tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "cpdispatch", "campaign", "run", str(path), "--out", str(out),
                           "--workers", "1"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "4 runs done, 4 failed" in proc.stdout
    runs = pd.read_parquet(out / "runs.parquet")
    failed = runs[runs["status"] == "failed"]
    assert len(failed) == 4 and failed["error"].str.contains("RuntimeError: boom at").all()
    record = json.loads(next((out / "runs").glob("*.failed.json")).read_text())
    assert "Traceback" in record["traceback"] and "in dispatcher" in record["traceback"]
    proc = subprocess.run([sys.executable, "-m", "cpdispatch", "campaign", "run", str(path), "--out", str(out),
                           "--workers", "1", "--no-retry-failed"], capture_output=True, text=True, env=env)
    assert "0 runs done, 0 failed, 4 were complete" in proc.stdout and proc.returncode == 0
    proc = subprocess.run([sys.executable, "-m", "cpdispatch", "campaign", "run", str(path), "--out", str(out),
                           "--workers", "1"], capture_output=True, text=True, env=env)
    assert "0 runs done, 4 failed" in proc.stdout  # retried (and failing again)


class _DaskCluster:
    """A real `dask scheduler` and real `dask worker` processes on localhost (no nanny: a worker's
    process is the one we start, so killing it kills the worker)."""

    def __init__(self, tmp_path: Path, workers: int) -> None:
        dask = shutil.which("dask", path=str(Path(sys.executable).parent))
        assert dask, "the dask command comes with distributed"
        info = tmp_path / "scheduler.json"
        self.procs = [subprocess.Popen([dask, "scheduler", "--scheduler-file", str(info), "--port", "0",
                                        "--no-dashboard", "--host", "127.0.0.1"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
        deadline = time.monotonic() + 60
        self.address = ""
        while not self.address and time.monotonic() < deadline:  # the file appears before its content
            try:
                self.address = json.loads(info.read_text())["address"]
            except (OSError, ValueError, KeyError):
                time.sleep(0.1)
        assert self.address, "the dask scheduler wrote no address within 60 s"
        self.workers = [subprocess.Popen([dask, "worker", self.address, "--nthreads", "1", "--no-dashboard",
                                          "--no-nanny", "--name", f"w{i}"],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for i in range(workers)]
        self.procs += self.workers
        from distributed import Client

        with Client(self.address, timeout=60) as client:  # every worker connected before any run
            client.wait_for_workers(workers, timeout=120)

    def close(self) -> None:
        """Terminate, and kill what does not end within 10 s (a worker may hang in its graceful
        close once the scheduler is gone)."""
        for proc in reversed(self.procs):
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def test_real_scheduler_and_two_real_workers(reference: Path, tmp_path: Path) -> None:
    cluster = _DaskCluster(tmp_path, 2)
    try:
        out = tmp_path / "out"
        code, stdout, stderr = cli("campaign", "run", str(_write(tmp_path)), "--out", str(out), "--scheduler",
                                   cluster.address)
        assert code == 0 and "48 runs done, 0 failed" in stdout, stderr
        workers = {json.loads(p.read_text())["worker"] for p in complete_runs(out)}
        assert workers == {"w0", "w1"}  # both real workers took runs
        for mine, ref in zip(_results(out), _results(reference)):
            pd.testing.assert_frame_equal(mine, ref)
    finally:
        cluster.close()


def test_a_killed_worker_loses_nothing(reference: Path, tmp_path: Path) -> None:
    """One of two workers is killed (SIGKILL) half-way: the other finishes every run."""
    cluster = _DaskCluster(tmp_path, 2)
    try:
        out = tmp_path / "out"
        proc = subprocess.Popen([sys.executable, "-m", "cpdispatch", "campaign", "run", str(_write(tmp_path)),
                                 "--out", str(out), "--scheduler", cluster.address, "--no-progress"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while len(complete_runs(out)) < 10 and time.monotonic() < deadline:
            time.sleep(0.05)
        cluster.workers[1].kill()
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0 and "48 runs done, 0 failed" in stdout, stderr
        for mine, ref in zip(_results(out), _results(reference)):
            pd.testing.assert_frame_equal(mine, ref)
    finally:
        cluster.close()


def test_collect_of_an_empty_campaign(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    runs, jobs, done, failed = collect(tmp_path)
    assert (done, failed) == (0, 0) and pd.read_parquet(runs).empty


def test_shipped_campaigns_load_and_gpu_share_shapes_the_mix() -> None:
    root = Path(__file__).resolve().parents[1] / "campaigns"
    sizes = {p.stem: len(load_campaign(p).runs) for p in sorted(root.glob("*.toml"))}
    studies = {f"{s}-{v}" for s in ("pcp20", "ablation", "hetero", "quality") for v in ("small", "full")}
    assert set(sizes) == studies | {"correction"} and sizes["correction"] == 54
    hetero = load_campaign(root / "hetero-small.toml").runs
    mixes = {r["workload"]["label"]: build_workload(r) for r in hetero if r["replica"] == 1}
    gpu_jobs = {label: sum(1 for j in w.jobs if j.req[2] > 0) for label, w in mixes.items()}
    assert gpu_jobs["eurora-1500-gpu0.6"] > 1.3 * gpu_jobs["eurora-1500"]


def test_a_generated_workload_takes_the_generators_mix(tmp_path: Path) -> None:
    text = SMALL.replace('jobs = 60\nsystem = "eurora"', 'jobs = 60\nsystem = "eurora"\nmix = "gpu-contended"')
    runs = load_campaign(_write(tmp_path, text)).runs
    generated = next(r for r in runs if "generate" in r["workload"])
    assert generated["workload"]["mix"] == "gpu-contended" and generated["workload"]["label"].endswith("-gpu-contended")
    assert build_workload(generated).notes["generator"].endswith("mix='gpu-contended')")
    plain = next(r for r in load_campaign(_write(tmp_path, name="d.toml")).runs if "generate" in r["workload"])
    assert "mix" not in plain["workload"]  # the default mix leaves earlier campaigns' keys as they were
    bad = SMALL.replace('jobs = 60\nsystem = "eurora"', 'jobs = 60\nsystem = "eurora"\nmix = "nope"')
    with pytest.raises(InputError, match="unknown mix 'nope'") as exc:
        load_campaign(_write(tmp_path, bad, name="e.toml"))
    assert exc.value.field == "workloads[0].mix"



def test_a_generated_workload_can_hold_longer_jobs_and_a_charged_clock(tmp_path: Path) -> None:
    """`duration_factor` multiplies run times and walltimes (arrivals unchanged);
    `charge_dispatch_time` reaches the run's settings only when on (earlier keys stay)."""
    text = "charge_dispatch_time = true\n" + SMALL.replace(
        'jobs = 60\nsystem = "eurora"', 'jobs = 60\nsystem = "eurora"\nduration_factor = 20')
    runs = load_campaign(_write(tmp_path, text)).runs
    generated = next(r for r in runs if "generate" in r["workload"])
    assert generated["charge_dispatch_time"] and generated["workload"]["label"].endswith("-x20")
    plain = next(r for r in load_campaign(_write(tmp_path, name="d.toml")).runs if "generate" in r["workload"])
    base, longer = build_workload(plain), build_workload(generated)
    assert [j.submit for j in longer.jobs] == [j.submit for j in base.jobs]
    assert [j.runtime for j in longer.jobs] == [20 * j.runtime for j in base.jobs]
    assert "charge_dispatch_time" not in plain and "duration_factor" not in plain["workload"]
    bad = SMALL.replace('jobs = 60\nsystem = "eurora"', 'jobs = 60\nsystem = "eurora"\nduration_factor = 0')
    with pytest.raises(InputError, match="expected a number > 0") as exc:
        load_campaign(_write(tmp_path, bad, name="e.toml"))
    assert exc.value.field == "workloads[0].duration_factor"

TINY = """
name = "tiny"
dispatchers = ["fifo"]

[[workloads]]
generate = "eurora"
jobs = 20
system = "eurora"
"""


def _snapshot(root: Path) -> dict[str, tuple[int, bytes]]:
    """Every file under `root`: modification time and content."""
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, p.read_bytes()) for p in root.rglob("*") if p.is_file()}


def test_a_folder_holds_one_campaign(tmp_path: Path) -> None:
    spec, out = _write(tmp_path, TINY, "tiny.toml"), tmp_path / "out"
    code, stdout, stderr = cli("campaign", "run", str(spec), "--out", str(out), "--workers", "1")
    assert code == 0 and "1 runs done" in stdout, stderr
    before = _snapshot(out)
    for other in (TINY.replace('"fifo"', '"easy"'),  # the same name, other runs
                  TINY.replace('"tiny"', '"tiny2"')):  # the same runs, another name
        code, stdout, stderr = cli("campaign", "run", str(_write(tmp_path, other, "other.toml")), "--out", str(out))
        assert code == 2 and "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1, stderr
        assert f"--out {out}: holds another campaign ('tiny', 1 runs, from {spec})" in stderr
        assert "choose another --out, remove the folder, or run that campaign's file again to resume it" in stderr
        assert _snapshot(out) == before  # a refused run writes nothing
    # the same campaign, its keys in another order, from a copy elsewhere: resumed
    (tmp_path / "copy").mkdir()
    reordered = 'dispatchers = ["fifo"]\nname = "tiny"\n' + TINY.split('dispatchers = ["fifo"]')[1]
    copy = _write(tmp_path / "copy", reordered)
    code, stdout, stderr = cli("campaign", "run", str(copy), "--out", str(out), "--workers", "1")
    assert code == 0 and "0 runs done, 0 failed, 1 were complete" in stdout, stderr


def test_campaign_run_refuses_a_folder_holding_something_else(tmp_path: Path) -> None:
    spec, out = _write(tmp_path, TINY, "tiny.toml"), tmp_path / "notes"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    code, _, stderr = cli("campaign", "run", str(spec), "--out", str(out))
    assert code == 2 and f"--out {out}: not empty and not a campaign folder" in stderr, stderr
    assert [p.name for p in out.iterdir()] == ["notes.txt"]


def test_a_folder_of_an_earlier_version_compares_its_campaign_toml(tmp_path: Path) -> None:
    """Before the runs were saved beside it, a folder held only campaign.toml: its parsed content decides."""
    from cpdispatch.campaign import check_resumable

    spec, out = _write(tmp_path, TINY, "tiny.toml"), tmp_path / "out"
    out.mkdir()
    (out / "campaign.toml").write_text(TINY.replace("\n\n", "\n\n# the same campaign, other bytes\n"))
    check_resumable(load_campaign(spec), spec, out)
    (out / "campaign.toml").write_text(TINY.replace("jobs = 20", "jobs = 30"))
    with pytest.raises(CpdispatchError, match="holds another campaign \\(its campaign.toml\\)"):
        check_resumable(load_campaign(spec), spec, out)


@pytest.mark.parametrize("kind", ["missing", "empty", "demo"])
def test_report_collect_and_status_refuse_what_is_not_a_campaign_folder(tmp_path: Path, kind: str) -> None:
    folder = tmp_path / kind
    if kind == "empty":
        folder.mkdir()
    elif kind == "demo":
        code, _, stderr = cli("demo", "--jobs", "20", "--dispatchers", "fifo", "--out", str(folder))
        assert code == 0, stderr
    before = _snapshot(folder) if folder.exists() else None
    said = set()
    for args in (("report", str(folder), "--out", str(tmp_path / "r")), ("campaign", "collect", str(folder)),
                 ("campaign", "status", str(folder))):
        code, stdout, stderr = cli(*args)
        assert code == 2 and "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1, stderr
        said.add(stderr)
    assert len(said) == 1  # one test, one message, for the three commands
    assert said.pop().strip() == (f"cpdispatch: error: {folder}: no such folder" if kind == "missing" else
                                  f"cpdispatch: error: {folder}: not a campaign folder (no campaign-runs.json: "
                                  "run `campaign run` first)")
    assert not (tmp_path / "r").exists()
    assert (_snapshot(folder) if folder.exists() else None) == before


def test_missing_files_are_named_as_written_in_the_campaign_file(tmp_path: Path) -> None:
    """Through a symbolic link: the message shows the path of the file, not the link's target."""
    target = tmp_path / "target-folder"
    target.mkdir()
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "traces").symlink_to(target)
    trace = TINY.replace('generate = "eurora"\njobs = 20', 'path = "traces/gone.swf"')
    system = TINY.replace('system = "eurora"', 'system = "traces/my.toml"')
    cases = ((trace, "workloads[0].path", "no such trace file: traces/gone.swf"),
             (system, "workloads[0].system", "no such system file or preset: traces/my.toml"))
    for text, key, said in cases:
        spec = _write(tmp_path / "sub", text)
        code, _, stderr = cli("campaign", "run", str(spec), "--out", str(tmp_path / "out"))
        assert code == 2 and f"field '{key}': {said} (relative to the campaign file's folder {tmp_path / 'sub'})" \
            in stderr, stderr
        assert "target-folder" not in stderr
    assert not (tmp_path / "out").exists()
