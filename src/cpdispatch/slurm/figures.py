"""What one round of the driver saw and did, and where its time went: the driver fills it, and
the journal, the summary, status.json and the metrics read it."""

from __future__ import annotations

from dataclasses import dataclass, field


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
