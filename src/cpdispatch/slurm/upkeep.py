"""The fail-safe's part of each round (`failsafe` has the lease and the lua): keep every job the
driver has not started in the form the mode needs, in a few list commands per round, and take
back released jobs that did not start. Open: held jobs of ours are deferred and released,
deferred ones pushed before their begin time comes, jobs pending under Slurm's own scheduler
(submitted while no driver renewed the lease) taken over. Closed: deferred and foreign jobs are
held."""

from __future__ import annotations

import math
from typing import Any

from .commands import Outcome, SlurmCommands
from .failsafe import HELD_TAG, WAIT_TAG, FailSafe
from .intents import Journal
from .state import SlurmJob


class Upkeep:
    def __init__(self, failsafe: FailSafe | None, commands: SlurmCommands, journal: Journal) -> None:
        self.failsafe, self.commands, self.journal = failsafe, commands, journal

    def command(self, name: str, ids: list[str], *args: Any) -> Outcome:
        """One Slurm command over jobs, journalled with its result."""
        out: Outcome = getattr(self.commands, name)(ids, *args)
        self.journal.write("result", command=name, jobs=ids, rc=out.returncode, stderr=out.stderr[-300:])
        return out

    def take_back(self, stuck: list[SlurmJob]) -> list[str]:
        """Released jobs that did not start return to the queue: held, or under the fail-open
        lease unpinned and deferred (so that a dead driver leaves no job held)."""
        if self.failsafe is not None and self.failsafe.open:
            return self.defer(stuck, comment=WAIT_TAG, unpin=True)
        ids = [j.id for j in stuck]
        return ids if self.command("hold", ids).ok else []

    def defer(self, jobs: list[SlurmJob], comment: str | None = None, unpin: bool = False,
              release: bool = False) -> list[str]:
        """Push the begin time of `jobs` one lease ahead, unpinned with `unpin` (a dead driver's
        pin would tie a job to nodes nobody chose for now) and released with `release`, all in one
        command; returns those deferred."""
        assert self.failsafe is not None
        ids = [j.id for j in jobs]
        pinned = [j.id for j in jobs if unpin and j.required]
        return ids if ids and self.command("defer", ids, self.failsafe.seconds, comment, pinned, release).ok else []

    def keep(self, jobs: list[SlurmJob], now: float, acted: set[str], poll: float) -> tuple[list[str], int]:
        """One round's upkeep of the jobs not acted on; returns the jobs taken over from Slurm and
        how many were deferred."""
        assert self.failsafe is not None
        lease = self.failsafe.seconds
        pending = [j for j in jobs if j.id not in acted and j.kind in ("held", "waiting", "blocked", "foreign")]
        foreign = [j for j in pending if j.kind == "foreign"]
        if not self.failsafe.open:
            hold = [j.id for j in pending if j.priority > 0 and (j.kind == "foreign" or j.tagged)]
            taken = [j.id for j in foreign]
            if hold and self.command("hold", hold).ok and taken:  # tagged: ours, not their users' holds
                self.command("tag", taken, HELD_TAG)
                return taken, 0
            return [], 0
        # Slurm spends about 1 ms per job of a list update (2,000 jobs: 2 s of slurmctld), so the
        # pushes are spread: per round, the jobs due within two polls and a share of the others
        # such that each is pushed about once per half lease; held jobs are converted as many
        # per round (they are safe where they are, held)
        share = max(50, math.ceil(len(pending) * poll / max(1.0, lease / 2 - 2 * poll)))
        ours_held = [j for j in pending if j.priority == 0 and j.tagged][:share]
        due = sorted((j for j in pending if j.priority > 0 and j.admin_comment.startswith(WAIT_TAG)
                      and j.eligible < now + lease / 2 and j.begin_after <= now + lease), key=lambda j: j.eligible)
        urgent = sum(1 for j in due if j.eligible < now + 2 * poll + 1)
        due = due[:max(urgent, share)]
        later = [j for j in foreign if j.eligible > now + lease]  # a user's --begin, kept in the tag
        for j in later:
            self.command("defer", [j.id], j.eligible - int(now), f"{WAIT_TAG}:{j.eligible}")
        taken = self.defer(ours_held, comment=WAIT_TAG, unpin=True, release=True)
        taken += self.defer([j for j in foreign if j not in later], comment=WAIT_TAG)
        foreign_ids = {j.id for j in foreign}
        return [i for i in taken if i in foreign_ids] + [j.id for j in later], len(self.defer(due)) + len(taken)
