"""A loaded workload: its jobs, the jobs rejected while reading, and the lines that were skipped."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from ..job import Job, Rejection


@dataclass
class Workload:
    """Jobs sorted by submit time (stable), plus everything that did not become a runnable job.

    `rejected`: jobs read correctly that can never run (e.g. no processor count, or a pod that
    was never scheduled, so its run time is unknown), each with a reason. `skipped`: malformed
    lines (only in the default, non-strict mode), each an InputError naming file, line, field.
    `notes`: facts about the reading worth reporting (rules applied, censored jobs, ...).
    `origin`: the `read_workload` call that read it from a file (None when built in Python); a
    workload read from a file was checked while reading and is not checked again.
    """

    source: str
    jobs: list[Job]
    rejected: list[Rejection] = field(default_factory=list)
    skipped: list[InputError] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)
    origin: dict[str, Any] | None = None
    read_s: float = 0.0  # wall seconds the reading took

    def __len__(self) -> int:
        return len(self.jobs)

    def __repr__(self) -> str:
        """Source, job count and submit span (never the jobs themselves)."""
        span = f", submit {self.jobs[0].submit:,}..{self.jobs[-1].submit:,} s" if self.jobs else ""
        left = ((self.rejected, "rejected"), (self.skipped, "lines skipped"))
        extra = "".join(f", {len(x):,} {what}" for x, what in left if x)
        return f"Workload({self.source!r}, {len(self.jobs):,} jobs{span}{extra})"
