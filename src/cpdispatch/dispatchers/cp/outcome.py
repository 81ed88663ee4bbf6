"""What a CP decision goes through: `Ready`, what a solve starts from, and `Outcome`, what the
decision enacts."""

from __future__ import annotations

from dataclasses import dataclass

from ...snapshot import Start
from .built import BuiltModel
from .instance import Instance, Plan
from .status import Status


@dataclass
class Ready:
    """What a solve starts from: the instance, its model (None: over the size guard, `too_large`,
    or built by the subclass's own `optimise`), the starting plan (None: nothing uses it, or no
    job order fits) and its objective value. The starting plan is the greedy plan unless a
    subclass has a better one (pcp20's shifted relaxation), which may be `proven` optimal."""

    inst: Instance
    built: BuiltModel | None
    greedy: Plan | None
    value: int | None
    too_large: bool = False
    proven: bool = False


@dataclass
class Outcome:
    """What a decision enacts: the plan (or the fast path's `starts`), its status and objective,
    whether the run counts as solved (for the queue length; None: no solve was tried, the length
    stays), the model (for its size) and the instance."""

    plan: Plan | None
    status: Status
    objective: int | None
    solved: bool | None
    built: BuiltModel | None = None
    inst: Instance | None = None
    starts: tuple[Start, ...] | None = None
