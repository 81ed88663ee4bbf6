"""The Python API: README examples as written, examples/ scripts, dispatchers and predictors of
one's own (functions, objects, module:attr, entry-point plugins), validation of Python-built
workloads, and CLI runs reproduced by one `cpd.simulate` call."""

from __future__ import annotations

import csv
import json
import os
import re
import runpy
import subprocess
import sys
import warnings
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

import cpdispatch as cpd
from cpdispatch.campaign.spec import load_campaign
from cpdispatch.cli import build_parser
from cpdispatch.errors import CpdispatchError
from cpdispatch.validate import schedule_errors

from .conftest import WORKLOADS, needs_traces

ROOT = Path(__file__).resolve().parents[1]
KTH = WORKLOADS / "KTH-SP2-1996-2.1-cln.swf.gz"


def readme_python_blocks() -> list[str]:
    """The ```python blocks of the README's "Python API" section."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Python API", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def test_readme_examples_run_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = readme_python_blocks()
    assert len(blocks) >= 2
    own = next(b for b in blocks if "def largest_gpu_first" in b)
    body = own.split("def largest_gpu_first", 1)[1].split("\n\n", 1)[0]
    assert len(("def largest_gpu_first" + body).strip().splitlines()) <= 10  # the promise: ten lines
    scope: dict[str, object] = {}
    for i, block in enumerate(blocks):
        exec(compile(block, "README.md", "exec"), scope)  # noqa: S102 - the README's own code
        if i == 0:  # the first example's pcp20 really decides with CP-SAT (not only the fast path)
            first = scope["result"]
            assert isinstance(first, cpd.Result) and first.summary["dispatcher"] == "pcp20"
            statuses = set(first.decisions["status"])
            assert {"optimal", "feasible"} & statuses, f"the README's pcp20 never calls CP-SAT: {statuses}"
    result = scope["result"]
    assert isinstance(result, cpd.Result) and result.summary["jobs"] > 0
    assert schedule_errors(result.raw) == []
    assert (tmp_path / "out" / "run1" / "summary.json").exists()


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "examples").glob("*.py")))
def test_examples_run(script: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    runpy.run_path(str(ROOT / "examples" / script), run_name="__main__")


def small() -> tuple[cpd.System, object]:
    return cpd.System.preset("eurora"), cpd.generate_eurora(300, seed=3, gpu_share=0.5)


def test_result_tables_match_the_files(tmp_path: Path) -> None:
    system, jobs = small()
    result = cpd.simulate(system, jobs, dispatcher="easy", load_factor=4.0)
    result.save(tmp_path, parquet=True, plots=True)
    on_disk = pd.read_csv(tmp_path / "schedule.csv", keep_default_na=False, dtype=str)
    assert list(on_disk.columns) == list(result.jobs.columns)
    assert len(on_disk) == len(result.jobs) == result.summary["jobs"]
    assert on_disk["job_id"].tolist() == result.jobs["job_id"].tolist()
    assert pd.read_parquet(tmp_path / "decisions.parquet")["status"].tolist() == result.decisions["status"].tolist()
    assert json.loads((tmp_path / "summary.json").read_text())["call"]["dispatcher"] == "easy"
    assert (tmp_path / "utilization.png").is_file() and (tmp_path / "queue.png").is_file()  # as the CLI


def test_function_dispatcher_runs_and_is_validated() -> None:
    """A function returning invalid starts gets them refused by the simulator, as any dispatcher."""
    system, jobs = small()

    def greedy_first_fit(snap: cpd.Snapshot) -> list[cpd.Start]:
        starts = []
        for q in snap.queued:
            nodes = snap.first_fit(q)
            if nodes:
                starts.append(cpd.Start(q.job.id, nodes))
                snap = snap.after(starts[-1])
        return starts

    good = cpd.simulate(system, jobs, dispatcher=greedy_first_fit, load_factor=4.0)
    assert good.summary["dispatcher"] == "greedy_first_fit" and schedule_errors(good.raw) == []
    assert good.summary["completed"] == good.summary["jobs"] and not good.raw.refused

    with pytest.warns(cpd.RefusedStartsWarning):
        bad = cpd.simulate(system, jobs, dispatcher=always_node_zero, load_factor=4.0)
    assert bad.raw.refused and schedule_errors(bad.raw) == []


def test_systems_from_presets_and_files(tmp_path: Path) -> None:
    toml = tmp_path / "mine.toml"
    toml.write_text(cpd.System.preset("kth-sp2").to_toml())
    assert cpd.System.from_toml(toml).n_nodes == cpd.System.preset("kth-sp2").n_nodes
    with pytest.raises(CpdispatchError, match="no such system file"):
        cpd.System.from_toml("kth-sp2")  # a preset name is not a file
    with pytest.raises(CpdispatchError, match="no such preset"):
        cpd.System.preset("kth")


def test_snapshot_helpers() -> None:
    system = cpd.System.preset("eurora")
    job = cpd.Job("g", 0, 2, (4, 1024, 1, 0), 100, 50)
    snap = cpd.Snapshot(0, system, (cpd.QueuedJob(job, 50),), (), system.capacity.copy())
    assert snap.amount(snap.queued[0], "gpu") == 2 and snap.amount(job, "fpga") == 0
    nodes = snap.first_fit(job)
    assert nodes is not None and len(nodes) == 2
    after = snap.after(cpd.Start("g", nodes))
    assert not after.queued and len(after.running) == 1
    assert int(after.free[:, 2].sum()) == int(system.capacity[:, 2].sum()) - 2
    with pytest.raises(ValueError, match="not queued"):
        after.after(cpd.Start("g", nodes))


def test_exceptions_in_user_code_propagate_with_context() -> None:
    system, jobs = small()

    def broken(snap: cpd.Snapshot) -> list[cpd.Start]:
        raise KeyError("my bug")

    with pytest.raises(KeyError, match="my bug") as info:
        cpd.simulate(system, jobs, dispatcher=broken)
    assert "in dispatcher broken at simulated time" in info.value.__notes__[0]

    class BadPredictor:
        def predict(self, job: cpd.Job, now: int) -> int:
            raise ZeroDivisionError("oops")

    with pytest.raises(ZeroDivisionError) as info2:
        cpd.simulate(system, jobs, predictor=BadPredictor())
    assert "in predictor BadPredictor.predict at simulated time" in info2.value.__notes__[0]


def test_python_workloads_are_validated() -> None:
    system = cpd.System.preset("hpc2n")
    a = cpd.Job("a", 10, 1, (1, 100), 60, 30)
    with pytest.raises(CpdispatchError, match=r"job 1 \(id 'b'\): field submit 5 is before"):
        cpd.simulate(system, [a, replace(a, id="b", submit=5)])
    with pytest.raises(CpdispatchError, match="field req has 1 amounts, system hpc2n has 2 types"):
        cpd.simulate(system, [replace(a, req=(1,))])
    with pytest.raises(CpdispatchError, match="id appears more than once"):
        cpd.simulate(system, [a, a])
    with pytest.raises(CpdispatchError, match="field units must be an integer from 1 to 2\\^40"):
        cpd.simulate(system, [replace(a, units=0)])


def test_typed_and_string_options_are_the_same() -> None:
    system, jobs = small()
    typed = cpd.simulate(system, jobs, dispatcher="pcp20", options={"fast_budget": 0.002, "fastpath": False},
                         load_factor=4.0)
    text = cpd.simulate(system, jobs, dispatcher="pcp20", options={"fast_budget": "0.002", "fastpath": "false"},
                        load_factor=4.0)
    assert typed.raw.options["dispatcher_options"] == text.raw.options["dispatcher_options"]
    assert typed.raw.options["dispatcher_options"]["fastpath"] is False
    with pytest.raises(CpdispatchError, match="unknown option 'budget'"):
        cpd.simulate(system, jobs, dispatcher="pcp20", options={"budget": 1})


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cpdispatch", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, check=False)


@needs_traces
def test_cli_run_is_reproduced_by_the_call_it_records(tmp_path: Path) -> None:
    run = _cli("simulate", "--system", "kth-sp2", "--workload", str(KTH), "--limit-jobs", "1500",
               "--dispatcher", "easy", "--predictor", "last2", "--load-factor", "1.5", "--out", str(tmp_path),
               "--no-plots", "--no-progress")
    assert run.returncode == 0, run.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    call = summary["call"]
    system = cpd.System.preset(call["system"])
    src = call["jobs"]
    jobs = cpd.read_workload(src["read_workload"], system, fmt=src["fmt"], limit=src["limit"], skip=src["skip"])
    again = cpd.simulate(system, jobs, call["dispatcher"], call["predictor"], call["options"],
                         load_factor=call["load_factor"], seed=call["seed"])
    for key in ("avg_wait", "avg_bounded_slowdown", "completed", "makespan"):
        assert again.summary[key] == summary[key], key


PLUGIN = '''
import cpdispatch as cpd

def newest_first(snap):
    """Last come, first served (a test plugin)."""
    starts = []
    for q in reversed(snap.queued):
        nodes = snap.first_fit(q)
        if nodes:
            starts.append(cpd.Start(q.job.id, nodes))
            snap = snap.after(starts[-1])
    return starts


class HalfWalltime:
    """Half the requested walltime (a test plugin: observe is optional)."""

    def predict(self, job, now):
        return (job.walltime or 0) // 2
'''


@needs_traces
def test_entry_point_plugin_is_listed_and_runs_from_the_cli(tmp_path: Path) -> None:
    """A package declaring entry points in `cpdispatch.dispatchers` and `cpdispatch.predictors`
    (installed here as a module plus its dist-info on the path, as pip would leave it)."""
    site = tmp_path / "site"
    (site / "lcfs_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "lcfs_plugin.py").write_text(PLUGIN)
    (site / "lcfs_plugin-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: lcfs-plugin\n"
                                                                  "Version: 1.0\n")
    (site / "lcfs_plugin-1.0.dist-info" / "entry_points.txt").write_text(
        "[cpdispatch.dispatchers]\nlcfs = lcfs_plugin:newest_first\n"
        "[cpdispatch.predictors]\nhalf = lcfs_plugin:HalfWalltime\n")
    env = {"PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    listed = _cli("dispatchers", env=env)
    assert listed.returncode == 0 and "lcfs (plugin lcfs_plugin:newest_first, package lcfs-plugin)" in listed.stdout
    assert "half (plugin lcfs_plugin:HalfWalltime, package lcfs-plugin)" in listed.stdout
    for name, predictor in (("lcfs", "half"), ("lcfs_plugin:newest_first", "lcfs_plugin:HalfWalltime")):
        out = tmp_path / name.replace(":", "_")
        run = _cli("simulate", "--system", "kth-sp2", "--workload", str(KTH), "--limit-jobs", "300",
                   "--dispatcher", name, "--predictor", predictor, "--out", str(out), "--no-plots", "--no-progress",
                   env=env)
        assert run.returncode == 0, run.stderr
        summary = json.loads((out / "summary.json").read_text())
        assert summary["completed"] + summary["rejected"] + summary["killed"] == summary["jobs"] == 300
        with open(out / "schedule.csv") as f:  # the plugin predictor's figures reach the dispatcher
            rows = [r for r in csv.DictReader(f) if r["predicted"]]
        assert rows and all(int(r["predicted"]) == int(r["walltime"]) // 2 for r in rows)


def test_every_builtin_name_has_its_home_module() -> None:
    """A built-in name imports only its own module (a baseline run does not pay OR-Tools' import)."""
    from cpdispatch.dispatchers.base import aliases_of, registry
    from cpdispatch.dispatchers.builtin import HOMES

    classes = registry()
    names = {n: cls for n, cls in classes.items()} | {a: cls for n, cls in classes.items() for a in aliases_of(n)}
    assert set(HOMES) == set(names)
    for name, cls in names.items():
        assert cls.__module__ == f"cpdispatch.dispatchers.{HOMES[name]}", name


@needs_traces
def test_a_baseline_run_does_not_import_ortools() -> None:
    code = ("import sys, cpdispatch as cpd; s = cpd.System.preset('kth-sp2'); "
            "cpd.simulate(s, cpd.read_workload(sys.argv[1], s, limit=50), 'fifo', 'walltime'); "
            "print('ortools' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(KTH)], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@needs_traces
def test_a_workload_read_onto_another_system_is_checked_again() -> None:
    jobs = cpd.read_workload(KTH, cpd.System.preset("kth-sp2"), limit=20)
    with pytest.raises(CpdispatchError, match="field req has 1 amounts, system eurora has 4 types"):
        cpd.simulate("eurora", jobs, "fifo")


# -- an API that says what went wrong ------------------------------------------------------------------


def always_node_zero(snap: cpd.Snapshot) -> list[cpd.Start]:
    """Every queued job on node 0 (most starts are refused)."""
    return [cpd.Start(q.job.id, (0,) * q.job.units) for q in snap.queued]


def test_refused_starts_are_a_warning_with_the_first_reason() -> None:
    system, jobs = small()
    with pytest.warns(cpd.RefusedStartsWarning, match=r"dispatcher always_node_zero: [\d,]+ invalid start\(s\) "
                                                      r"refused, first: t=\d+: start of job \S+ refused: ") as seen:
        result = cpd.simulate(system, jobs, dispatcher=always_node_zero, load_factor=4.0)
    assert len(seen) == 1 and issubclass(cpd.RefusedStartsWarning, UserWarning)
    assert result.refused and result.refused is result.raw.refused
    assert result.refused[0] in str(seen[0].message) and f"{len(result.refused):,} invalid" in str(seen[0].message)
    assert result.summary["refused_starts"] == len(result.refused) and "refused_decisions" not in result.summary
    with warnings.catch_warnings():
        warnings.simplefilter("error", cpd.RefusedStartsWarning)  # a valid dispatcher: no warning
        assert cpd.simulate(system, jobs, dispatcher="easy").refused == []


@needs_traces
def test_the_cli_says_refused_starts_once(tmp_path: Path) -> None:
    (tmp_path / "node_zero.py").write_text(
        "import cpdispatch as cpd\n\ndef decide(snap):\n"
        "    return [cpd.Start(q.job.id, (0,) * q.job.units) for q in snap.queued]\n")
    run = _cli("simulate", "--system", "kth-sp2", "--workload", str(KTH), "--limit-jobs", "200", "--dispatcher",
               "node_zero:decide", "--out", str(tmp_path / "o"), "--no-plots", "--no-progress",
               env={"PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])})
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("invalid start(s) refused, first: t=") == 1, run.stderr
    assert "RefusedStartsWarning" not in run.stderr


def test_start_takes_node_names_or_indices() -> None:
    system, jobs = small()

    def first_fit(by_name: bool) -> object:
        def decide(snap: cpd.Snapshot) -> list[cpd.Start]:
            starts = []
            for q in snap.queued:
                nodes = snap.first_fit(q)
                if nodes:
                    starts.append(cpd.Start(q.job.id, [system.node_names[k] for k in nodes] if by_name else nodes))
                    snap = snap.after(starts[-1])
            return starts
        return decide

    named = cpd.simulate(system, jobs, dispatcher=first_fit(True), load_factor=4.0)
    indexed = cpd.simulate(system, jobs, dispatcher=first_fit(False), load_factor=4.0)
    assert not named.refused and named.summary["completed"] == named.summary["jobs"]
    assert named.jobs.equals(indexed.jobs)

    def unknown_node(snap: cpd.Snapshot) -> list[cpd.Start]:
        return [cpd.Start(q.job.id, ["gpu-99"] * q.job.units) for q in snap.queued]

    with pytest.warns(cpd.RefusedStartsWarning, match="no node named 'gpu-99' in system eurora"):
        bad = cpd.simulate(system, jobs, dispatcher=unknown_node)
    assert "a node is given by name, e.g. 'gpu-1', or by index 0..63" in bad.refused[0]
    snap = cpd.Snapshot(0, system, (cpd.QueuedJob(jobs.jobs[0], 10),), (), system.capacity.copy())
    by_name = snap.after(cpd.Start(jobs.jobs[0].id, [system.node_names[3]] * jobs.jobs[0].units))
    assert by_name.running[0].alloc.nodes == (3,)
    with pytest.raises(ValueError, match="no node named 'nope' in system eurora"):
        snap.after(cpd.Start(jobs.jobs[0].id, ["nope"] * jobs.jobs[0].units))


@pytest.mark.parametrize(("returned", "shown"), [(["hello"], "['hello'] holding 'hello'"), (None, "None"),
                                                 ("abc", "'abc'"), ([cpd.Start("1", (0,)), 3], "holding 3")])
def test_a_bad_return_value_names_the_dispatcher_time_and_value(returned: object, shown: str) -> None:
    system, jobs = small()

    def confused(snap: cpd.Snapshot) -> object:
        return returned

    with pytest.raises(CpdispatchError) as info:
        cpd.simulate(system, jobs, dispatcher=confused)
    message = str(info.value)
    assert message.startswith("dispatcher confused returned ") and shown in message
    assert f"at simulated time {jobs.jobs[0].submit}: expected a Decision or a sequence of Start" in message


def test_a_dispatcher_class_returning_a_bad_value_is_named() -> None:
    """The check is the simulator's, so a `Dispatcher` subclass gets it too (a list of Starts is accepted)."""

    class Lists(cpd.Dispatcher):
        name = "lists"

        def decide(self, snapshot: cpd.Snapshot) -> cpd.Decision:
            return [cpd.Start(q.job.id, snapshot.first_fit(q)) for q in snapshot.queued[:1]  # type: ignore[return-value]
                    if snapshot.first_fit(q)]

    class Words(Lists):
        name = "words"

        def decide(self, snapshot: cpd.Snapshot) -> cpd.Decision:
            return "start everything"  # type: ignore[return-value]

    system, jobs = small()
    assert cpd.simulate(system, jobs, dispatcher=Lists()).summary["completed"] == len(jobs)
    with pytest.raises(CpdispatchError, match=r"dispatcher words returned 'start everything' at simulated time \d+"):
        cpd.simulate(system, jobs, dispatcher=Words())


def test_reprs_are_short_and_len_counts_jobs() -> None:
    system, jobs = small()
    assert repr(system) == "System('eurora', 64 nodes, core=1,024, mem=1,048,576, gpu=64, mic=64)"
    assert len(jobs) == 300 and len(cpd.Workload("w", [])) == 0
    first, last = jobs.jobs[0].submit, jobs.jobs[-1].submit
    assert repr(jobs) == f"Workload('generated:eurora:300:3', 300 jobs, submit {first:,}..{last:,} s)"
    result = cpd.simulate(system, jobs, "easy", load_factor=4.0)
    text = repr(result)
    assert text.startswith("Result('easy', predictor 'walltime', 300 jobs: 300 completed; avg_wait ")
    assert f"avg_wait {result.summary['avg_wait']:,.1f} s" in text and len(text) < 200


def test_dir_lists_the_public_names() -> None:
    names = dir(cpd)
    assert names == sorted(cpd.__all__) and "Any" not in names and "annotations" not in names
    assert {"simulate", "System", "Start", "Result", "RefusedStartsWarning", "Workload"} <= set(names)
    for name in names:
        assert getattr(cpd, name) is not None


def test_one_default_predictor_everywhere(tmp_path: Path) -> None:
    """walltime: what an on-line dispatcher knows (the API, the CLI, the Slurm driver, campaigns)."""
    assert cpd.DEFAULT_PREDICTOR == "walltime"
    system = cpd.System.preset("eurora")
    assert cpd.simulate(system, cpd.generate_eurora(20, seed=1), "fifo").summary["predictor"] == "walltime"
    parser = build_parser()
    for argv in (["simulate", "--system", "s", "--workload", "w", "--out", "o"], ["slurm", "dispatch"],
                 ["slurm", "replay", "trace"]):
        assert parser.parse_args(argv).predictor == cpd.DEFAULT_PREDICTOR, argv
    spec = tmp_path / "c.toml"
    spec.write_text('name = "c"\ndispatchers = ["fifo"]\n[[workloads]]\ngenerate = "eurora"\njobs = 20\n'
                    'system = "eurora"\n')
    assert {r["predictor"] for r in load_campaign(spec).runs} == {cpd.DEFAULT_PREDICTOR}
