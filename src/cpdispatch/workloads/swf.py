"""Standard Workload Format (SWF) reader, with AccaSim's mapping so results compare with the papers.

Default ("accasim") rule — each SWF processor is one job unit:
  processors = field 8 (requested) else field 5 (allocated); units = processors; the per-unit request
  is `system.swf_processor` (e.g. {core: 1}); memory per unit = field 10 (requested KB per processor)
  else field 7 (used KB per processor), in MB rounded up, only when the system has a `mem` type.
  walltime = field 9 (-1: none), runtime = field 4, user = field 12, queue = field 15,
  name = field 14 (executable number, the only name-like SWF field), id = field 1, submit = field 2.
  Missing values (-1) of user, queue and executable become "". recorded_wait = field 3 (the real
  scheduler's wait, for the `recorded` baseline; None when -1 or not a whole number).

KIT rule (system `kit-forhlr2`, or rule="kit"; the PCP'20 authors' KIT tweaker): partition (field 16)
  1 = thin nodes (20 cores), anything else = fat nodes (48 cores); an unknown partition (-1: a trace
  of another system replayed on KIT's shape) counts as thin, where 98% of the nodes are. With cpn the node's cores:
  per-unit cores = cpn if processors >= cpn and divisible by cpn, gcd(processors, cpn) if
  processors >= cpn, else processors; units = processors // per-unit cores (1 when processors < cpn),
  capped at 1152 (thin) / 21 (fat) — so a job larger than its partition shrinks, as in the reference.
  Memory per unit (when the system has `mem`) is the per-processor memory times per-unit cores.
  Nothing pins a thin job to thin nodes (the reference does not either).

Jobs whose processor count is missing in both fields (or 0), or whose run time is -1, can never be
simulated: they are *rejected* with a reason, not skipped. Malformed lines (not 18 fields; a field
the mapping uses that is non-numeric, negative other than -1, or a negative submit time) raise
InputError in strict mode and are collected in `Workload.skipped` otherwise. Fields the mapping does
not use (average CPU time — a float in HPC2N —, status, group, 17, 18) are not checked: the
per-line path stays lean (RICC, 447,794 lines, reads in about 1.5 s). Jobs without walltime get the
queue default (native.fill_default_walltime). Lines starting with `;` are comments; `; Key: value`
header lines are kept in notes["header"].
"""

from __future__ import annotations

import math

from ..errors import InputError
from ..gcpause import no_gc
from ..job import Job, Rejection
from ..system import System
from .base import Workload
from .reading import MAX_VALUE, above_max, check_limit, fill_default_walltime, read_text, record_error, sort_by_submit

SWF_FIELDS = (
    "job number", "submit time", "wait time", "run time", "allocated processors", "average CPU time",
    "used memory", "requested processors", "requested time", "requested memory", "status", "user id",
    "group id", "executable number", "queue number", "partition number", "preceding job", "think time",
)
USED_FIELDS = (0, 1, 3, 4, 6, 7, 8, 9, 11, 13, 14, 15)  # 0-based; the others are not checked
BOUNDED_FIELDS = (1, 3, 4, 6, 7, 8, 9)  # times, counts and amounts (the others are labels)
RULES = ("accasim", "kit")
KIT_SYSTEM = "kit-forhlr2"
KIT_THIN_CORES, KIT_FAT_CORES = 20, 48
KIT_THIN_NODES, KIT_FAT_NODES = 1152, 21


def _recorded_wait(field: str) -> int | None:
    """Field 3 (the real system's wait), or None when unknown (-1) or not a whole number: only the
    `recorded` baseline reads it, so a bad value must not cost the job its place in other runs."""
    return int(field) if field.isdigit() else None


def kit_units(processors: int, partition: int) -> tuple[int, int]:
    """KIT rule: (units, cores per unit) of a job of `processors` processors in `partition`."""
    thin = partition in (1, -1)
    cpn = KIT_THIN_CORES if thin else KIT_FAT_CORES
    if processors >= cpn:
        per = cpn if processors % cpn == 0 else math.gcd(processors, cpn)
        units = processors // per
    else:
        per, units = processors, 1
    return min(units, KIT_THIN_NODES if thin else KIT_FAT_NODES), per


def _label(i: int) -> str:
    return f"{SWF_FIELDS[i]} (field {i + 1})"


def _diagnose(path: str, line: int, f: list[str]) -> InputError:
    """Why a line failed the fast path: the first offending field, named."""
    if len(f) < 18:
        return InputError(path, line, _label(len(f)), f"truncated line: {len(f)} of 18 fields")
    if len(f) > 18:
        return InputError(path, line, None, f"too many fields: {len(f)}, SWF has 18")
    for i in USED_FIELDS:
        try:
            value = int(f[i])
        except ValueError:
            return InputError(path, line, _label(i), f"expected an integer, got {f[i]!r}")
        if value < -1 or (i == 1 and value < 0):
            return InputError(path, line, _label(i), f"negative value {f[i]} (only -1 means missing)")
        if value > MAX_VALUE and i in BOUNDED_FIELDS:
            return InputError(path, line, _label(i), above_max(value))
    return InputError(path, line, None, "malformed line")


def read_swf(
    path: str, system: System, strict: bool = False, limit: int | None = None, rule: str | None = None
) -> Workload:
    """Read an SWF file (plain or .gz) onto `system`; `rule` None picks "kit" for kit-forhlr2."""
    if rule is None:
        rule = "kit" if system.name == KIT_SYSTEM else "accasim"
    if rule not in RULES:
        raise ValueError(f"unknown SWF rule {rule!r} (known: {', '.join(RULES)})")
    check_limit(limit)
    text = read_text(path)
    requests = _Requests(path, system, kit=rule == "kit")
    jobs, rejected, skipped, header = _read_lines(path, text, requests, strict, limit)
    notes: dict[str, object] = {"format": "swf", "rule": rule}
    if header:
        notes["header"] = header
    if requests.mem_k < 0 and any(k[1] >= 0 for k in requests.cache):
        notes["memory_ignored"] = f"the trace has memory requests, but system {system.name} has no 'mem' type"
    sort_by_submit(jobs)
    jobs = fill_default_walltime(jobs, notes)
    return Workload(source=path, jobs=jobs, rejected=rejected, skipped=skipped, notes=notes)


class _Requests:
    """Per-unit request tuples of one read, shared between jobs: one per (processors per unit,
    memory per processor), built on first use."""

    def __init__(self, path: str, system: System, kit: bool) -> None:
        types = system.types
        self.kit = kit
        self.base = [int(system.swf_processor.get(t, 0)) for t in types]
        self.mem_k = types.index("mem") if "mem" in types else -1
        self.core_k = types.index("core") if "core" in types else -1
        if kit and self.core_k < 0:
            raise InputError(path, None, None, f"the KIT rule needs a 'core' type; system {system.name} has none")
        self.cache: dict[tuple[int, int], tuple[int, ...]] = {}
        self.unit: dict[int, tuple[int, ...]] = {}  # the default rule's hot path: one processor per unit

    def get(self, per_unit_procs: int, mem_kb: int) -> tuple[int, ...]:
        """Per-unit request of `per_unit_procs` processors with `mem_kb` KB each (-1: unknown)."""
        key = (per_unit_procs, mem_kb)
        req = self.cache.get(key)
        if req is None:
            r = [a * per_unit_procs for a in self.base] if not self.kit else list(self.base)
            if self.kit:
                r[self.core_k] = per_unit_procs
            if self.mem_k >= 0 and mem_kb >= 0:
                r[self.mem_k] = -(-mem_kb * per_unit_procs // 1024)
            req = self.cache[key] = tuple(r)
            if per_unit_procs == 1:
                self.unit[mem_kb] = req
        return req

    def shape(self, procs: int, partition: int, mem_kb: int) -> tuple[int, tuple[int, ...]]:
        """(units, per-unit request) off the default rule's path: the KIT rule, or no processor
        count (0 units, to be rejected)."""
        if procs <= 0:
            return 0, self.get(1, mem_kb)
        units, per = kit_units(procs, partition)
        return units, self.get(per, mem_kb)


def _header_entry(ln: str, header: dict[str, str]) -> None:
    """A `; Key: value` comment line into `header` (the first value of a key wins)."""
    if ln[1:].strip() and ":" in ln:
        key, _, value = ln[1:].partition(":")
        header.setdefault(key.strip(), value.strip())


def _read_lines(
    path: str, text: str, requests: _Requests, strict: bool, limit: int | None
) -> tuple[list[Job], list[Rejection], list[InputError], dict[str, str]]:
    """Jobs, rejections, skipped lines and header; no helper per field: this loop runs once per line."""
    jobs: list[Job] = []
    rejected: list[Rejection] = []
    skipped: list[InputError] = []
    header: dict[str, str] = {}
    append, kit, unit_cache, request = jobs.append, requests.kit, requests.unit, requests.get
    with no_gc():
        for lineno, ln in enumerate(text.splitlines(), 1):
            if not ln or ln[0] == ";":
                _header_entry(ln, header)
                continue
            f = ln.split()
            try:
                if len(f) != 18:
                    raise ValueError
                submit = int(f[1])
                run = int(f[3])
                alloc = int(f[4])
                used = int(f[6])
                rproc = int(f[7])
                wall = int(f[8])
                rmem = int(f[9])
                user = int(f[11])
                exe = int(f[13])
                queue = int(f[14])
                part = int(f[15])
                jid = int(f[0])
                if (
                    submit < 0 or run < -1 or alloc < -1 or used < -1 or rproc < -1 or wall < -1
                    or rmem < -1 or user < -1 or exe < -1 or queue < -1 or part < -1 or jid < -1
                    or max(submit, run, alloc, used, rproc, wall, rmem) > MAX_VALUE
                ):
                    raise ValueError
            except ValueError:
                if f and not f[0].startswith(";"):
                    record_error(_diagnose(path, lineno, f), strict, skipped)
                continue
            procs = rproc if rproc > 0 else alloc
            mem_kb = rmem if rmem >= 0 else used
            if procs > 0 and not kit:
                units = procs
                req = unit_cache.get(mem_kb) or request(1, mem_kb)
            else:
                units, req = requests.shape(procs, part, mem_kb)
            reason = "" if procs > 0 and run >= 0 else "no processor count" if procs <= 0 else "run time unknown"
            job = Job(
                f[0], submit, units, req, wall if wall >= 0 else None, run,
                f[11] if user >= 0 else "", f[13] if exe >= 0 else "", f[14] if queue >= 0 else "", lineno,
                recorded_wait=_recorded_wait(f[2]),
            )
            if reason:
                rejected.append(Rejection(job, reason))
            else:
                append(job)
            if limit is not None and len(jobs) + len(rejected) >= limit:
                break
    return jobs, rejected, skipped, header
