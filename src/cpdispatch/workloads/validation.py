"""Workloads built in Python checked as strictly as a file is when read: `validate_jobs`."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import CpdispatchError
from ..job import Job
from ..system import System
from .base import Workload
from .reading import MAX_VALUE


def validate_jobs(jobs: Workload | Sequence[Job], system: System) -> Workload:
    """A workload built in Python, checked like a file: unique ids, sorted by submit, one amount
    per type of `system`, at least one unit, times and amounts from 0 to 2^40. Raises CpdispatchError naming
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
            if (not isinstance(value, int) or isinstance(value, bool) or value < (1 if name == "units" else 0)
                    or value > MAX_VALUE):
                raise CpdispatchError(f"{where}: field {name} must be an integer from {int(name == 'units')} to "
                                      f"2^40, got {value!r}")
        if last is not None and j.submit < last:
            raise CpdispatchError(f"{where}: field submit {j.submit} is before the previous job's {last} "
                                  "(sort the jobs by submit time)")
        last = j.submit
    return wl
