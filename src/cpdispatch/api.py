"""The Python API: a simulation in one call, results as pandas tables, dispatchers of one's own.

`simulate` is what the command line runs (`cpdispatch simulate` builds one call to it), so a CLI
run and a notebook run give the same results; `Result.save` writes the same files. A dispatcher
is a name (built-in, plugin entry point, or ``module:attr``), a `Dispatcher`, or any callable
taking a `Snapshot` and returning the `Start`s to apply (or a `Decision`). A predictor is a name or
an object with the `Predictor` methods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .dispatchers.base import Dispatcher, resolve_dispatcher
from .errors import CpdispatchError
from .job import Job
from .predictors import Predictor, resolve_predictor
from .records import SimulationResult
from .snapshot import Decision, Snapshot, Start
from .system import System
from .workloads import load_workload, scale_arrivals
from .workloads.base import Workload
from .workloads.generator import generate_eurora

if TYPE_CHECKING:
    import pandas as pd

DispatcherSpec = str | Dispatcher | type[Dispatcher] | Callable[[Snapshot], Iterable[Start] | Decision]


def read_workload(
    path: str | Path, system: System, *, fmt: str = "auto", limit: int | None = None, skip: int = 0,
    strict: bool = False,
) -> Workload:
    """Read a trace (SWF, Alibaba pod CSV or native CSV, plain or gzip; format from the suffix
    and content unless `fmt` says) onto `system`. Malformed lines are skipped and reported in the
    workload (`strict`: the first one is an error)."""
    workload = load_workload(path, system, fmt=fmt, strict=strict, limit=limit, skip=skip)
    workload.origin = {"read_workload": str(path), "fmt": fmt, "limit": limit, "skip": skip, "strict": strict,
                       "types": system.types}
    return workload


def validate_jobs(jobs: Workload | Sequence[Job], system: System) -> Workload:
    """A workload built in Python, checked like a file: unique ids, sorted by submit, one amount
    per type of `system`, at least one unit, non-negative times. Raises CpdispatchError naming
    the job and the field."""
    wl = jobs if isinstance(jobs, Workload) else Workload("<python>", list(jobs))
    if wl.origin is not None and wl.origin["types"] == system.types:  # read onto such a system, checked
        return wl
    n_types, seen, last = len(system.types), set(), None
    for i, j in enumerate(wl.jobs):
        where = f"{wl.source}: job {i} (id {getattr(j, 'id', '?')!r})"
        if not isinstance(j, Job):
            raise CpdispatchError(f"{where}: expected a cpdispatch Job, got {type(j).__name__}")
        if j.id in seen:
            raise CpdispatchError(f"{where}: id appears more than once")
        seen.add(j.id)
        if len(j.req) != n_types:
            raise CpdispatchError(f"{where}: field req has {len(j.req)} amounts, system {system.name} has "
                                  f"{n_types} types {system.types}")
        for name, value in (("units", j.units), ("submit", j.submit), ("runtime", j.runtime), *(
                (f"req[{t}]", a) for t, a in zip(system.types, j.req))):
            if not isinstance(value, int) or isinstance(value, bool) or value < (1 if name == "units" else 0):
                raise CpdispatchError(f"{where}: field {name} must be an integer >= {int(name == 'units')}, "
                                      f"got {value!r}")
        if last is not None and j.submit < last:
            raise CpdispatchError(f"{where}: field submit {j.submit} is before the previous job's {last} "
                                  "(sort the jobs by submit time)")
        last = j.submit
    return wl


@dataclass
class Result:
    """One simulation: `summary` (the keys of summary.json), `jobs` and `decisions` as pandas
    tables (the columns of schedule.csv and decisions.csv), `raw` the records themselves."""

    raw: SimulationResult
    summary: dict[str, Any]
    call: dict[str, Any] = field(default_factory=dict)

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

        return pd.DataFrame([(d.time, d.queued, d.running, d.started, d.wall_ms, d.cpu_ms, d.status, d.variables,
                              d.constraints, d.objective) for d in self.raw.decisions], columns=DECISION_COLUMNS)

    def save(self, out: str | Path, *, parquet: bool = False, plots: bool = False) -> Path:
        """Write schedule.csv, decisions.csv and summary.json into `out` (as the CLI does);
        `parquet`: also schedule.parquet and decisions.parquet; `plots`: the CLI's figures."""
        from .outputs import write_outputs

        path = Path(out)
        write_outputs(self.raw, path, self.summary)
        if parquet:
            self.jobs.to_parquet(path / "schedule.parquet", index=False)
            self.decisions.to_parquet(path / "decisions.parquet", index=False)
        if plots:
            from .plots import plot_run

            plot_run(self.raw, str(path))
        return path


def simulate(
    system: System | str,
    jobs: Workload | Sequence[Job],
    dispatcher: DispatcherSpec = "easy",
    predictor: str | Predictor = "real",
    options: Mapping[str, Any] | None = None,
    *,
    load_factor: float = 1.0,
    seed: int = 0,
    kill_at_walltime: bool = False,
    charge_dispatch_time: bool = False,
    progress: bool | None = False,
    record_instances: str | Path | None = None,
) -> Result:
    """Replay `jobs` on `system` under `dispatcher` (with `options`, as typed values or the
    strings the CLI takes) and `predictor`. Every job ends completed, killed or rejected with a
    reason. An exception raised by the dispatcher or the predictor propagates, with a note giving
    the simulated time and the jobs concerned."""
    from . import recorded
    from .metrics import summarize
    from .simulator import SimOptions
    from .simulator import simulate as run

    if isinstance(system, str):
        system = System.preset(system)
    workload = scale_arrivals(validate_jobs(jobs, system), load_factor)
    sim_opts = SimOptions(kill_at_walltime, charge_dispatch_time, progress)
    if dispatcher == recorded.NAME:  # the trace's own schedule: replayed, not dispatched
        if options or record_instances:
            raise CpdispatchError("the recorded schedule takes no dispatcher options and makes no instances")
        raw = recorded.replay_recorded(system, workload, kill_at_walltime)
    else:
        disp = resolve_dispatcher(dispatcher, dict(options or {}), seed=seed)
        pred = resolve_predictor(predictor)
        hook, recorder = None, None
        if record_instances:
            from .instances import InstanceRecorder

            recorder = InstanceRecorder(str(record_instances))
            hook = recorder.record
        try:
            raw = run(system, workload, disp, pred, sim_opts, on_decision=hook)
        finally:
            if recorder is not None:
                recorder.close()
    if isinstance(dispatcher, str):
        raw.dispatcher = dispatcher  # the name the user typed (an alias such as hcp19 stays hcp19)
    call = {"system": system.name, "workload": workload.source, "dispatcher": raw.dispatcher,
            "predictor": raw.predictor, "options": {k: str(v) for k, v in (options or {}).items()},
            "load_factor": load_factor, "seed": seed, "kill_at_walltime": kill_at_walltime,
            "charge_dispatch_time": charge_dispatch_time}
    raw.options.update({"system": system.name, "workload": workload.source, "seed": seed,
                        "load_factor": load_factor})
    if workload.origin is not None:  # how the jobs were read, to read them again
        call["jobs"] = {k: v for k, v in workload.origin.items() if k != "types"}
        origin = workload.origin
        raw.options.update({"workload": origin["read_workload"], "limit_jobs": origin["limit"],
                            "skip_jobs": origin["skip"], "strict": origin["strict"]})
    summary = summarize(raw)
    summary["call"] = call
    return Result(raw, summary, call)


__all__ = ["Decision", "Dispatcher", "Result", "Snapshot", "Start", "System", "generate_eurora", "read_workload",
           "simulate", "validate_jobs"]
