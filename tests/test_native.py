"""Native CSV: round trips, mapping onto a system, bad input, format detection, statistics."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import pytest

from cpdispatch.errors import InputError
from cpdispatch.job import Job
from cpdispatch.system import NodeGroup, System, load_system
from cpdispatch.workloads import detect_format, format_stats, load_workload, workload_stats, write_native
from cpdispatch.workloads.base import Workload
from cpdispatch.workloads.native import read_native

HEADER = "job_id,submit,user,name,queue,units,walltime,runtime"


def gpu_system() -> System:
    return System.build("g", [NodeGroup("n", 2, {"core": 4, "mem": 1000, "gpu": 1})])


def write(tmp_path: Path, *lines: str, name: str = "w.csv") -> str:
    path = tmp_path / name
    text = "\n".join(lines) + "\n"
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return str(path)


def same(a: list[Job], b: list[Job]) -> bool:
    """Equal jobs, ignoring the source line (it differs between file formats)."""
    return [dataclasses.replace(j, line=0) for j in a] == [dataclasses.replace(j, line=0) for j in b]


def test_read_maps_columns_by_name(tmp_path: Path) -> None:
    path = write(tmp_path, f"{HEADER},req_gpu,req_core", "a,5,u1,app_1,debug,2,60,30,1,3", "b,1,,,,1,,7,0,1")
    w = read_native(path, gpu_system())
    b, a = w.jobs  # sorted by submit
    assert (a.id, a.submit, a.user, a.name, a.queue, a.units, a.walltime, a.runtime) == (
        "a", 5, "u1", "app_1", "debug", 2, 60, 30)
    assert a.req == (3, 0, 1)  # system order core, mem, gpu; mem absent from the file -> 0
    assert b.walltime is None and b.default_walltime == 7  # queue default rule
    assert w.notes["walltime_default"]["jobs"] == 1


def test_type_the_system_lacks(tmp_path: Path) -> None:
    path = write(tmp_path, f"{HEADER},req_core,req_mic", "a,0,,,,1,10,5,1,2", "b,0,,,,1,10,5,1,0")
    w = read_native(path, gpu_system())
    assert [j.id for j in w.jobs] == ["b"]
    (r,) = w.rejected
    assert r.job.id == "a" and r.reason == "requests mic, which system g does not have"


def test_missing_header_column(tmp_path: Path) -> None:
    path = write(tmp_path, "job_id,submit,user,name,queue,units,walltime,req_core", "a,0,,,,1,10,1")
    with pytest.raises(InputError) as exc:
        read_native(path, gpu_system())
    assert (exc.value.line, exc.value.field) == (1, "runtime")
    assert "missing column" in exc.value.message


@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        ("b,x,,,,1,10,5,1", "submit", "expected an integer"),
        ("b,0,,,,1,10,-5,1", "runtime", ">= 0"),
        ("b,0,,,,0,10,5,1", "units", ">= 1"),
        ("b,0,,,,1,10,5,one", "req_core", "expected an integer"),
        ("b,0,,,,1,10,5", None, "expected 9 fields"),
        (",0,,,,1,10,5,1", "job_id", "empty"),
    ],
)
def test_bad_rows(tmp_path: Path, row: str, field: str | None, message: str) -> None:
    path = write(tmp_path, f"{HEADER},req_core", "a,0,,,,1,10,5,1", row, "c,0,,,,1,10,5,1")
    with pytest.raises(InputError) as exc:
        read_native(path, gpu_system(), strict=True)
    assert (exc.value.line, exc.value.field) == (3, field) and message in exc.value.message
    w = read_native(path, gpu_system())
    assert [j.id for j in w.jobs] == ["a", "c"] and [(e.line, e.field) for e in w.skipped] == [(3, field)]


def test_round_trip_swf_native(tmp_path: Path, workloads_dir: Path) -> None:
    system = load_system("kth-sp2")
    swf = load_workload(workloads_dir / "KTH-SP2-1996-2.1-cln.swf.gz", system)
    out = str(tmp_path / "kth.csv.gz")
    assert write_native(out, swf, system) == len(swf.jobs)
    back = load_workload(out, system)
    assert back.notes["format"] == "native" and not back.skipped and not back.rejected
    assert same(back.jobs, swf.jobs)


def test_round_trip_keeps_missing_walltime_and_memory(tmp_path: Path) -> None:
    swf = tmp_path / "m.swf"
    swf.write_text(
        "1 0 -1 100 2 -1 -1 2 -1 2048 1 5 1 7 1 -1 -1 -1\n"
        "2 9 -1 300 1 -1 -1 1 600 -1 1 6 1 -1 1 -1 -1 -1\n"
    )
    system = System.build("s", [NodeGroup("n", 2, {"core": 4, "mem": 8000})])
    a = load_workload(str(swf), system)
    out = str(tmp_path / "m.csv")
    write_native(out, a, system)
    assert Path(out).read_text().splitlines() == [
        f"{HEADER},req_core,req_mem", "1,0,5,7,1,2,,100,1,2", "2,9,6,,1,1,600,300,1,0"]
    b = load_workload(out, system)
    assert same(a.jobs, b.jobs) and b.jobs[0].default_walltime == 300


def test_gz_output_is_reproducible(tmp_path: Path) -> None:
    system = gpu_system()
    w = Workload("t", [Job("x,1", 0, 1, (1, 2, 0), None, 5, user='u "q"', name="n")])
    p1, p2 = str(tmp_path / "a.csv.gz"), str(tmp_path / "b.csv.gz")
    write_native(p1, w, system)
    write_native(p2, w, system)
    assert Path(p1).read_bytes() == Path(p2).read_bytes()
    back = load_workload(p1, system)
    assert back.jobs[0].id == "x,1" and back.jobs[0].user == 'u "q"'  # quoting survives


def test_writer_refuses_jobs_of_another_system(tmp_path: Path) -> None:
    w = Workload("t", [Job("1", 0, 1, (1,), None, 5)])
    with pytest.raises(ValueError, match="request amounts"):
        write_native(str(tmp_path / "x.csv"), w, gpu_system())


def test_detect_format(tmp_path: Path) -> None:
    assert detect_format(str(tmp_path / "whatever.swf.gz")) == "swf"  # by extension, not opened
    assert detect_format(write(tmp_path, f"{HEADER},req_core", name="n.csv.gz")) == "native"
    assert detect_format(write(tmp_path, "name,cpu_milli,memory_mib", name="a.csv")) == "alibaba"
    assert detect_format(write(tmp_path, "; Version: 2", name="t.txt")) == "swf"
    with pytest.raises(InputError) as exc:
        detect_format(write(tmp_path, "a,b,c", name="x.csv"))
    assert exc.value.line == 1
    with pytest.raises(ValueError, match="unknown workload format"):
        load_workload(write(tmp_path, "a", name="y.csv"), gpu_system(), fmt="parquet")


def test_stats(tmp_path: Path) -> None:
    path = write(tmp_path, f"{HEADER},req_core,req_gpu", "a,0,u1,x,q1,2,100,50,1,1", "b,3600,u2,y,q2,1,,7200,3,0",
                 "c,7200,u1,x,q1,3,100,10,1,1")
    system = gpu_system()
    stats = workload_stats(load_workload(path, system), system)
    json.dumps(stats)  # JSON-serialisable for the command line
    assert stats["jobs"] == 3 and stats["users"] == 2 and stats["queues"] == {"q1": 2, "q2": 1}
    assert stats["span"]["seconds"] == 7200
    assert stats["share_under_1h"] == pytest.approx(2 / 3)
    assert stats["demand"]["gpu"]["jobs_asking"] == 2
    assert stats["walltime"]["given"] == 2 and stats["walltime"]["default"] == 1
    assert stats["unfit"] == 1  # c asks 3 units of 1 GPU on a system of 2 GPUs
    text = format_stats(stats)
    assert "jobs 3" in text and "walltime_default" in text


def test_stats_of_empty_workload() -> None:
    system = gpu_system()
    stats = workload_stats(Workload("empty", []), system)
    assert stats["jobs"] == 0 and stats["runtime"] == {}
    assert "jobs 0" in format_stats(stats)
