"""Alibaba GPU trace v2023: pod mapping, counts of the real files, the generated system preset."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from cpdispatch.errors import InputError
from cpdispatch.system import NodeGroup, System, load_system
from cpdispatch.workloads import load_workload
from cpdispatch.workloads.alibaba import NEVER_SCHEDULED, preset_toml_from_nodes, read_alibaba, reduced_system

HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time"
ALIBABA = "alibaba_gpu_v2023"


def write(tmp_path: Path, *rows: str) -> str:
    path = tmp_path / "pods.csv"
    path.write_text("\n".join((HEADER, *rows)) + "\n")
    return str(path)


def small() -> System:
    return System.build("small", [NodeGroup("g", 2, {"core": 32, "mem": 65536, "gpu": 8})])


def test_pod_mapping(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "p0,11908,47104,1,460,,LS,Running,100,5000,200",
        "p1,4000,1024,2,1000,V100M16|V100M32,BE,Failed,50,80,60",
        "p2,1000,1024,0,0,,BE,Pending,70,90,",
        "p3,500,512,0,0,,BE,Succeeded,300,300,300",
    )
    w = read_alibaba(path, small())
    p1, p0, p3 = w.jobs  # by creation time
    assert (p0.id, p0.submit, p0.units, p0.req, p0.runtime, p0.queue) == ("p0", 100, 1, (12, 47104, 1), 4800, "LS")
    assert p0.user == "" and p0.walltime is None and p0.default_walltime == 4800
    assert p1.req == (4, 1024, 2) and p1.runtime == 20 and p1.default_walltime == 20  # BE queue default
    assert p3.runtime == 0 and p3.req == (1, 512, 0)
    (r,) = w.rejected
    assert r.job.id == "p2" and r.reason == NEVER_SCHEDULED
    n = w.notes
    assert (n["censored"], n["fractional_gpu"], n["gpu_spec_ignored"], n["never_scheduled"]) == (1, 1, 1, 1)
    assert n["trace_end"] == 5000


def test_system_without_gpus_rejects_gpu_pods(tmp_path: Path) -> None:
    path = write(tmp_path, "p0,1000,10,1,1000,,LS,Running,0,10,0", "p1,1000,10,0,0,,LS,Running,0,10,0")
    w = read_alibaba(path, System.build("cpu", [NodeGroup("n", 1, {"core": 4, "mem": 100})]))
    assert [j.id for j in w.jobs] == ["p1"]
    assert w.rejected[0].reason == "requests gpu, which system cpu does not have"


@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        ("p1,12x,1,0,0,,LS,Running,0,10,0", "cpu_milli", "expected an integer"),
        ("p1,1000,1,0,0,,LS,Running,0,5,10", "deletion_time", "before scheduled_time"),
        ("p1,1000,1,0,0,,LS,Lost,0,5,0", "pod_phase", "unknown phase"),
        ("p1,1000,1,-1,0,,LS,Running,0,5,0", "num_gpu", "non-negative"),
        ("p1,1000,1,0,0,,LS,Running,0,5", None, "expected 11 fields"),
    ],
)
def test_bad_rows(tmp_path: Path, row: str, field: str | None, message: str) -> None:
    path = write(tmp_path, "p0,1000,1,0,0,,LS,Running,0,10,0", row)
    with pytest.raises(InputError) as exc:
        read_alibaba(path, small(), strict=True)
    assert (exc.value.line, exc.value.field) == (3, field) and message in exc.value.message
    w = read_alibaba(path, small())
    assert [j.id for j in w.jobs] == ["p0"] and len(w.skipped) == 1


def test_missing_column(tmp_path: Path) -> None:
    path = tmp_path / "pods.csv"
    path.write_text(HEADER.replace(",qos", "") + "\n")
    with pytest.raises(InputError) as exc:
        read_alibaba(str(path), small())
    assert (exc.value.line, exc.value.field) == (1, "qos")


@pytest.mark.parametrize("name", ["openb_pod_list_default.csv.gz", "openb_pod_list_gpuspec33.csv.gz"])
def test_real_pod_lists(workloads_dir: Path, name: str) -> None:
    system = load_system("alibaba-gpu-2023")
    w = load_workload(workloads_dir / ALIBABA / name, system)  # auto-detected by its header
    assert w.notes["format"] == "alibaba"
    assert len(w.jobs) + len(w.rejected) == 8_152 and not w.skipped
    assert len(w.rejected) == 897 and {r.reason for r in w.rejected} == {NEVER_SCHEDULED}
    assert w.notes["censored"] == 5_193 and w.notes["fractional_gpu"] == 3_078
    assert w.notes["gpu_spec_ignored"] == (2_388 if "gpuspec33" in name else 0)
    assert all(system.max_units(j.req) >= 1 for j in w.jobs)  # every pod fits a node of the trace
    first = w.jobs[0]  # openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0
    assert (first.id, first.req, first.runtime, first.queue) == ("openb-pod-0000", (12, 16384, 1), 12537496, "LS")
    assert w.notes["walltime_default"]["per_queue"]["LS"] == max(j.runtime for j in w.jobs if j.queue == "LS")


def test_preset_is_generated_from_the_node_list(workloads_dir: Path) -> None:
    nodes = workloads_dir / ALIBABA / "openb_node_list_all_node.csv.gz"
    committed = (resources.files("cpdispatch.presets") / "alibaba-gpu-2023.toml").read_text()
    assert preset_toml_from_nodes(str(nodes)) == committed
    system = load_system("alibaba-gpu-2023")
    assert system.n_nodes == 1_523 and system.types == ("core", "mem", "gpu")
    assert system.totals[system.type_index("gpu")] == 6_212
    assert system.node_names[0] == "cpu-1-1" and len({g.group for g in system.groups}) == len(system.groups)


def test_reduced_system_keeps_every_node_kind(workloads_dir: Path) -> None:
    """A 25th of the nodes, every kind kept (at least one node each), so every pod still fits."""
    full = load_system("alibaba-gpu-2023")
    reduced = reduced_system(full, 25)
    kinds = {tuple(int(x) for x in row) for row in full.capacity}
    assert {tuple(int(x) for x in row) for row in reduced.capacity} == kinds
    assert len(reduced.groups) == len(kinds) and reduced.types == full.types
    assert reduced.n_nodes == sum(max(1, round(sum(g.count for g in full.groups
                                                   if tuple(sorted(g.resources.items())) == key) / 25))
                                  for key in {tuple(sorted(g.resources.items())) for g in full.groups})
    w = read_alibaba(str(workloads_dir / ALIBABA / "openb_pod_list_default.csv.gz"), reduced, limit=2000)
    assert all(reduced.max_units(j.req) >= 1 for j in w.jobs)
    assert reduced_system(full, 1).n_nodes == full.n_nodes
    with pytest.raises(ValueError):
        reduced_system(full, 0)
