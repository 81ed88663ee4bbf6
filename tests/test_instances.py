"""Saved instances: a recorded run loads back as the same snapshots, replays to the same
decisions, and compares dispatchers on identical instances (PCP'20 paper, Section 5.3)."""

from __future__ import annotations

import csv
import gzip
import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cpdispatch.cli import main
from cpdispatch.dispatchers import base as dispatcher_base
from cpdispatch.dispatchers import make_dispatcher
from cpdispatch.dispatchers.base import Dispatcher
from cpdispatch.errors import InputError
from cpdispatch.instance_log import InstanceRecorder, iter_recorded, load_instances
from cpdispatch.instance_replay import CSV_COLUMNS, compare
from cpdispatch.job import Job
from cpdispatch.predictors import make_predictor
from cpdispatch.simulator import SimOptions, simulate
from cpdispatch.snapshot import Decision, QueuedJob, Snapshot
from cpdispatch.system import System
from cpdispatch.workloads.base import Workload

from .helpers import system

PNG = b"\x89PNG\r\n\x1a\n"


def _system() -> System:
    return system(("cpu", 4, {"core": 8, "mem": 32}), ("gpu", 2, {"core": 8, "mem": 64, "gpu": 2}))


def _workload(n: int = 60, seed: int = 3) -> Workload:
    """Random jobs with every field a dispatcher may read, some without a walltime."""
    rng = random.Random(seed)
    jobs = []
    t = 0
    for i in range(n):
        t += rng.randint(0, 40)
        runtime = rng.randint(1, 400)
        walltime = None if i % 7 == 0 else runtime + rng.randint(0, 300)
        req = (rng.randint(1, 4), rng.randint(1, 16), rng.choice([0, 0, 0, 1]))
        jobs.append(Job(f"j{i}", t, rng.randint(1, 3), req, walltime, runtime, user=f"u{i % 3}",
                        name=f"app{i % 5}", queue=rng.choice(["", "debug", "long"]), line=i + 2,
                        default_walltime=600, one_per_node=i % 5 == 1 and req[2] == 0))
    return Workload("test", jobs)


def _record(path: Path, dispatcher: str = "easy", seed: int = 3,
            charge: bool = False) -> list[tuple[Snapshot, Decision]]:
    """Simulate with a recorder on; return what the hook saw, for comparison with the file."""
    seen: list[tuple[Snapshot, Decision]] = []
    with InstanceRecorder(path) as rec:
        def hook(snap: Snapshot, dec: Decision, wall: float) -> None:
            rec.record(snap, dec, wall)
            seen.append((snap, dec))

        simulate(_system(), _workload(seed=seed), make_dispatcher(dispatcher), make_predictor("walltime"),
                 SimOptions(charge_dispatch_time=charge, progress=False), on_decision=hook)
    return seen


def _visible(s: Snapshot) -> tuple[Any, ...]:
    """Everything a dispatcher may read from a snapshot (no run time, no source line)."""
    def job(j: Job) -> tuple[Any, ...]:
        return (j.id, j.submit, j.units, j.req, j.walltime, j.estimate, j.user, j.name, j.queue)

    return (
        s.time, s.system.types, s.system.node_names, s.system.capacity.tolist(),
        tuple((job(q.job), q.predicted, q.job.one_per_node, q.weight) for q in s.queued),
        tuple((job(r.job), r.start, r.predicted, r.alloc.per_unit()) for r in s.running),
        s.free.tolist(),
    )


@pytest.mark.parametrize("name", ["inst.jsonl", "inst.jsonl.gz"])
@pytest.mark.parametrize("dispatcher", ["fifo", "easy"])
def test_roundtrip(tmp_path: Path, name: str, dispatcher: str) -> None:
    path = tmp_path / name
    seen = _record(path, dispatcher)
    loaded = list(load_instances(path))
    assert len(loaded) == len(seen) > 10
    assert any(s.running for s in loaded) and any(len(s.queued) > 1 for s in loaded)
    for (orig, _), back in zip(seen, loaded):
        assert _visible(back) == _visible(orig)
        assert not back.free.flags.writeable
        assert all(q.job.runtime == 0 for q in back.queued)
    if name.endswith(".gz"):
        assert path.read_bytes()[:2] == b"\x1f\x8b"
    with gzip.open(path, "rt") if name.endswith(".gz") else path.open() as f:
        head = json.loads(f.readline())
    assert head["kind"] == "system" and "runtime" not in head["queued_fields"] + head["running_fields"]


def test_weights_and_the_one_per_node_flag_are_kept(tmp_path: Path) -> None:
    snap = load_instances_first(tmp_path)
    weighted = Snapshot(snap.time, snap.system, tuple(QueuedJob(q.job, q.predicted, 0.25 + i / 100)
                                                      for i, q in enumerate(snap.queued)), snap.running, snap.free)
    path = tmp_path / "w.jsonl"
    with InstanceRecorder(path) as rec:
        rec.record(weighted, Decision(), 0.0)
    (back,) = load_instances(path)
    assert _visible(back) == _visible(weighted)


def load_instances_first(tmp_path: Path) -> Snapshot:
    """A recorded snapshot with several queued jobs, one of them one-per-node."""
    _record(tmp_path / "all.jsonl", "fifo")
    return next(s for s in load_instances(tmp_path / "all.jsonl")
                if len(s.queued) > 2 and any(q.job.one_per_node for q in s.queued))


def test_format_1_files_are_still_read(tmp_path: Path) -> None:
    path = tmp_path / "inst.jsonl"
    seen = _record(path, "fifo")
    lines = path.read_text().splitlines()
    head = json.loads(lines[0])
    head["format"], head["queued_fields"] = 1, head["queued_fields"][:-2]
    old = [json.dumps(head)]
    for line in lines[1:]:
        rec = json.loads(line)
        rec["q"] = [row[:-2] for row in rec["q"]]
        old.append(json.dumps(rec))
    path.write_text("\n".join(old) + "\n")
    loaded = list(load_instances(path))
    assert [len(s.queued) for s in loaded] == [len(s.queued) for s, _ in seen]
    assert not any(q.job.one_per_node or q.weight != 1 for s in loaded for q in s.queued)


def test_replay_gives_the_recorded_decisions(tmp_path: Path) -> None:
    path = tmp_path / "inst.jsonl"
    seen = _record(path, "easy", charge=True)
    disp = make_dispatcher("easy")
    recs = list(iter_recorded(path))
    assert len(recs) == len(seen)
    started = 0
    for rec, (_, dec) in zip(recs, seen):
        assert rec.starts == dec.starts and rec.status == dec.status
        replay = disp.decide(rec.snapshot)
        assert replay.starts == dec.starts
        started += len(replay.starts)
    assert started == 60


def test_empty_file_has_no_instances(tmp_path: Path) -> None:
    path = tmp_path / "none.jsonl"
    InstanceRecorder(path).close()
    assert list(load_instances(path)) == []


def _corrupt(path: Path, lineno: int, edit: Any) -> Path:
    lines = path.read_text().splitlines()
    lines[lineno - 1] = edit(lines[lineno - 1])
    bad = path.with_name("bad.jsonl")
    bad.write_text("\n".join(lines) + "\n")
    return bad


def _set(key: str, value: Any) -> Any:
    def edit(line: str) -> str:
        rec = json.loads(line)
        rec[key] = value
        return json.dumps(rec)
    return edit


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda line: line[: len(line) // 2], None),  # cut line: invalid JSON
        (_set("t", "soon"), "t"),
        (_set("q", [["j1", 0, 1, [1, 1], None, 5, "", "", "", 5, 0, 1.0]]), "q[0].req"),
        (_set("q", [["j1", 0, 1, [1, 1, 0], None, 5, "", "", "", 5, 0, 2.0]]), "q[0].weight"),
        (_set("q", [["j1", 0, 1, [1, 1, 0], None, 5, "", "", "", 5, "no", 1.0]]), "q[0].one_per_node"),
        (_set("r", [["j1", 0, 1, [1, 1, 0], 9, 9, "", "", "", 0, 9, [99]]]), "r[0].nodes"),
        (_set("free", [0, 0, 0]), "free"),
        (lambda line: json.dumps({k: v for k, v in json.loads(line).items() if k != "d"}), "d"),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path: Path, edit: Any, field: str | None) -> None:
    path = tmp_path / "inst.jsonl"
    _record(path, "fifo")
    bad = _corrupt(path, 4, edit)
    snaps = load_instances(bad)
    next(snaps), next(snaps)  # lines 2 and 3 are fine
    with pytest.raises(InputError) as err:
        next(snaps)
    assert err.value.path == str(bad) and err.value.line == 4 and err.value.field == field
    assert f"{bad}:4" in str(err.value)


def test_bad_header_and_truncated_gzip(tmp_path: Path) -> None:
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"t": 0}\n')
    with pytest.raises(InputError, match=r"x.jsonl:1: field 'kind'"):
        list(load_instances(bad))
    path = tmp_path / "inst.jsonl.gz"
    _record(path, "fifo")
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(path.read_bytes()[:-200])
    with pytest.raises(InputError, match="truncated"):
        list(load_instances(cut))
    with pytest.raises(InputError, match="no such"):
        list(load_instances(tmp_path / "missing.jsonl"))


def _is_png(p: Path) -> bool:
    return p.exists() and p.stat().st_size > 1000 and p.read_bytes()[:8] == PNG


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames or ()) == CSV_COLUMNS
        return list(reader)


def test_compare_baselines(tmp_path: Path) -> None:
    path = tmp_path / "inst.jsonl.gz"
    n = len(_record(path, "easy"))
    stats = compare(path, ["fifo", "easy"], tmp_path / "cmp", progress=False)
    rows = _csv(tmp_path / "cmp" / "comparison.csv")
    assert len(rows) == 2 * n
    assert [r["dispatcher"] for r in rows[:4]] == ["fifo", "easy", "fifo", "easy"]
    assert {r["variables"] for r in rows} == {""} and all(float(r["solve_ms"]) >= 0 for r in rows)
    assert [s["dispatcher"] for s in stats] == ["fifo", "easy"] and stats[0]["ratio_instances"] == 0
    assert _is_png(tmp_path / "cmp" / "variables_ratio.png") and _is_png(tmp_path / "cmp" / "time_ratio.png")
    assert f"{n} of {n} instances left out" in (tmp_path / "cmp" / "comparison_summary.txt").read_text()
    compare(path, ["easy"], tmp_path / "one", limit=5, progress=False)
    assert len(_csv(tmp_path / "one" / "comparison.csv")) == 5


class _Sized(Dispatcher):
    """Stand-in CP dispatcher: starts nothing, reports a model size that grows with the queue."""

    per_job = 1
    options = (dispatcher_base.Option("fastpath", True, "no model for a one-job queue"),)
    fastpath: bool

    def decide(self, snapshot: Snapshot) -> Decision:
        if self.fastpath and len(snapshot.queued) == 1:
            return Decision(status="fastpath")
        v = self.per_job * len(snapshot.queued)
        return Decision(status="optimal", variables=v, constraints=2 * v, objective=float(v) / 2)


class _Big(_Sized):
    name = "bigmodel"
    per_job = 100


class _Small(_Sized):
    name = "smallmodel"
    per_job = 3


def test_compare_ratios_skip_fastpath_and_take_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for cls in (_Big, _Small):
        monkeypatch.setitem(dispatcher_base._REGISTRY, cls.name, cls)
    path = tmp_path / "inst.jsonl"
    seen = _record(path, "fifo")
    one_job = sum(len(s.queued) == 1 for s, _ in seen)
    assert 0 < one_job < len(seen)
    stats = compare(path, ["smallmodel", "bigmodel"], tmp_path / "a", progress=False)
    rows = _csv(tmp_path / "a" / "comparison.csv")
    assert sum(r["variables"] == "" for r in rows) == 2 * one_job  # kept in the CSV
    assert stats[0]["ratio_instances"] == len(seen) - one_job
    assert stats[0]["variables_ratio_below_0.1"] == 1.0 and stats[0]["variables_ratio_median"] == 0.03
    text = (tmp_path / "a" / "comparison_summary.txt").read_text()
    assert "-o smallmodel:fastpath=false" in text and f"{one_job} of {len(seen)} instances left out" in text
    row = next(r for r in rows if r["variables"] == "9")
    assert row["constraints"] == "18" and row["objective"] == "4.5" and row["status"] == "optimal"
    assert _is_png(tmp_path / "a" / "variables_ratio.png")

    out = tmp_path / "b"
    code = main(["instances", "compare", str(path), "--dispatchers", "smallmodel,bigmodel", "--out", str(out),
                 "-o", "smallmodel:fastpath=false", "-o", "bigmodel:fastpath=false", "--limit", "20"])
    assert code == 0
    rows = _csv(out / "comparison.csv")
    assert len(rows) == 40 and all(r["variables"] for r in rows)
    assert main(["instances", "compare", str(path), "--dispatchers", "bigmodel", "--out", str(out),
                 "-o", "fastpath=false"]) == 2
    assert main(["instances", "compare", str(path), "--dispatchers", "bigmodel", "--out", str(out),
                 "-o", "fifo:allocator=best-fit"]) == 2


def _congested(tmp_path: Path, n: int) -> Path:
    """The first `n` instances of a small generated run where jobs had to wait (a fast path or a
    trivial instance builds no model), re-recorded into a file of their own."""
    wl, sysm = _workload(200, 7), _system()
    full = tmp_path / "full.jsonl.gz"
    with InstanceRecorder(full) as rec:
        simulate(sysm, wl, make_dispatcher("easy"), make_predictor("walltime"), SimOptions(progress=False),
                 on_decision=rec.record)
    path = tmp_path / "congested.jsonl"
    with InstanceRecorder(path) as rec:
        for r in iter_recorded(full):
            if r.snapshot.running and len(r.snapshot.queued) - len(r.starts) >= 2 and rec.count < n:
                rec.record(r.snapshot, Decision(r.starts, r.status), 0.0)
    assert rec.count == n
    return path


def test_compare_pcp20_pcp19(tmp_path: Path) -> None:
    n = 12
    path = _congested(tmp_path, n)
    # without pcp20's relaxed start, which skips the model when the relaxation proves optimality
    opts = {"pcp20": {"fastpath": "false", "relaxed_start": "0"}, "pcp19": {"fastpath": "false"}}
    stats = compare(path, ["pcp20", "pcp19"], tmp_path / "cmp", options=opts, progress=False)
    rows = _csv(tmp_path / "cmp" / "comparison.csv")
    assert [(r["instance"], r["dispatcher"]) for r in rows] == [
        (str(i), d) for i in range(n) for d in ("pcp20", "pcp19")
    ]
    assert all(r["status"] != "fastpath" and r["status"] != "error" and float(r["solve_ms"]) > 0 for r in rows)
    # Same front end: a model is built (and its size reported) on the same instances by both; an
    # instance where every selected job starts now needs none even without the fast path.
    by = {(r["instance"], r["dispatcher"]): r for r in rows}
    both = [str(i) for i in range(n) if by[str(i), "pcp20"]["variables"]]
    assert both == [str(i) for i in range(n) if by[str(i), "pcp19"]["variables"]]
    assert len(both) >= 2 and stats[0]["ratio_instances"] == len(both)
    for i in both:
        assert int(by[i, "pcp20"]["variables"]) > 0 and int(by[i, "pcp19"]["variables"]) > 0
        assert by[i, "pcp20"]["constraints"] and by[i, "pcp19"]["constraints"]
    # the reported ratios are the per-instance ratios of the rows (Figures 6 and 7)
    vr = [int(by[i, "pcp20"]["variables"]) / int(by[i, "pcp19"]["variables"]) for i in both]
    tr = [float(by[i, "pcp20"]["solve_ms"]) / float(by[i, "pcp19"]["solve_ms"]) for i in both]
    assert stats[0]["variables_ratio_median"] == pytest.approx(float(np.median(vr)))
    assert stats[0]["variables_ratio_below_0.1"] == pytest.approx(sum(r < 0.1 for r in vr) / len(vr))
    assert stats[0]["time_ratio_median"] == pytest.approx(float(np.median(tr)), rel=1e-2)
    assert _is_png(tmp_path / "cmp" / "variables_ratio.png") and _is_png(tmp_path / "cmp" / "time_ratio.png")
