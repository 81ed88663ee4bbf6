"""The campaigns' results a reproduction reads: each experiment's complete runs (settings and
summary), the metrics the findings name, and the instance studies' statistics."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from .experiments import STATS_FILE, paper_label

#: the studies at the papers' contention (`experiments.busy_campaigns`): an experiment run again
#: under the paper profile with only its workload changed, and what changed
WORKLOAD_VARIANTS = {
    "eurora-cp": ("eurora-cp-busy", "the Eurora-like workload as contended as the papers' (longer jobs)"),
    "kit-sim": ("kit-sim-busy", "CEA-Curie jobs as contended as the papers' (another slice, a higher load)"),
    "eurora14": ("eurora14-busy", "the 2014 study's slices as contended as the papers' (a higher load)"),
}
#: experiments whose workload already is as contended as the papers' (their busy column is theirs)
ALREADY_BUSY = ("ablation", "ablation-base")
#: single-difference runs of a simulation (experiments.ABLATION_ATTRIBUTION)
SIM_ATTRIBUTION = {"ablation": "ablation-attribution"}
#: experiments beyond the papers' (the one PCP'20's conclusion asks for: decision time charged)
CHARGED = ("eurora-cp-charged", "kit-sim-charged")
SIMULATIONS = ("eurora-cp", "ablation", "ablation-base", "eurora14", "kit-sim", *SIM_ATTRIBUTION.values(),
               *(v for v, _ in WORKLOAD_VARIANTS.values()), *CHARGED)


def label(name: str, profile: str) -> str:
    """The campaign label of CP dispatcher `name` under `profile` (others have one label)."""
    return paper_label(name) if profile == "paper" else name


def load_runs(folder: Path) -> list[dict[str, Any]]:
    """One record per complete run of the campaign last run in `folder` (its own runs only: a
    folder may also hold runs of an earlier scale or version): the settings and the summary."""
    from ..campaign import RUNS_FILE
    from ..campaign.spec import run_key
    from ..dispatchers.base import dispatcher_class
    from ..errors import CpdispatchError

    wanted = {run_key(s) for s in json.loads((folder / RUNS_FILE).read_text())["runs"]}
    out = []
    for key in sorted(wanted):
        path = folder / "runs" / key / "run.json"
        if not path.is_file():
            continue
        s = json.loads(path.read_text())["settings"]
        summary = json.loads((path.parent / "summary.json").read_text())
        try:  # a CP dispatcher has a paper profile: its plain label is our defaults only
            cp = any(o.name == "profile" for o in dispatcher_class(s["dispatcher"]["name"]).options)
        except CpdispatchError:  # `recorded` is a replay, not a dispatcher
            cp = False
        predictor = s["predictor"].split(",")[0]  # the predictor by its name (`experiments.PAPER_D`)
        out.append({"label": s["dispatcher"]["label"], "cp": cp, "predictor": predictor,
                    "pair": (s["workload"]["label"], s["load_factor"], s["replica"], predictor),
                    "summary": summary})
    return out


def metric(summary: dict[str, Any], name: str) -> float:
    simple = {"wait_mean": "avg_wait", "slowdown_mean": "avg_slowdown", "bounded_slowdown_mean": "avg_bounded_slowdown",
              "decision_time_mean": "dispatch_cpu_ms_mean", "decision_time_max": "dispatch_cpu_ms_max",
              "makespan": "makespan"}
    if name in simple:
        value = summary.get(simple[name])
    elif name == "utilisation_core":
        value = summary.get("utilization", {}).get("core")
    elif name == "completed_share":
        value = summary["completed"] / summary["jobs"] if summary.get("jobs") else None
    elif name.startswith(("wait_queue:", "slowdown_queue:")):
        kind, _, queue = name.partition(":")
        value = summary.get("by_queue", {}).get(queue, {}).get("avg_wait" if kind == "wait_queue" else "avg_slowdown")
    else:
        raise KeyError(f"unknown metric {name!r}")
    return math.nan if value is None else float(value)


class Results:
    """The simulations of each experiment, and the instance studies' statistics."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.runs = {name: load_runs(root / name) for name in SIMULATIONS if (root / name / "runs").is_dir()}
        #: runs planned per campaign (its last campaign file), to say what a page rests on
        self.planned = {name: len(json.loads((root / name / "campaign-runs.json").read_text())["runs"])
                        for name in self.runs}
        #: "experiment:paper-but-key" -> the experiment's runs with one dispatcher's paper-profile runs
        #: replaced by its single-difference runs (same replicas, so the pairs hold)
        self.swapped: dict[str, list[dict[str, Any]]] = {}
        self.swapped_name: dict[str, str] = {}  # the dispatcher whose runs are swapped
        for experiment, attribution in SIM_ATTRIBUTION.items():
            for r in self.runs.get(attribution, []):
                name, _, setup = r["label"].partition("/")
                key = f"{experiment}:{setup}"
                self.swapped_name[key] = name
                if key not in self.swapped:
                    self.swapped[key] = [x for x in self.runs.get(experiment, []) if x["label"] != paper_label(name)]
                self.swapped[key].append({**r, "label": paper_label(name), "cp": True})

    def series(self, experiment: str, name: str, profile: str, metric_name: str, predictor: str
               ) -> dict[tuple[Any, ...], float]:
        """Per replica pair, `metric_name` of `name` under `profile`: a CP dispatcher's runs under
        that profile, any other dispatcher's (PBS-like, EASY, the recorded schedule) under both."""
        out = {}
        for r in self.runs.get(experiment) or self.swapped.get(experiment, []):
            mine = r["label"] == label(name, profile) if r["cp"] else r["label"] in (name, label(name, profile))
            if mine and predictor in ("all", r["predictor"]):
                out[r["pair"]] = metric(r["summary"], metric_name)
        return out

    def paired(self, experiment: str, a: str, b: str, profile: str, metric_name: str, predictor: str
               ) -> tuple[list[float], list[float]]:
        sa = self.series(experiment, a, profile, metric_name, predictor)
        sb = self.series(experiment, b, profile, metric_name, predictor)
        keys = sorted(set(sa) & set(sb), key=str)
        return [sa[k] for k in keys], [sb[k] for k in keys]

    def study(self, study: str, profile: str) -> list[dict[str, Any]] | None:
        path = self.root / study / profile / STATS_FILE
        return json.loads(path.read_text()) if path.exists() else None
