"""Slurm's state as cpdispatch sees it: nodes as a `System` with free amounts, and every job in
one of the classes the driver acts on. Slurm holds all the state; this module only reads it.

A Slurm job becomes a `Job` of identical units, so that the simulator's dispatchers apply:
* `-n T` without `-N`, no GRES and memory per CPU: T units of cpus/T cores each, placed freely
  (Slurm lays the tasks out in blocks over the listed nodes);
* `-N K` with K > 1: K units, one per node (`distinct`: Slurm gives each listed node work), each
  with the per-node cpus (total / K, rounded up), memory and GRES;
* anything else: one unit with the whole request.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..job import Job
from ..system import NodeGroup, System
from .failsafe import WAIT_TAG
from .hostlist import expand

TAG = "cpdispatch:"
TERMINAL = frozenset({"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY",
                      "BOOT_FAIL", "DEADLINE", "REVOKED", "SPECIAL_EXIT"})
ACTIVE = frozenset({"RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT"})
USABLE_STATES = frozenset({"idle", "mixed", "allocated", "completing"})
BAD_FLAGS = frozenset({"DRAIN", "DRAINING", "DRAINED", "DOWN", "FAIL", "FAILING", "NOT_RESPONDING", "MAINTENANCE",
                       "REBOOT_REQUESTED", "REBOOT_ISSUED", "POWERED_DOWN", "POWERING_DOWN", "POWER_DOWN",
                       "RESERVED", "INVALID", "INVALID_REG", "UNKNOWN", "FUTURE"})
#: Reasons a released job cannot start where it was pinned: take it back at once.
STUCK_REASONS = ("BadConstraints", "ReqNodeNotAvail", "PartitionConfig", "Dependency", "NodeDown",
                 "PartitionNodeLimit", "InvalidAccount", "InvalidQOS")


def parse_gres(text: str | None) -> dict[str, int]:
    """`gpu:2,gpu:a100:1(IDX:0),gres:mic:1` -> {gpu: 3, mic: 1} (counts summed per name)."""
    out: dict[str, int] = {}
    for part in re.sub(r"\([^)]*\)", "", text or "").split(","):
        fields = [f for f in part.strip().split(":") if f]
        if fields and fields[0] == "gres":
            fields = fields[1:]
        if fields and fields[0].startswith("gres/"):  # later versions: gres/gpu:2
            fields[0] = fields[0].removeprefix("gres/")
        if not fields or fields[0] == "(null)":
            continue
        count = int(fields[-1]) if len(fields) > 1 and fields[-1].isdigit() else 1
        out[fields[0]] = out.get(fields[0], 0) + count
    return out


@dataclass(frozen=True)
class Node:
    name: str
    capacity: dict[str, int]
    used: dict[str, int]
    partitions: tuple[str, ...]
    unusable: str  # why the dispatcher may not use it ("" = usable)
    features: frozenset[str] = frozenset()


def _state(value: Any) -> tuple[str, list[str]]:
    """A state and its flags: a string in 22.05 (flags apart), a list [STATE, FLAG...] later."""
    if isinstance(value, list):
        return (str(value[0]) if value else ""), [str(v) for v in value[1:]]
    return str(value or ""), []


def read_node(raw: dict[str, Any], up_partitions: set[str]) -> Node:
    state, more = _state(raw.get("state"))
    state = state.lower()
    flags = set(raw.get("state_flags") or []) | set(more)
    parts = tuple(raw.get("partitions") or [])
    why = ""
    if state not in USABLE_STATES or flags & BAD_FLAGS:
        why = f"state {state}{'+' + '+'.join(sorted(flags)) if flags else ''}"
    elif not set(parts) & up_partitions:
        why = "in no UP partition"
    cap = {"core": int(raw.get("cpus") or 0), "mem": int(raw.get("real_memory") or 0), **parse_gres(raw.get("gres"))}
    used = {"core": int(raw.get("alloc_cpus") or 0), "mem": int(raw.get("alloc_memory") or 0),
            **parse_gres(raw.get("gres_used"))}
    features = frozenset(f for f in str(raw.get("active_features") or raw.get("features") or "").split(",") if f)
    return Node(str(raw["name"]), cap, used, parts, why, features)


def build_system(nodes: list[Node], name: str, every: list[Node] | None = None) -> System:
    """`nodes` as a System (node names are Slurm's; groups gather equal capacities). The types
    come from `every` node, usable or not, so that a GPU request still counts when every GPU node
    is drained."""
    types = ["core", "mem", *sorted({t for n in every or nodes for t in n.capacity} - {"core", "mem"})]
    rows = [tuple(n.capacity.get(t, 0) for t in types) for n in nodes]
    groups: list[NodeGroup] = []
    for row in rows:
        if not groups or tuple(groups[-1].resources.values()) != row:
            groups.append(NodeGroup(f"g{len(groups) + 1}", 0, dict(zip(types, row))))
        last = groups[-1]
        groups[-1] = NodeGroup(last.group, last.count + 1, last.resources)
    cap = np.array(rows, dtype=np.int64).reshape(len(rows), len(types))
    cap.setflags(write=False)
    return System(name=name, groups=tuple(groups), swf_processor={"core": 1}, types=tuple(types), capacity=cap,
                  node_names=tuple(n.name for n in nodes))


@dataclass(frozen=True)
class Request:
    """A job's request as identical units (see the module's docstring)."""

    units: int
    per_unit: dict[str, int]
    distinct: bool  # one unit per node
    exclusive: bool  # `--exclusive`: the nodes must be idle

    def req(self, types: Iterable[str]) -> tuple[int, ...]:
        return tuple(self.per_unit.get(t, 0) for t in types)


def _int(value: Any, default: int = 0) -> int:
    if isinstance(value, dict):  # later OpenAPI versions: {"set": true, "number": N}
        value = value.get("number") if value.get("set", True) else None
    return default if value is None else int(value)


def read_request(raw: dict[str, Any]) -> Request:
    nodes = max(1, _int(raw.get("node_count"), 1))
    cpus = max(1, _int(raw.get("cpus"), 1))
    tasks = max(1, _int(raw.get("tasks"), 1))
    per_cpu, per_node = raw.get("memory_per_cpu"), raw.get("memory_per_node")
    gres_node, gres_job = parse_gres(raw.get("tres_per_node")), parse_gres(raw.get("tres_per_job"))
    exclusive = raw.get("shared") == "none"
    if tasks > 1 and cpus % tasks == 0 and not gres_node and not gres_job and per_node is None \
            and _int(raw.get("max_nodes")) == 0:  # no -N: Slurm's node_count is only its minimum
        unit_cpus = cpus // tasks
        return Request(tasks, {"core": unit_cpus, "mem": _int(per_cpu) * unit_cpus}, False, exclusive)
    if nodes > 1:
        unit_cpus = max(_int(raw.get("minimum_cpus_per_node"), 1), math.ceil(cpus / nodes))
        mem = _int(per_node) if per_node is not None else _int(per_cpu) * unit_cpus
        gres = {k: max(gres_node.get(k, 0), math.ceil(gres_job.get(k, 0) / nodes)) for k in {*gres_node, *gres_job}}
        return Request(nodes, {"core": unit_cpus, "mem": mem, **gres}, True, exclusive)
    mem = _int(per_node) if per_node is not None else _int(per_cpu) * cpus
    return Request(1, {"core": cpus, "mem": mem, **{k: max(gres_node.get(k, 0), gres_job.get(k, 0))
                                                     for k in {*gres_node, *gres_job}}}, False, exclusive)


@dataclass(frozen=True)
class SlurmJob:
    """One job (or array task) as Slurm shows it, with the fields the driver uses."""

    id: str
    state: str
    reason: str
    priority: int
    submit: int
    start: int
    end: int
    time_limit_s: int | None
    user: str
    name: str
    partition: str
    dependency: str
    features: str
    admin_comment: str
    required: tuple[str, ...]
    nodes: tuple[str, ...]
    request: Request
    usage: dict[str, dict[str, int]] = field(default_factory=dict)  # running: per node, per type
    eligible: int = 0  # when Slurm may start it by itself (its begin time)

    @property
    def kind(self) -> str:
        """held (priority 0), waiting (deferred by the fail-open lease: begin time pushed by the
        driver), blocked (held or waiting, dependency unmet), committed (pinned and released by a
        driver, not started), foreign (pending under Slurm's own scheduling), running or finished."""
        if self.state in TERMINAL:
            return "finished"
        if self.state in ACTIVE:
            return "running"
        waiting = self.admin_comment.startswith(WAIT_TAG)
        if self.priority == 0 or waiting:
            if "unfulfilled" in self.dependency or "failed" in self.dependency:
                return "blocked"
            return "held" if self.priority == 0 else "waiting"
        return "committed" if self.admin_comment.startswith(TAG) and self.required else "foreign"

    @property
    def tagged(self) -> bool:
        """Held or deferred by cpdispatch (its lua or a driver), not by its user."""
        return self.admin_comment.startswith(TAG)

    @property
    def pinned_at(self) -> float:
        """When a driver pinned the job (the time in its tag; 0 if unreadable: re-held at once)."""
        try:
            return float(self.admin_comment.removeprefix(TAG).split(":")[1])
        except (IndexError, ValueError):
            return 0.0

    @property
    def begin_after(self) -> int:
        """The user's own `--begin` (kept by the lua in the tag), 0 if none."""
        rest = self.admin_comment.removeprefix(WAIT_TAG)
        return int(rest[1:]) if rest != self.admin_comment and rest[1:].isdigit() else 0

    def job(self, types: tuple[str, ...], default_walltime: int) -> Job:
        """The cpdispatch job (its run time is unknown: the walltime stands in, never shown to a
        dispatcher)."""
        wall = self.time_limit_s
        default = None if wall is not None else default_walltime
        return Job(id=self.id, submit=self.submit, units=self.request.units, req=self.request.req(types),
                   walltime=wall, runtime=wall or default_walltime, user=self.user, name=self.name,
                   queue=self.partition, default_walltime=default, one_per_node=self.request.distinct)


def _array_tasks(text: str) -> list[str]:
    """`0-3,7%2` -> [0, 1, 2, 3, 7] (the `%` limit is Slurm's to enforce)."""
    out: list[str] = []
    for part in text.split("%")[0].split(","):
        if "-" in part:
            lo, hi = part.split("-", 1)
            step = 1
            if ":" in hi:
                hi, s = hi.split(":", 1)
                step = int(s)
            out.extend(str(i) for i in range(int(lo), int(hi) + 1, step))
        elif part:
            out.append(part)
    return out


def _usage(raw: dict[str, Any], nodes: list[str]) -> dict[str, dict[str, int]]:
    """Per allocated node, what a running job holds (cores, memory, GRES)."""
    res = raw.get("job_resources") or {}
    gres = list(raw.get("gres_detail") or [])
    out: dict[str, dict[str, int]] = {}
    for i, entry in enumerate(res.get("allocated_nodes") or []):
        cores = sum(len(s.get("cores", {})) for s in (entry.get("sockets") or {}).values())
        per = {"core": cores, "mem": _int(entry.get("memory_allocated"))}
        per.update(parse_gres(gres[i]) if i < len(gres) else {})
        out[str(entry.get("nodename"))] = per
    if not out and nodes:  # no per-node detail: an even share of the request
        r = read_request(raw)
        out = {n: dict(r.per_unit) for n in nodes}
    return out


def job_from_raw(raw: dict[str, Any], usage: dict[str, dict[str, int]] | None = None) -> list[SlurmJob]:
    """The job of one squeue-JSON record (`usage`: a running job's use per node when the record
    has none of its own); a pending array record gives one job per task."""
    state = _state(raw.get("job_state"))[0]
    limit = raw.get("time_limit")
    limit_s = None if limit is None or (isinstance(limit, dict) and not limit.get("set", True)) else _int(limit) * 60
    nodes = tuple(expand(raw.get("nodes")))
    one = SlurmJob(
        id=str(raw["job_id"]), state=state, reason=str(raw.get("state_reason") or ""),
        priority=_int(raw.get("priority")),
        submit=_int(raw.get("submit_time")), start=_int(raw.get("start_time")), end=_int(raw.get("end_time")),
        time_limit_s=limit_s, user=str(raw.get("user_name") or raw.get("user_id") or ""),
        name=str(raw.get("name") or ""), partition=str(raw.get("partition") or ""),
        dependency=str(raw.get("dependency") or ""), features=str(raw.get("features") or ""),
        admin_comment=str(raw.get("admin_comment") or ""),
        required=tuple(expand(raw.get("required_nodes"))), nodes=nodes, request=read_request(raw),
        usage=(usage or _usage(raw, list(nodes))) if state in ACTIVE else {}, eligible=_int(raw.get("eligible_time")))
    tasks = str(raw.get("array_task_string") or "")
    if tasks and state == "PENDING":  # a pending array record: each task is dispatched on its own
        return [replace(one, id=f"{raw['array_job_id']}_{t}") for t in _array_tasks(tasks)]
    return [one]


def read_jobs(raw_jobs: list[dict[str, Any]]) -> list[SlurmJob]:
    """The jobs of `squeue --json`."""
    return [job for raw in raw_jobs for job in job_from_raw(raw)]


def up_partitions(partitions: list[dict[str, str]]) -> dict[str, list[str]]:
    """UP partitions and their nodes."""
    return {p["PartitionName"]: expand(p.get("Nodes")) for p in partitions
            if "PartitionName" in p and p.get("State", "UP") == "UP"}


def feature_match(wanted: str, have: frozenset[str]) -> bool:
    """`--constraint` for the plain forms `a`, `a&b` and `a,b` (all needed); other forms (`|`,
    counts, brackets) are left to Slurm, whose refusal re-holds the job."""
    if not wanted or any(c in wanted for c in "|[]*"):
        return True
    return all(f in have for f in re.split(r"[&,]", wanted) if f)
