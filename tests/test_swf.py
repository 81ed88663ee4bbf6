"""SWF reader: AccaSim field mapping, KIT rule, missing walltime rule, bad input, real traces."""

from __future__ import annotations

import gzip
import time
from pathlib import Path

import pytest

from cpdispatch.errors import InputError
from cpdispatch.system import NodeGroup, System, load_system
from cpdispatch.workloads import load_workload
from cpdispatch.workloads.swf import kit_units, read_swf

KB = 1024


def swf_line(
    jid: int = 1, submit: int = 0, run: int = 100, alloc: int = 4, used_mem: int = -1, req_procs: int = 4,
    req_time: int = 600, req_mem: int = -1, user: int = 7, exe: int = 3, queue: int = 1, partition: int = 1,
    avg_cpu: str = "-1",
) -> str:
    fields = [jid, submit, 5, run, alloc, avg_cpu, used_mem, req_procs, req_time, req_mem, 1, user, 2, exe,
              queue, partition, -1, -1]
    return " ".join(str(f) for f in fields)


def write(tmp_path: Path, *lines: str, name: str = "w.swf") -> str:
    path = tmp_path / name
    text = "\n".join(lines) + "\n"
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return str(path)


def cores(n: int = 4, core: int = 8) -> System:
    return System.build("cores", [NodeGroup("n", n, {"core": core})])


def with_mem(proc: dict[str, int] | None = None) -> System:
    return System.build("mem", [NodeGroup("n", 4, {"core": 8, "mem": 16384})], proc)


def test_field_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, "; UnixStartTime: 1000", swf_line(
        jid=42, submit=17, run=123, alloc=8, req_procs=4, req_time=600, req_mem=3 * KB + 1,
        used_mem=5 * KB, user=9, exe=11, queue=2, avg_cpu="55.5",
    ))
    w = read_swf(path, with_mem())
    (j,) = w.jobs
    assert (j.id, j.submit, j.runtime, j.walltime) == ("42", 17, 123, 600)
    assert j.units == 4  # requested processors win over allocated
    assert j.req == (1, 4)  # core from [swf] processor; mem 3 KB+1 per processor -> 4 MB (rounded up)
    assert (j.user, j.name, j.queue, j.line) == ("9", "11", "2", 2)
    assert j.default_walltime is None
    assert w.notes["header"] == {"UnixStartTime": "1000"}
    assert w.notes["rule"] == "accasim" and not w.rejected and not w.skipped


def test_fallbacks_and_missing_values(tmp_path: Path) -> None:
    path = write(tmp_path, swf_line(alloc=6, req_procs=-1, req_mem=-1, used_mem=2 * KB, user=-1, exe=-1,
                                    queue=-1))
    (j,) = read_swf(path, with_mem()).jobs
    assert j.units == 6 and j.req == (1, 2)  # allocated processors, used memory
    assert (j.user, j.name, j.queue) == ("", "", "")


def test_processor_equivalence_and_no_memory(tmp_path: Path) -> None:
    path = write(tmp_path, swf_line(req_procs=3, req_mem=-1, used_mem=-1))
    (j,) = read_swf(path, with_mem({"core": 2, "mem": 100})).jobs
    assert j.units == 3 and j.req == (2, 100)  # no memory in the trace: the [swf] processor's amount


def test_memory_ignored_without_mem_type(tmp_path: Path) -> None:
    w = read_swf(write(tmp_path, swf_line(req_mem=4 * KB)), cores())
    assert w.jobs[0].req == (1,)
    assert "memory_ignored" in w.notes


def test_sorted_by_submit_stable(tmp_path: Path) -> None:
    path = write(tmp_path, swf_line(jid=1, submit=50), swf_line(jid=2, submit=10), swf_line(jid=3, submit=50),
                 swf_line(jid=4, submit=10))
    assert [j.id for j in read_swf(path, cores()).jobs] == ["2", "4", "1", "3"]


def test_rejections_are_not_skips(tmp_path: Path) -> None:
    path = write(tmp_path, swf_line(jid=1), swf_line(jid=2, alloc=-1, req_procs=-1), swf_line(jid=3, run=-1),
                 swf_line(jid=4, alloc=0, req_procs=-1))
    w = read_swf(path, cores())
    assert [j.id for j in w.jobs] == ["1"]
    assert [(r.job.id, r.reason) for r in w.rejected] == [
        ("2", "no processor count"), ("3", "run time unknown"), ("4", "no processor count")]
    assert not w.skipped


def test_missing_walltime_gets_queue_default(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        swf_line(jid=1, run=100, req_time=-1, queue=1),
        swf_line(jid=2, run=900, req_time=1000, queue=1),
        swf_line(jid=3, run=50, req_time=-1, queue=2),
        swf_line(jid=4, run=70, req_time=-1, queue=2),
    )
    w = read_swf(path, cores())
    by = {j.id: j for j in w.jobs}
    assert by["1"].walltime is None and by["1"].default_walltime == 900 and by["1"].estimate == 900
    assert by["2"].walltime == 1000 and by["2"].default_walltime is None
    assert by["3"].default_walltime == 70 and by["4"].default_walltime == 70
    note = w.notes["walltime_default"]
    assert note["jobs"] == 3 and note["per_queue"] == {"1": 900, "2": 70} and "largest run time" in note["rule"]


@pytest.mark.parametrize(
    ("procs", "partition", "expected"),
    [
        (10, 1, (1, 10)),  # fewer than a thin node: one unit of all its processors
        (20, 1, (1, 20)),
        (60, 1, (3, 20)),  # multiple of 20: whole nodes
        (30, 1, (3, 10)),  # gcd(30, 20) = 10 cores per unit
        (48, 2, (1, 48)),
        (100, 2, (21, 4)),  # gcd(100, 48) = 4 -> 25 units, capped at the 21 fat nodes
        (40000, 1, (1152, 20)),  # capped at the 1,152 thin nodes
        (47, 0, (1, 47)),  # partition other than 1 = fat
        (64, -1, (16, 4)),  # unknown partition (another system's trace) = thin: gcd(64, 20) = 4
    ],
)
def test_kit_units(procs: int, partition: int, expected: tuple[int, int]) -> None:
    assert kit_units(procs, partition) == expected


def test_kit_rule_applied_for_kit_system(tmp_path: Path) -> None:
    kit = load_system("kit-forhlr2")
    path = write(tmp_path, swf_line(jid=1, req_procs=30, partition=1, req_mem=KB),
                 swf_line(jid=2, req_procs=96, partition=3))
    w = read_swf(path, kit)
    assert w.notes["rule"] == "kit"
    j1, j2 = w.jobs
    k_core, k_mem = kit.type_index("core"), kit.type_index("mem")
    assert j1.units == 3 and j1.req[k_core] == 10 and j1.req[k_mem] == 10  # 10 cores x 1 MB
    assert j2.units == 2 and j2.req[k_core] == 48
    # the rule can also be asked for explicitly, and the default mapping forced on the KIT system
    assert read_swf(path, cores(), rule="kit").jobs[0].units == 3
    assert read_swf(path, kit, rule="accasim").jobs[0].units == 30


# ---------------------------------------------------------------- bad input


BAD = [
    (" ".join(swf_line(jid=2).split()[:12]), "group id (field 13)", "truncated"),
    (swf_line(jid=2).replace(" 100 ", " abc ", 1), "run time (field 4)", "expected an integer"),
    (swf_line(jid=2, run=-5), "run time (field 4)", "negative"),
    (swf_line(jid=2, submit=-1), "submit time (field 2)", "negative"),
    (swf_line(jid=2) + " 9", None, "too many fields"),
]


@pytest.mark.parametrize(("bad", "field", "message"), BAD)
def test_strict_raises_first_bad_line(tmp_path: Path, bad: str, field: str | None, message: str) -> None:
    path = write(tmp_path, "; comment", swf_line(jid=1), bad, swf_line(jid=3), bad)
    with pytest.raises(InputError) as exc:
        read_swf(path, cores(), strict=True)
    err = exc.value
    assert (err.path, err.line, err.field) == (path, 3, field)
    assert message in err.message
    assert f"{path}:3" in str(err)


@pytest.mark.parametrize(("bad", "field", "message"), BAD)
def test_default_mode_skips_and_counts(tmp_path: Path, bad: str, field: str | None, message: str) -> None:
    path = write(tmp_path, swf_line(jid=1), bad, swf_line(jid=3), bad)
    w = read_swf(path, cores())
    assert [j.id for j in w.jobs] == ["1", "3"]
    assert [(e.line, e.field) for e in w.skipped] == [(2, field), (4, field)]


def test_blank_and_indented_comment_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "", "   ", "  ; indented comment", swf_line(jid=1))
    w = read_swf(path, cores(), strict=True)
    assert [j.id for j in w.jobs] == ["1"] and w.jobs[0].line == 4


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        read_swf(str(tmp_path / "nope.swf"), cores())


def test_gz_equals_plain_and_limit(tmp_path: Path) -> None:
    lines = [swf_line(jid=i, submit=10 * i) for i in range(1, 8)]
    plain = read_swf(write(tmp_path, *lines), cores())
    packed = load_workload(write(tmp_path, *lines, name="w.swf.gz"), cores())
    assert packed.jobs == plain.jobs
    limited = load_workload(write(tmp_path, *lines), cores(), limit=3)
    assert [j.id for j in limited.jobs] == ["1", "2", "3"]
    with pytest.raises(ValueError, match="limit"):
        load_workload(write(tmp_path, *lines), cores(), limit=0)


# ---------------------------------------------------------------- real traces (read from shared/, never copied)


def test_kth_whole_trace(workloads_dir: Path) -> None:
    w = load_workload(workloads_dir / "KTH-SP2-1996-2.1-cln.swf.gz", load_system("kth-sp2"))
    assert len(w.jobs) + len(w.rejected) == 28_476  # MANIFEST / header MaxRecords
    assert [r.reason for r in w.rejected] == ["no processor count"]
    assert not w.skipped
    assert w.notes["header"]["MaxRecords"] == "28476"
    assert all(j.walltime is not None for j in w.jobs) and len({j.user for j in w.jobs}) == 214
    assert all(a.submit <= b.submit for a, b in zip(w.jobs, w.jobs[1:]))
    first = w.jobs[0]  # "15 599850 192180 3477 4 -1 -1 4 53940 -1 1 12 12 -1 -1 -1 -1 -1"
    assert (first.id, first.submit, first.runtime, first.units, first.walltime, first.user) == (
        "15", 599850, 3477, 4, 53940, "12")


def test_lublin_walltime_default(workloads_dir: Path) -> None:
    system = System.build("lublin", [NodeGroup("n", 256, {"core": 1})])
    w = load_workload(workloads_dir / "lublin_256.swf.gz", system)
    assert len(w.jobs) == 10_000 and not w.rejected
    longest = max(j.runtime for j in w.jobs)
    assert all(j.walltime is None and j.default_walltime == longest for j in w.jobs)
    assert w.notes["walltime_default"]["jobs"] == 10_000


def test_hpc2n_whole_trace_fast(workloads_dir: Path) -> None:
    t = time.perf_counter()
    w = load_workload(workloads_dir / "HPC2N-2002-2.2-cln.swf.gz", load_system("hpc2n"))
    elapsed = time.perf_counter() - t
    assert len(w.jobs) == 202_871 and not w.rejected and not w.skipped  # field 6 holds floats: unused
    assert elapsed < 10, f"HPC2N read took {elapsed:.1f} s (about 1 s expected)"


def test_corrupt_gzip_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.swf.gz"
    path.write_bytes(b"not gzip at all")
    with pytest.raises(InputError, match="cannot read") as exc:
        read_swf(str(path), cores())
    assert exc.value.path == str(path)
