"""Each finding's `check` evaluated on the experiments' results, under the paper profile and under
our defaults, with a 95% interval over paired replicas and a verdict (`measures`), and where the
paper profile does not reproduce it, what the runs show about why (`causes`). The results come
from `results`; the names other modules use stay importable from here.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

from .. import recorded
from .causes import cause, unsolved_cause
from .measures import (
    CLOSE,
    DIRECTION,
    MEASURES,
    NOT,
    NOT_CHECKED,
    NOT_RUN,
    REPRODUCED,
    Outcome,
    checks_of,
    evaluate,
    instance_value,
    workload_stat,
)
from .results import ALREADY_BUSY, WORKLOAD_VARIANTS, Results, label, load_runs, metric

__all__ = [
    "CLOSE", "DIRECTION", "MEASURES", "NOT", "NOT_CHECKED", "NOT_RUN", "PROFILES", "REPRODUCED", "Outcome", "Results",
    "Row", "cause", "evaluate", "evaluate_all", "instance_value", "label", "load_findings", "load_runs", "metric",
    "unsolved_cause", "workload_stat",
]

PROFILES = ("paper", "ours")


@dataclass(frozen=True)
class Row:
    finding: dict[str, Any]
    paper: Outcome  # under profile=paper
    ours: Outcome  # under our defaults
    cause: str = ""  # where not reproduced under the paper profile: what the runs show about why
    busy: Outcome | None = None  # under profile=paper at the papers' contention (None: not a simulation's)


def load_findings() -> list[dict[str, Any]]:
    text = resources.files(__package__).joinpath("paper_findings.toml").read_text(encoding="utf-8")
    return list(tomllib.loads(text)["finding"])


def evaluate_all(res: Results) -> list[Row]:
    rows = []
    for f in load_findings():
        paper, ours = evaluate(f, res, "paper"), evaluate(f, res, "ours")
        rows.append(Row(f, paper, ours, cause(f, res, paper, ours), busy(f, res, paper)))
    return rows


#: the PBS at the papers' contention, where the recorded schedule cannot run
PBS_LIKE = "pbs"


def busy(finding: dict[str, Any], res: Results, paper: Outcome) -> Outcome | None:
    """The finding under the paper profile on its study's workload at the papers' contention: the
    busy variant's runs, or the study's own where it already is that contended. The recorded
    schedule exists at its own load only, so there the PBS it stands for is the PBS-like one."""
    experiment = finding["experiment"]
    if experiment in ALREADY_BUSY:
        return paper
    if experiment not in WORKLOAD_VARIANTS:
        return None
    return evaluate({**_without_recorded(finding), "experiment": WORKLOAD_VARIANTS[experiment][0]}, res, "paper")


def _without_recorded(finding: dict[str, Any]) -> dict[str, Any]:
    def swap(v: Any) -> Any:
        return PBS_LIKE if v == recorded.NAME else v

    return {**finding, "check": [{k: swap(v) for k, v in c.items()} for c in checks_of(finding)],
            "dispatchers": [swap(d) for d in finding.get("dispatchers", [])]}
