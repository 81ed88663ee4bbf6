"""The driver's hand on Slurm's queue: the dispatcher's starts checked against what Slurm can
honour, pinned and released; and released jobs that did not start taken back. It remembers when
it released each job, since Slurm's own reasons for a pending job lag behind the release."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import CpdispatchError
from ..snapshot import Snapshot
from .commands import SlurmCommands
from .figures import RoundFigures
from .hostlist import expand
from .intents import Journal
from .placement import LATER, NOT_OFFERED, StartChecker
from .state import STUCK_REASONS, TAG, Node, SlurmJob
from .upkeep import Upkeep
from .view import ClusterView


class Releaser:
    """Starts and takes back jobs for the dispatcher named `dispatcher` (in shadow, only journals)."""

    def __init__(self, dispatcher: str, commands: SlurmCommands, journal: Journal, view: ClusterView, upkeep: Upkeep,
                 say: Callable[[str], None], clock: Callable[[], float], *, shadow: bool, rehold_after: float,
                 max_starts: int) -> None:
        self.dispatcher, self.commands, self.journal, self.view = dispatcher, commands, journal, view
        self.upkeep, self.say, self.clock = upkeep, say, clock
        self.shadow, self.rehold_after = shadow, rehold_after
        self.max_starts = max_starts  # most starts applied per round (0: all): each pin costs slurmctld time
        self.released: dict[str, float] = {}  # job -> when this driver released it
        self.refused_said: set[str] = set()

    def forget(self, live: set[str]) -> None:
        """Drop what is kept about jobs Slurm no longer shows as live."""
        for gone in self.released.keys() - live:
            del self.released[gone]
        self.refused_said &= live

    # -- taking back ---------------------------------------------------------------------------

    def stuck(self, committed: list[SlurmJob], now: float) -> list[SlurmJob]:
        """The `committed` jobs that should go back to the queue now."""
        return [j for j in committed if self._stuck(j, now - self.released.get(j.id, j.pinned_at))]

    def _stuck(self, job: SlurmJob, age: float) -> bool:
        """A released job that should go back to the queue: Slurm says it cannot run where it
        is pinned (after its next tick); or it waits for its nodes (`Resources`) past `rehold_after`; or, not yet looked
        at by Slurm's scheduler (reason None), past 4 x `rehold_after` (a loaded controller)."""
        if any(job.reason.startswith(r) for r in STUCK_REASONS):
            return age >= 1.0  # a reason older than our release (Slurm's next tick renews it) is not a verdict
        return age > (4 * self.rehold_after if job.reason in ("None", "") else self.rehold_after)

    def take_back(self, stuck: list[SlurmJob]) -> list[str]:
        """Released jobs that did not start (their nodes are not free, or Slurm says they cannot
        run there) return to the queue (`Upkeep.take_back`)."""
        ids = [j.id for j in stuck]
        self.journal.write("rehold", jobs=ids, reasons=[j.reason for j in stuck], shadow=self.shadow)
        if self.shadow:
            return []
        for i in ids:
            self.released.pop(i, None)
        return self.upkeep.take_back(stuck)

    # -- starting ------------------------------------------------------------------------------

    def apply(self, fig: RoundFigures, snapshot: Snapshot, offered: dict[str, SlurmJob], starts: Any,
              status: str, partitions: dict[str, list[str]], index: dict[str, int], nodes: list[Node]) -> None:
        """Check each start against what the starts before it leave; pin and release the good ones."""
        system = snapshot.system
        checker = StartChecker(snapshot, self.view.room, offered, partitions, index, nodes)
        pinned: list[tuple[str, list[str]]] = []
        waits: list[str] = []  # LATER: decided again next round
        for s in starts:
            units, why = checker.check(s)
            if why == LATER:
                waits.append(s.job_id)
            elif units is None:
                fig.refused.append(s.job_id)
                self.journal.write("refused", job=s.job_id, reason=why, **({} if why == NOT_OFFERED else
                                                                         {"nodes": list(s.nodes)}))
                if why != NOT_OFFERED and s.job_id not in self.refused_said:  # said once; journal: each round
                    self.refused_said.add(s.job_id)
                    self.say(f"job {s.job_id}: not started where the dispatcher chose, {why}; it stays held")
            if units is None:
                continue
            if why:
                fig.adjusted.append(s.job_id)
                self.journal.write("adjusted", job=s.job_id, chosen=[system.node_names[n] for n in s.nodes],
                                   nodes=[system.node_names[n] for n in units], reason=why)
            pinned.append((s.job_id, [system.node_names[n] for n in sorted(set(units))]))
        later = pinned[self.max_starts:] if self.max_starts else []  # decided again next round
        pinned = pinned[:len(pinned) - len(later)]
        self.view.why.update({i: f"decided again next round: more than --max-starts {self.max_starts}"
                              for i, _ in later})
        self.view.why.update({i: f"decided again next round: {LATER}" for i in waits})
        self.journal.write("decision", round=fig.round, status=status, shadow=self.shadow, next_round=[
            i for i, _ in later] + waits, starts=[{"job": i, "nodes": n} for i, n in pinned])
        fig.starts = [i for i, _ in pinned] if self.shadow else self._pin_and_release(fig, pinned)

    def _pin_and_release(self, fig: RoundFigures, pinned: list[tuple[str, list[str]]]) -> list[str]:
        """The jobs pinned (journalled before the command runs), those whose pin took (read back)
        released in one command; returns those released."""
        if not pinned:
            return []
        comment = f"{TAG}{self.dispatcher}:{int(self.clock())}:{fig.round}"
        self.journal.write("pins", starts=[{"job": j, "nodes": n} for j, n in pinned], comment=comment)
        out = self.commands.pin(pinned, comment)
        self.journal.write("result", command="pin", jobs=[j for j, _ in pinned], rc=out.returncode,
                           stderr=out.stderr[-300:])
        have = self._read_back()
        ok = [j for j, names in pinned if sorted(expand(have.get(j, ""))) == sorted(names)]
        fig.failed = [j for j, _ in pinned if j not in set(ok)]
        if fig.failed:  # (a job that started or was cancelled meanwhile, a node gone)
            self.say(f"{len(fig.failed)} pin(s) did not take (first: job {fig.failed[0]}): {out.stderr[-200:]}")
        if ok:
            self.journal.write("release", jobs=ok)
            out = self.commands.release(ok)
            self.journal.write("result", command="release", jobs=ok, rc=out.returncode, stderr=out.stderr[-300:])
            if not out.ok:
                self.say(f"release of {len(ok)} jobs: exit {out.returncode}: {out.stderr[-200:]}")
            released_at = self.clock()
            for job_id in ok:
                self.released[job_id] = released_at
        return ok

    def _read_back(self) -> dict[str, str]:
        try:
            return self.commands.required_nodes()
        except CpdispatchError:  # nothing is released that may not be pinned
            return {}
