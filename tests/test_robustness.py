"""A hostile user through the real command line: signals, unusable outputs, bad system files,
huge numbers, empty inputs. Every case ends with one line and the right exit code, never a
traceback, and interrupted runs leave valid, marked, well-formed outputs."""

from __future__ import annotations

import csv
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cpdispatch.cli import build_parser
from cpdispatch.instance_log import iter_recorded
from cpdispatch.records import JobRecord, SimulationResult
from cpdispatch.snapshot import Allocation
from cpdispatch.system import load_system
from cpdispatch.validate import schedule_errors
from cpdispatch.workloads import load_workload, scale_arrivals

from .test_cli import SWF_OK, cli

HPC2N = "HPC2N-2002-2.2-cln.swf.gz"
#: pcp20 with long solves (a deterministic budget of 60 per decision, no conflict limit) on a
#: stretch of HPC2N at 4x its load: after a few seconds every solve lasts many seconds, so the
#: signal lands in the middle of one.
SLOW_PCP20 = ("--dispatcher", "pcp20", "-o", "fast_budget=60", "-o", "fast_conflicts=0", "-o", "initial_limit=60",
              "-o", "fastpath=false", "--predictor", "last2", "--skip-jobs", "20000", "--limit-jobs", "3000",
              "--load-factor", "4")


def _no_traceback(err: str) -> None:
    assert "Traceback" not in err, err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_in_a_long_solve_keeps_a_partial_valid_marked_run(
        tmp_path: Path, workloads_dir: Path, signum: int) -> None:
    out, record = tmp_path / "out", tmp_path / "inst.jsonl.gz"
    proc = subprocess.Popen(
        [sys.executable, "-m", "cpdispatch", "simulate", "--system", "hpc2n", "--workload",
         str(workloads_dir / HPC2N), *SLOW_PCP20, "--out", str(out), "--record-instances", str(record),
         "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list(tmp_path.glob(".inst.jsonl.partial-*.gz")) and time.monotonic() < deadline:
        time.sleep(0.05)  # the recorder's file appears when the simulation starts
    time.sleep(8.0)  # well into the run, into a long solve
    sent = time.monotonic()
    proc.send_signal(signum)
    stdout, stderr = proc.communicate(timeout=60)
    took = time.monotonic() - sent
    _no_traceback(stderr)
    assert proc.returncode == 128 + signum, stderr
    assert took < 2.0, f"stopped {took:.2f} s after the signal"
    assert f"interrupted by {signal.Signals(signum).name} at simulated time" in stderr
    summary = json.loads((out / "summary.json").read_text())
    stop = summary["interrupted"]
    assert stop["signal"] == signal.Signals(signum).name and stop["undecided"] > 0
    lines = (out / "schedule.csv").read_text().splitlines()
    assert len(lines) - 1 == summary["jobs"] < 3000
    decisions = list(csv.reader((out / "decisions.csv").read_text().splitlines()))
    assert len(decisions) == summary["dispatch_calls"] + 1
    assert float(decisions[-1][4]) > 1000, "the signal did not land in a long solve"  # wall_ms
    assert not list(tmp_path.rglob("*.partial-*")), "a temporary file was left behind"
    assert sum(1 for _ in iter_recorded(record)) == summary["dispatch_calls"]  # a whole gzip, every instance

    # the partial schedule, read back from schedule.csv, passes the independent checker
    system = load_system("hpc2n")
    read = load_workload(workloads_dir / HPC2N, system, skip=20000, limit=3000)
    jobs = {j.id: j for j in scale_arrivals(read, 4).jobs}
    names = {n: k for k, n in enumerate(system.node_names)}
    records = []
    for row in csv.DictReader(lines):
        assert row["status"] in ("completed", "running", "rejected"), row
        rec = JobRecord(jobs[row["job_id"]], status=row["status"], reason=row["reason"])
        if row["start"]:
            rec.start, rec.end = int(row["start"]), int(row["end"])
            rec.alloc = Allocation.of_units(names[n] for n in row["nodes"].split(";"))
        records.append(rec)
    assert any(r.status == "running" for r in records)
    assert schedule_errors(SimulationResult(system, "pcp20", "last2", records, [], interrupted=stop)) == []


def test_signal_while_reading_writes_nothing(tmp_path: Path, workloads_dir: Path) -> None:
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "cpdispatch", "simulate", "--system", "ricc", "--workload",
         str(workloads_dir / "RICC-2010-2.swf.gz"), "--dispatcher", "fifo", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)  # starting up or reading RICC (448k jobs)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=30)
    _no_traceback(stderr)
    assert proc.returncode == 143
    assert "interrupted by SIGTERM" in stderr
    assert not (out / "summary.json").exists()


def _swf(tmp_path: Path, text: str = SWF_OK) -> str:
    path = tmp_path / "t.swf"
    path.write_text(text)
    return str(path)


def _simulate(tmp_path: Path, *extra: str, system: str = "kth-sp2", workload: str | None = None
              ) -> tuple[int, str, str, float]:
    t0 = time.monotonic()
    code, out, err = cli("simulate", "--system", system, "--workload", workload or _swf(tmp_path),
                         "--dispatcher", "fifo", "--no-progress", *extra)
    _no_traceback(err)
    return code, out, err, time.monotonic() - t0


def test_unusable_out_refused_before_any_work(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    for out, message in [(afile, "exists and is not a folder"), (afile / "sub", "is a file, not a folder"),
                         (Path("/dev/null"), "exists and is not a folder")]:
        code, _, err, took = _simulate(tmp_path, "--out", str(out))
        assert code == 2 and message in err and took < 2.0, err
    if os.geteuid() != 0:  # root writes anywhere
        ro = tmp_path / "ro"
        ro.mkdir()
        ro.chmod(0o500)
        code, _, err, _ = _simulate(tmp_path, "--out", str(ro / "run"))
        assert code == 2 and "not writable" in err


def test_reused_out_needs_overwrite_and_then_holds_only_new_results(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert _simulate(tmp_path, "--out", str(out))[0] == 0
    (out / "stale.png").write_text("old plot")
    code, _, err, _ = _simulate(tmp_path, "--out", str(out))
    assert code == 2 and "--overwrite" in err
    code, _, err, _ = _simulate(tmp_path, "--out", str(out), "--overwrite", "--no-plots")
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == ["decisions.csv", "schedule.csv", "summary.json"]
    (out / "notes.txt").write_text("mine")  # a file cpdispatch did not write is never deleted
    code, _, err, _ = _simulate(tmp_path, "--out", str(out), "--overwrite")
    assert code == 2 and "notes.txt" in err and (out / "notes.txt").exists()


def test_record_instances_never_overwrites_silently(tmp_path: Path) -> None:
    existing = tmp_path / "inst.jsonl"
    existing.write_text("keep")
    code, _, err, _ = _simulate(tmp_path, "--out", str(tmp_path / "o1"), "--record-instances", str(existing))
    assert code == 2 and "exists" in err and existing.read_text() == "keep"
    code, _, err, _ = _simulate(tmp_path, "--out", str(tmp_path / "o2"), "--record-instances",
                                str(tmp_path / "o2" / "schedule.csv"))
    assert code == 2 and "inside --out" in err
    code, _, err, _ = _simulate(tmp_path, "--out", str(tmp_path / "o3"), "--record-instances", str(existing),
                                "--overwrite")
    assert code == 0 and existing.read_text().startswith('{"kind": "system"')


def test_generate_and_convert_refuse_a_bad_out(tmp_path: Path) -> None:
    afile = tmp_path / "afile"
    afile.write_text("x")
    for args in (["generate", "eurora", "--jobs", "5"], ["convert", _swf(tmp_path), "--system", "kth-sp2"]):
        code, _, err = cli(*args, "--out", str(afile / "w.csv"))
        assert code == 2 and "is a file, not a folder" in err, err
        code, _, err = cli(*args, "--out", str(afile))
        assert code == 2 and "--overwrite" in err and afile.read_text() == "x"
        _no_traceback(err)


SYSTEM = """name = "tiny"
[[nodes]]
group = "n"
count = 2
resources = { core = 4 }
"""


@pytest.mark.parametrize(("text", "message"), [
    (SYSTEM.replace("count = 2", "cnt = 2"), "tiny.toml:4: field 'nodes[1].cnt': unknown key (did you mean 'count'?"),
    (SYSTEM + "[swf]\nprocessor = { gpu = 1 }\n", "field 'swf.processor': names gpu, which no node has"),
    (SYSTEM + "[swf]\nprocesor = { core = 1 }\n", "did you mean 'processor'?"),
    (SYSTEM.replace("count = 2", "count = 100000000000"), "above the largest accepted value"),
    ("stat_time = 3\n" + SYSTEM, "did you mean 'start_time'?"),
])
def test_bad_system_files_are_one_line_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "tiny.toml"
    path.write_text(text)
    code, _, err, took = _simulate(tmp_path, "--out", str(tmp_path / "o"), system=str(path))
    assert code == 2 and message in err and took < 2.0, err
    assert err.count("\n") == 1
    assert not (tmp_path / "o").exists()


def test_folder_or_binary_as_system(tmp_path: Path) -> None:
    binary = tmp_path / "b.toml"
    binary.write_bytes(bytes(range(256)))
    for path, message in [(tmp_path, "is a folder"), (binary, "not a text file")]:
        code, _, err, _ = _simulate(tmp_path, "--out", str(tmp_path / "o"), system=str(path))
        assert code == 2 and message in err, err


@pytest.mark.parametrize(("line", "field"), [
    ("3 20 -1 1000000000000000000000 1 -1 -1 1 100 -1 1 2 1 -1 1 -1 -1 -1\n", "run time (field 4)"),
    ("3 100000000000000000000000 -1 10 1 -1 -1 1 100 -1 1 2 1 -1 1 -1 -1 -1\n", "submit time (field 2)"),
])
def test_huge_numbers_are_rejected_at_their_line(tmp_path: Path, line: str, field: str) -> None:
    trace = _swf(tmp_path, SWF_OK + line)
    code, _, err, _ = _simulate(tmp_path, "--out", str(tmp_path / "o"), "--strict", workload=trace)
    assert code == 2 and f"t.swf:3: field '{field}'" in err and "2^40" in err, err
    code, _, err, _ = _simulate(tmp_path, "--out", str(tmp_path / "o2"), workload=trace)
    assert code == 0 and "1 malformed line(s) skipped" in err


def test_huge_numbers_in_native_csv(tmp_path: Path) -> None:
    path = tmp_path / "w.csv"
    path.write_text("job_id,submit,user,name,queue,units,walltime,runtime,req_core\n"
                    "a,0,u,n,q,1,10,5,1\nb,1,u,n,q,1,10,99999999999999999999,1\n")
    wl = load_workload(path, load_system("kth-sp2"))
    assert [j.id for j in wl.jobs] == ["a"]
    assert wl.skipped[0].field == "runtime" and "2^40" in wl.skipped[0].message


def test_load_factor_has_a_range(tmp_path: Path) -> None:
    for x in ("1e-300", "0", "1e9", "nan"):
        code, _, err, _ = _simulate(tmp_path, "--out", str(tmp_path / "o"), "--load-factor", x)
        assert code == 2 and "--load-factor must be between" in err, (x, err)


def test_job_requesting_nothing_says_so(tmp_path: Path) -> None:
    path = tmp_path / "w.csv"
    path.write_text("job_id,submit,user,name,queue,units,walltime,runtime,req_core\n"
                    "a,0,u,n,q,1,10,5,0\nb,1,u,n,q,1,10,5,1\n")
    code, _, err, _ = _simulate(tmp_path, "--out", str(tmp_path / "o"), workload=str(path))
    assert code == 0, err
    rows = (tmp_path / "o" / "schedule.csv").read_text().splitlines()
    assert rows[1].endswith("rejected,requests no resource (every amount is 0)")


def test_nothing_readable_is_exit_2(tmp_path: Path) -> None:
    trace = _swf(tmp_path, "garbage\nmore garbage here\n")
    code, _, err, _ = _simulate(tmp_path, "--out", str(tmp_path / "o"), workload=trace)
    assert code == 2 and "no job could be read (2 malformed line(s) skipped; the first:" in err, err
    for args in (["inspect", trace, "--system", "kth-sp2"],
                 ["convert", trace, "--system", "kth-sp2", "--out", str(tmp_path / "c.csv")]):
        code, _, err = cli(*args)
        assert code == 2 and "no job could be read" in err, err


def test_demo_checks_its_whole_list_first(tmp_path: Path) -> None:
    code, out, err = cli("demo", "--jobs", "0", "--out", str(tmp_path / "d"))
    assert code == 2 and "--jobs must be at least 1" in err
    code, out, err = cli("demo", "--jobs", "20", "--dispatchers", "fifo,foo", "--out", str(tmp_path / "d"))
    assert code == 2 and "foo" in err and "simulating" not in out, (out, err)
    _no_traceback(err)


def test_alias_names_in_messages() -> None:
    code, _, err = cli("simulate", "--system", "kth-sp2", "--workload", "x", "--dispatcher", "hcp19",
                       "-o", "bogus=1", "--out", "/tmp/never")
    assert code == 2 and "dispatcher hcp19: unknown option 'bogus'" in err, err


def test_every_flag_has_help_with_its_default() -> None:
    parser = build_parser()
    assert "README" in parser.format_help() and "architecture" not in parser.format_help()
    subparsers = [a for a in parser._actions if isinstance(a, __import__("argparse")._SubParsersAction)]
    todo = list(subparsers[0].choices.items())
    while todo:
        name, sub = todo.pop()
        for action in sub._actions:
            if isinstance(action, __import__("argparse")._SubParsersAction):
                todo += list(action.choices.items())
            elif action.dest != "help":
                assert action.help, f"{name} {action.option_strings or action.dest}: no help text"
        text = sub.format_help()
        if name in ("simulate", "demo"):
            assert "(default: " in text


def test_truncated_instances_file_is_reported_as_such(tmp_path: Path) -> None:
    out = tmp_path / "o"
    record = tmp_path / "i.jsonl.gz"
    assert _simulate(tmp_path, "--out", str(out), "--record-instances", str(record))[0] == 0
    data = record.read_bytes()
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(data[: len(data) // 2])
    code, _, err = cli("instances", "compare", str(cut), "--dispatchers", "fifo", "--out", str(tmp_path / "c"))
    assert code == 2 and "truncated or corrupt" in err, err
    assert not (tmp_path / "c" / "comparison.csv").exists()
    with gzip.open(record, "rt") as f:
        assert f.readline().startswith('{"kind": "system"')
