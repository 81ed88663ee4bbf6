"""What one round of the driver saw and did, and where its time went: the driver fills it, and
the journal, the summary, status.json and the metrics read it; and the summary of a whole run
as printed on exit."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

KEEP_TIMINGS = 100_000  # rounds whose timings the summary covers (the last ones)


@dataclass
class RoundFigures:
    """One round: what it saw and did, and where its time went (seconds)."""

    round: int
    time: int
    read_s: float = 0.0
    decide_s: float = 0.0
    apply_s: float = 0.0
    queued: int = 0
    running: int = 0
    committed: int = 0
    starts: list[str] = field(default_factory=list)
    reheld: list[str] = field(default_factory=list)
    adjusted: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    taken: list[str] = field(default_factory=list)
    deferred: int = 0
    shadow: bool = False

    @property
    def total_s(self) -> float:
        return self.read_s + self.decide_s + self.apply_s

    def actions(self) -> dict[str, list[str]]:
        """The jobs per kind of action this round (the summary's counters use the same keys)."""
        return {"started": self.starts, "reheld": self.reheld, "adjusted": self.adjusted, "refused": self.refused,
                "failed": self.failed, "taken": self.taken}

    def line(self) -> str:
        said = {"started": "would start" if self.shadow else "started", "reheld": "re-held",
                "taken": "taken over"}
        acts = [f"{said.get(k, k)} {len(v)}" for k, v in self.actions().items() if v]
        return (f"round {self.round}: queued {self.queued}, running {self.running}, committed {self.committed}"
                f"{'; ' + ', '.join(acts) if acts else ''}; read {self.read_s * 1e3:.0f} ms, decide "
                f"{self.decide_s * 1e3:.0f} ms, apply {self.apply_s * 1e3:.0f} ms")


class Tally:
    """What a driver did over its rounds: the actions per kind and the time of each part of the
    last `KEEP_TIMINGS` rounds (the summary printed on exit and status.json's counts)."""

    def __init__(self, shadow: bool) -> None:
        self.shadow = shadow
        self.rounds = 0
        self.failed_reads = 0  # rounds skipped: Slurm did not answer
        self.counts = dict.fromkeys(("started", "reheld", "adjusted", "refused", "failed", "taken", "deferred"), 0)
        self.shadowed: dict[str, set[str]] = {k: set() for k in self.counts}  # shadow: jobs counted
        self.timings = {part: deque[float](maxlen=KEEP_TIMINGS) for part in ("read", "decide", "apply", "round")}

    def count(self, fig: RoundFigures) -> None:
        self.rounds += 1
        for key, ids in fig.actions().items():  # a shadow driver decides the same jobs again: each once
            new = [i for i in ids if i not in self.shadowed[key]] if self.shadow else ids
            self.shadowed[key].update(new if self.shadow else ())
            self.counts[key] += len(new)
        self.counts["deferred"] += fig.deferred
        for key, value in (("read", fig.read_s), ("decide", fig.decide_s), ("apply", fig.apply_s),
                           ("round", fig.total_s)):
            self.timings[key].append(value)

    def forget(self, live: set[str]) -> None:
        """Keep only the `live` jobs among those a shadow driver counted (bounded memory)."""
        for said in self.shadowed.values():
            said &= live

    def summary(self) -> dict[str, Any]:
        def stats(values: deque[float]) -> dict[str, float]:
            a = np.asarray(values or [0.0]) * 1e3
            return {"mean_ms": round(float(a.mean()), 2), "p50_ms": round(float(np.percentile(a, 50)), 2),
                    "p99_ms": round(float(np.percentile(a, 99)), 2), "max_ms": round(float(a.max()), 2)}

        return {"rounds": self.rounds, **self.counts, "failed_reads": self.failed_reads, "shadow": self.shadow,
                **{part: stats(values) for part, values in self.timings.items()}}


def format_summary(s: dict[str, Any]) -> str:
    """The summary printed on exit."""
    if s["shadow"]:
        acts = (f"(shadow: no command sent): {s['started']} jobs would start, {s['adjusted']} of them moved, "
                f"{s['refused']} refused (each job counted once)")
    else:
        acts = (f": {s['started']} jobs started, {s['reheld']} re-held, {s['adjusted']} moved, {s['refused']} "
                f"refused, {s['taken']} taken over from Slurm, {s['failed']} failed commands")
    lines = [f"{s['rounds']} rounds{' ' if s['shadow'] else ''}{acts}, {s['failed_reads']} rounds skipped (Slurm did "
             "not answer)",
             f"{'ms per round':<14}{'mean':>9}{'p50':>9}{'p99':>9}{'max':>9}"]
    for part in ("read", "decide", "apply", "round"):
        st = s[part]
        lines.append(f"{part:<14}{st['mean_ms']:>9.1f}{st['p50_ms']:>9.1f}{st['p99_ms']:>9.1f}{st['max_ms']:>9.1f}")
    return "\n".join(lines)
