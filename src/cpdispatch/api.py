"""The Python API: a simulation in one call, results as pandas tables, dispatchers of one's own.

`simulate` is what the command line runs (`cpdispatch simulate` builds one call to it), so a CLI
run and a notebook run give the same results; `Result.save` writes the same files. A dispatcher
is a name (built-in, plugin entry point, or ``module:attr``), a `Dispatcher`, or any callable
taking a `Snapshot` and returning the `Start`s to apply (or a `Decision`). A predictor is a name or
an object with the `Predictor` methods; the default of the API, `cpdispatch simulate`, campaigns
and the Slurm driver is `walltime` (an on-line dispatcher knows the requested walltime, never the
real run time); the demo names last2, the papers' predictor.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .dispatchers.base import Dispatcher, resolve_dispatcher
from .errors import CpdispatchError
from .job import Job
from .predictors import Predictor, resolve_predictor
from .records import SimulationResult
from .snapshot import Decision, PlacementReport, Snapshot, Start
from .system import System
from .workloads import load_workload, scale_arrivals
from .workloads.base import Workload
from .workloads.generator import generate_eurora
from .workloads.validation import validate_jobs

if TYPE_CHECKING:
    import pandas as pd

    from .simulator.room import RoomAnswerer

#: The predictor of every entry point when none is named.
DEFAULT_PREDICTOR = "walltime"


class RefusedStartsWarning(UserWarning):
    """Some starts a dispatcher returned were refused by the simulator (never applied): the
    message gives their count and the first reason; `Result.refused` lists them all."""


DispatcherSpec = str | Dispatcher | type[Dispatcher] | Callable[[Snapshot], Iterable[Start] | Decision]


def read_workload(
    path: str | Path, system: System, *, fmt: str = "auto", limit: int | None = None, skip: int = 0,
    strict: bool = False,
) -> Workload:
    """Read a trace (SWF, Alibaba pod CSV or native CSV, plain or gzip; format from the suffix
    and content unless `fmt` says) onto `system`. Malformed lines are skipped and reported in the
    workload (`strict`: the first one is an error)."""
    t0 = time.perf_counter()
    workload = load_workload(path, system, fmt=fmt, strict=strict, limit=limit, skip=skip)
    workload.read_s = time.perf_counter() - t0
    workload.origin = {"read_workload": str(path), "fmt": fmt, "limit": limit, "skip": skip, "strict": strict,
                       "types": system.types}
    return workload


@dataclass
class Result:
    """One simulation: `summary` (the keys of summary.json), `jobs` and `decisions` as pandas
    tables (the columns of schedule.csv and decisions.csv), `refused` the starts the simulator
    refused, `raw` the records themselves."""

    raw: SimulationResult
    summary: dict[str, Any]
    call: dict[str, Any] = field(default_factory=dict)

    @property
    def refused(self) -> list[str]:
        """Every start the dispatcher returned that was refused (never applied), each a line
        "t=TIME: start of job ID refused: REASON" (e.g. a node without the job's resources
        free); empty for a dispatcher whose every start was valid."""
        return self.raw.refused

    def __repr__(self) -> str:
        s = self.summary
        fates = ", ".join(f"{s[k]:,} {k}" for k in ("completed", "killed", "rejected", "running") if s.get(k))
        wait, bsld = s.get("avg_wait"), s.get("avg_bounded_slowdown")
        head = "no job started" if wait is None else f"avg_wait {wait:,.1f} s, avg_bounded_slowdown {bsld:,.2f}"
        refused = f", {len(self.refused):,} starts refused" if self.refused else ""
        return (f"Result({s['dispatcher']!r}, predictor {s['predictor']!r}, {s['jobs']:,} jobs: {fates or 'none'}; "
                f"{head}{refused})")

    @property
    def jobs(self) -> pd.DataFrame:
        import pandas as pd

        from .outputs import schedule_columns

        names = self.raw.system.node_names
        rows = [
            (r.job.id, r.job.user, r.job.submit, r.start, r.end, r.job.units, *r.job.req, r.job.walltime,
             r.job.runtime, r.predicted, ";".join(names[k] for k in r.alloc.per_unit()), r.status, r.reason)
            for r in self.raw.records
        ]
        return pd.DataFrame(rows, columns=schedule_columns(self.raw.system.types))

    @property
    def decisions(self) -> pd.DataFrame:
        import pandas as pd

        from .outputs import DECISION_COLUMNS

        def stage2(s: PlacementReport | None) -> tuple[object, ...]:
            return (None, None, None, None) if s is None else (s.status, s.ms, s.variables, s.gained)

        return pd.DataFrame([(d.time, d.queued, d.running, d.started, d.wall_ms, d.cpu_ms, d.status, d.variables,
                              d.constraints, d.objective, *stage2(d.stage2)) for d in self.raw.decisions],
                            columns=DECISION_COLUMNS)

    def save(self, out: str | Path, *, parquet: bool = False, plots: bool = False) -> Path:
        """Write what the CLI writes into `out`: schedule.csv, decisions.csv, summary.json; `plots`:
        also its figures (as --plots); `parquet`: also schedule.parquet and decisions.parquet."""
        from .outputs import write_outputs

        path = Path(out)
        write_outputs(self.raw, path, self.summary)
        if parquet:
            from .outputs_safety import replacing

            for name, table in (("schedule", self.jobs), ("decisions", self.decisions)):
                with replacing(path / f"{name}.parquet") as tmp:
                    table.to_parquet(tmp, index=False)
        if plots:
            from .plots import plot_run

            plot_run(self.raw, str(path))
        return path


def simulate(
    system: System | str,
    jobs: Workload | Sequence[Job],
    dispatcher: DispatcherSpec = "easy",
    predictor: str | Predictor = DEFAULT_PREDICTOR,
    options: Mapping[str, Any] | None = None,
    *,
    load_factor: float = 1.0,
    seed: int = 0,
    kill_at_walltime: bool = False,
    charge_dispatch_time: bool = False,
    progress: bool | None = False,
    record_instances: str | Path | None = None,
    room: bool = False,
) -> Result:
    """Replay `jobs` on `system` under `dispatcher` (with `options`, as typed values or the
    strings the CLI takes) and `predictor` (default walltime, as the CLI's). Every job ends
    completed, killed or rejected with a reason. `room=True` also measures the room another
    placement would give (summary["room"]), a diagnostic that can triple a baseline's run time.
    Starts the simulator refused are a `RefusedStartsWarning` (count and first reason; all in
    `Result.refused`). An exception raised by the dispatcher or the predictor propagates, with a
    note giving the simulated time and the jobs concerned; a value returned by the dispatcher that
    is not a Decision or a sequence of Start is a CpdispatchError."""
    from . import recorded
    from .simulator import SimOptions

    if isinstance(system, str):
        system = System.preset(system)
    workload = scale_arrivals(validate_jobs(jobs, system), load_factor)
    if dispatcher == recorded.NAME:  # the trace's own schedule: replayed, not dispatched
        if options or record_instances:
            raise CpdispatchError("the recorded schedule takes no dispatcher options and makes no instances")
        raw = recorded.replay_recorded(system, workload, kill_at_walltime)
    else:
        disp = resolve_dispatcher(dispatcher, dict(options or {}), seed=seed)
        sim_opts = SimOptions(kill_at_walltime, charge_dispatch_time, progress, room)
        raw = _run(system, workload, disp, resolve_predictor(predictor), sim_opts, record_instances)
    if isinstance(dispatcher, str):
        raw.dispatcher = dispatcher  # the name the user typed (an alias such as hcp19 stays hcp19)
    call = {"system": system.name, "workload": workload.source, "dispatcher": raw.dispatcher,
            "predictor": raw.predictor, "options": {k: str(v) for k, v in (options or {}).items()},
            "load_factor": load_factor, "seed": seed, "kill_at_walltime": kill_at_walltime,
            "charge_dispatch_time": charge_dispatch_time}
    if raw.refused:
        warnings.warn(RefusedStartsWarning(f"dispatcher {raw.dispatcher}: {len(raw.refused):,} invalid start(s) "
                                           f"refused, first: {raw.refused[0]} (all in result.refused)"),
                      stacklevel=2)
    return _result(raw, workload, call)


def _run(system: System, workload: Workload, disp: Dispatcher, pred: Predictor, sim_opts: Any,
         record_instances: str | Path | None) -> SimulationResult:
    """The simulation, with every dispatching instance saved to `record_instances` if given."""
    from .simulator import simulate as run

    if not record_instances:
        return run(system, workload, disp, pred, sim_opts, room_answerer=_room_answerer)
    from .instance_log import InstanceRecorder

    recorder = InstanceRecorder(str(record_instances))
    try:
        return run(system, workload, disp, pred, sim_opts, on_decision=recorder.record, room_answerer=_room_answerer)
    finally:
        recorder.close()


def _room_answerer() -> RoomAnswerer:
    """What the room probe asks about the starts of a dispatcher without a placement stage of its
    own: pcp20's second stage in probe mode. Made on the probe's first question, so CP-SAT is
    imported only by a run that needs it."""
    from .dispatchers.cp.models.pcp20 import Pcp20Dispatcher

    return Pcp20Dispatcher()


def _result(raw: SimulationResult, workload: Workload, call: dict[str, Any]) -> Result:
    """The summary of `raw`, with the call that made it and where the wall time went."""
    from .metrics import summarize

    raw.options.update({"system": call["system"], "workload": workload.source, "seed": call["seed"],
                        "load_factor": call["load_factor"]})
    origin = workload.origin
    if origin is not None:  # how the jobs were read, to read them again
        call["jobs"] = {k: v for k, v in origin.items() if k != "types"}
        raw.options.update({"workload": origin["read_workload"], "limit_jobs": origin["limit"],
                            "skip_jobs": origin["skip"], "strict": origin["strict"]})
    summary = summarize(raw)
    summary["call"] = call
    # where the wall time of a run goes (outputs_s is added by Result.save)
    summary["timing"] = {"read_s": workload.read_s, "simulate_s": raw.sim_wall_s,
                         "dispatcher_s": sum(d.wall_ms for d in raw.decisions) / 1e3}
    return Result(raw, summary, call)


def catalogue() -> str:
    """What `cpdispatch dispatchers` prints: built-in dispatchers with their options, installed
    plugins (entry points), and the predictors."""
    from collections import Counter

    from . import recorded
    from .dispatchers.base import ENTRY_POINT_GROUP, aliases_of, registry
    from .dispatchers.builtin import is_cp
    from .dispatchers.cp.profiles import free_options, paper_overrides
    from .plugins import entry_points_of
    from .predictors import ALIASES, PREDICTORS
    from .predictors import ENTRY_POINT_GROUP as PREDICTOR_GROUP

    classes = sorted(registry().items())
    # options most CP dispatchers have alike (name, default, help) are listed once, after the list;
    # each CP dispatcher lists its other options and names the shared ones it does not take
    cp = [cls for name, cls in classes if is_cp(name)]
    alike = Counter((o.name, repr(o.default), o.help) for cls in cp for o in cls.options)
    shared = {(o.name, repr(o.default), o.help): o for cls in sorted(cp, key=lambda c: -len(c.options))
              for o in cls.options if 2 * alike[(o.name, repr(o.default), o.help)] > len(cp)}
    common_free = set.intersection(*(set(free_options(cls.options)) for cls in cp)) if cp else set()
    lines = []
    for name, cls in classes:
        alias = aliases_of(name)
        lines.append(f"{name}{' (= ' + ', '.join(alias) + ')' if alias else ''}: {cls.summary}")
        lines += [f"    {o.name} = {o.default!r}: {o.help}" for o in cls.options
                  if (o.name, repr(o.default), o.help) not in shared or cls not in cp]
        lacks = sorted({o.name for o in shared.values()} - {o.name for o in cls.options})
        if cls in cp and lacks:
            lines.append(f"    without: {', '.join(lacks)}")
        if cls in cp:
            sets = paper_overrides(cls.options)
            lines.append("    profile=paper sets " + ", ".join(f"{k}={v!r}" for k, v in sets.items()))
            own_free = [f for f in free_options(cls.options) if f not in common_free]
            if own_free:
                lines.append(f"    free under profile=paper: {', '.join(own_free)}")
    lines.append(f"{recorded.NAME} (not a dispatcher, a replay): {recorded.SUMMARY}")
    lines += [_plugin_line(name, ep) for name, ep in sorted(entry_points_of(ENTRY_POINT_GROUP).items())]
    if shared:
        lines.append("\noptions of the CP dispatchers (unless one lists its own or names it under without; "
                     "-o KEY=VALUE):")
        lines += [f"    {o.name} = {o.default!r}: {o.help}" for o in shared.values()]
        free = [f for f in free_options(cp[0].options) if f in common_free and f != "profile"]
        lines.append(f"    profile=paper also fixes every other option at its default; free: {', '.join(free)}")
    lines.append(f"\npredictors: {', '.join([*PREDICTORS, *ALIASES])}")
    lines += [_plugin_line(name, ep) for name, ep in sorted(entry_points_of(PREDICTOR_GROUP).items())]
    lines.append("also: --dispatcher module:attr (a Dispatcher class or a function of a snapshot), "
                 "--predictor module:attr")
    return "\n".join(lines)


def _plugin_line(name: str, ep: Any) -> str:
    return f"{name} (plugin {ep.value}, package {ep.dist.name if ep.dist else '?'})"


__all__ = ["DEFAULT_PREDICTOR", "Decision", "Dispatcher", "RefusedStartsWarning", "Result", "Snapshot", "Start",
           "System", "generate_eurora", "read_workload", "simulate", "validate_jobs", "catalogue"]
