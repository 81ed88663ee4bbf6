"""Alibaba GPU cluster trace v2023 (`openb_pod_list_*.csv`, the ATC'23 "Beware of Fragmentation"
trace) and the generator of the `alibaba-gpu-2023` system preset from its node list.

Each pod runs on one node, so it becomes a one-unit job: core = ceil(cpu_milli / 1000),
mem = memory_mib, gpu = num_gpu. A pod with num_gpu 1 and gpu_milli < 1000 shares a GPU in
production; here it takes one whole GPU (the resource model has no fractions), counted in
notes["fractional_gpu"]. submit = creation_time; runtime = deletion_time - scheduled_time (the time
it held resources). Pods still Running when the trace was taken have a censored run time: they keep
it and are counted in notes["censored"]. Pending pods were never scheduled, so their run time is
unknown: they are rejected. qos becomes the queue. The trace has no user and no walltime: user is
"" and the walltime comes from the queue default rule (native.fill_default_walltime). `gpu_spec`
(allowed GPU models, filled in the gpuspec33 variant) is not modelled; it is counted in notes.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import NamedTuple

from ..errors import InputError
from ..job import Job, Rejection
from ..system import NodeGroup, System
from .base import Workload
from .reading import (
    MAX_VALUE,
    RequestMapper,
    above_max,
    check_header,
    check_limit,
    fill_default_walltime,
    read_text,
    record_error,
    sort_by_submit,
)

POD_COLUMNS = (
    "name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
    "creation_time", "deletion_time", "scheduled_time",
)
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
PHASES = ("Running", "Succeeded", "Failed", "Pending")
NEVER_SCHEDULED = "never scheduled in the trace (run time unknown)"


def _int(path: str, line: int, column: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise InputError(path, line, column, f"expected an integer, got {text!r}") from None
    if value < 0:
        raise InputError(path, line, column, f"expected a non-negative integer, got {value}")
    if value > MAX_VALUE:
        raise InputError(path, line, column, above_max(value))
    return value


class _Pod(NamedTuple):
    """The fields of one pod row that the mapping reads, checked."""

    name: str
    cpu: int
    mem: int
    gpus: int
    gpu_milli: int
    gpu_spec: str
    qos: str
    phase: str
    created: int
    sched: int | None
    deleted: int | None


def _parse_pod(path: str, line: int, row: list[str], width: int, col: dict[str, int]) -> _Pod:
    """One pod row; the first problem found raises InputError naming its column."""
    if len(row) != width:
        raise InputError(path, line, None, f"expected {width} fields, got {len(row)}")
    get = {c: row[col[c]].strip() for c in POD_COLUMNS}
    if not get["name"]:
        raise InputError(path, line, "name", "empty pod name")
    cpu = _int(path, line, "cpu_milli", get["cpu_milli"])
    mem = _int(path, line, "memory_mib", get["memory_mib"])
    gpus = _int(path, line, "num_gpu", get["num_gpu"])
    gpu_milli = _int(path, line, "gpu_milli", get["gpu_milli"])
    phase = get["pod_phase"]
    if phase not in PHASES:
        raise InputError(path, line, "pod_phase", f"unknown phase {phase!r} (known: {', '.join(PHASES)})")
    created = _int(path, line, "creation_time", get["creation_time"])
    sched = _int(path, line, "scheduled_time", get["scheduled_time"]) if get["scheduled_time"] else None
    deleted = _int(path, line, "deletion_time", get["deletion_time"]) if get["deletion_time"] else None
    if sched is not None and deleted is None:
        raise InputError(path, line, "deletion_time", "empty, but the pod was scheduled")
    if sched is not None and deleted is not None and deleted < sched:
        raise InputError(path, line, "deletion_time", f"{deleted} is before scheduled_time {sched}")
    return _Pod(get["name"], cpu, mem, gpus, gpu_milli, get["gpu_spec"], get["qos"], phase, created, sched, deleted)


class _Tally:
    """What the notes report about the pods read: censored run times, fractional GPUs, GPU specs."""

    def __init__(self) -> None:
        self.fractional = self.with_spec = self.trace_end = 0
        self.running_ends: list[int] = []  # deletion times of pods still Running (censored run times)

    def count(self, pod: _Pod) -> None:
        if pod.deleted is not None:
            self.trace_end = max(self.trace_end, pod.deleted)
        if pod.gpus == 1 and 0 < pod.gpu_milli < 1000:
            self.fractional += 1
        if pod.gpu_spec:
            self.with_spec += 1

    def notes(self, rejected: list[Rejection]) -> dict[str, object]:
        return {
            "format": "alibaba",
            "censored": len(self.running_ends),
            "censored_at_trace_end": sum(1 for d in self.running_ends if d == self.trace_end),
            "censored_rule": "pods still Running when the trace was taken keep deletion - scheduled as run time",
            "fractional_gpu": self.fractional,
            "fractional_gpu_rule": "a pod with num_gpu 1 and gpu_milli < 1000 takes one whole GPU",
            "never_scheduled": sum(1 for r in rejected if r.reason == NEVER_SCHEDULED),
            "gpu_spec_ignored": self.with_spec,
            "trace_end": self.trace_end,
        }


def read_alibaba(path: str, system: System, strict: bool = False, limit: int | None = None) -> Workload:
    """Read an Alibaba v2023 pod list onto `system` (see the module docstring)."""
    check_limit(limit)
    text = read_text(path)
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if not header:
        raise InputError(path, 1, None, "empty file, expected the pod list header row")
    col = check_header(path, header, POD_COLUMNS)
    mapper = RequestMapper(system)
    jobs: list[Job] = []
    rejected: list[Rejection] = []
    skipped: list[InputError] = []
    tally = _Tally()
    zero = tuple(0 for _ in system.types)
    for row in reader:
        line = reader.line_num
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        try:
            pod = _parse_pod(path, line, row, len(header), col)
        except InputError as err:
            record_error(err, strict, skipped)
            continue
        tally.count(pod)
        req = mapper.map({"core": -(-pod.cpu // 1000), "mem": pod.mem, "gpu": pod.gpus})
        runtime = -1 if pod.sched is None or pod.deleted is None else pod.deleted - pod.sched
        job = Job(
            id=pod.name, submit=pod.created, units=1, req=req if isinstance(req, tuple) else zero,
            walltime=None, runtime=runtime, user="", name="", queue=pod.qos, line=line,
        )
        if pod.sched is None:
            rejected.append(Rejection(job, NEVER_SCHEDULED))
        elif isinstance(req, str):
            rejected.append(Rejection(job, req))
        else:
            jobs.append(job)
            if pod.phase == "Running":
                tally.running_ends.append(pod.deleted or 0)
        if limit is not None and len(jobs) + len(rejected) >= limit:
            break
    notes = tally.notes(rejected)
    sort_by_submit(jobs)
    jobs = fill_default_walltime(jobs, notes)
    return Workload(source=path, jobs=jobs, rejected=rejected, skipped=skipped, notes=notes)


def reduced_system(system: System, divisor: int) -> System:
    """The node kinds of `system` (distinct capacities, in order of first appearance), each with
    its node count divided by `divisor` (rounded, at least 1): a system small enough for a CP
    dispatcher that keeps every kind of node, so that every pod still fits somewhere."""
    if divisor < 1:
        raise ValueError(f"divisor must be >= 1, got {divisor}")
    kinds: dict[tuple[tuple[str, int], ...], tuple[NodeGroup, int]] = {}
    for g in system.groups:
        key = tuple(sorted(g.resources.items()))
        first, count = kinds.get(key, (g, 0))
        kinds[key] = (first, count + g.count)
    groups = [NodeGroup(f"{g.group.rsplit('-', 1)[0]}-{k}", max(1, round(count / divisor)), dict(g.resources))
              for k, (g, count) in enumerate(kinds.values(), 1)]
    return System.build(f"{system.name}/{divisor}", groups, system.swf_processor, system.start_time)


def preset_toml_from_nodes(path: str, name: str = "alibaba-gpu-2023") -> str:
    """The system preset from `openb_node_list_all_node.csv[.gz]`: one node group per run of
    consecutive nodes with identical (cores, memory, GPUs, model), in file order, named
    `<model or cpu>-<k>` (k counts the runs of that prefix), so node order follows the trace."""
    text = read_text(path)
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if not header:
        raise InputError(path, 1, None, "empty file, expected the node list header row")
    col = check_header(path, header, NODE_COLUMNS)
    runs: list[tuple[tuple[int, int, int, str], int]] = []  # (cores, mem, gpus, model), count
    for row in reader:
        if not row:
            continue
        line = reader.line_num
        if len(row) != len(header):
            raise InputError(path, line, None, f"expected {len(header)} fields, got {len(row)}")
        cpu = _int(path, line, "cpu_milli", row[col["cpu_milli"]])
        if cpu % 1000:
            raise InputError(path, line, "cpu_milli", f"{cpu} is not a whole number of cores")
        key = (cpu // 1000, _int(path, line, "memory_mib", row[col["memory_mib"]]),
               _int(path, line, "gpu", row[col["gpu"]]), row[col["model"]].strip())
        if runs and runs[-1][0] == key:
            runs[-1] = (key, runs[-1][1] + 1)
        else:
            runs.append((key, 1))
    nodes = sum(c for _, c in runs)
    out = [
        f"# Alibaba GPU cluster, trace v2023 (alibaba/clusterdata cluster-trace-gpu-v2023): {nodes:,} nodes.",
        f"# Generated by cpdispatch.workloads.alibaba.preset_toml_from_nodes from {Path(path).name};",
        "# one group per run of identical consecutive nodes (node order as in the trace). mem in MiB.",
        f'name = "{name}"',
        "start_time = 0",
        "",
    ]
    seen: dict[str, int] = {}
    for (cores, mem, gpu, model), count in runs:
        prefix = model.lower() if model else "cpu"
        seen[prefix] = seen.get(prefix, 0) + 1
        out += [
            "[[nodes]]",
            f'group = "{prefix}-{seen[prefix]}"',
            f"count = {count}",
            f"resources = {{ core = {cores}, mem = {mem}, gpu = {gpu} }}",
            "",
        ]
    out += ["[swf]", "processor = { core = 1 }", ""]
    return "\n".join(out)
