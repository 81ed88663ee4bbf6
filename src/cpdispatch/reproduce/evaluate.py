"""Each finding's `check` evaluated on the experiments' results, under the paper profile and under
our defaults, with a 95% interval over paired replicas and a verdict.

Verdicts: *reproduced* (a ratio or value within the interval or within 25% of the paper's; a
direction or ordering significant at 95%; a level claim whose interval lies within the tolerance),
*direction reproduced* (the paper's side of 1 or the paper's order, not within 25% or not
significant), *not reproduced*, *not run* (the results are missing) and *not checked* (the
finding cannot be checked by a simulation; the reason is given).
"""

from __future__ import annotations

import json
import math
import tomllib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..stats import Estimate, mean_ci, paired_difference, paired_ratio
from .experiments import DIFFERENCES, STATS_FILE, TEXT_VALUES, paper_label

REPRODUCED, DIRECTION, NOT, NOT_RUN, NOT_CHECKED = (
    "reproduced", "direction reproduced", "not reproduced", "not run", "not checked")
#: relative distance within which a ratio or value counts as the paper's
CLOSE = 1.25
PROFILES = ("paper", "ours")
#: the workload-only variants (experiments.campaigns): an experiment run again under the paper
#: profile with only its workload changed, and what changed
WORKLOAD_VARIANTS = {
    "eurora-cp": ("eurora-cp-contended", "the same Eurora-like workload at a higher load (10, against 3)"),
}
#: a simulation whose system's recorded instances a study replays one difference at a time
RELATED_STUDY = {"kit-sim": "kit-large"}
#: single-difference runs of a simulation (experiments.ABLATION_ATTRIBUTION)
SIM_ATTRIBUTION = {"ablation": "ablation-attribution"}
SIMULATIONS = ("eurora-cp", "ablation", "ablation-base", "eurora14", "kit-sim", *SIM_ATTRIBUTION.values(),
               *(v for v, _ in WORKLOAD_VARIANTS.values()))


@dataclass(frozen=True)
class Outcome:
    verdict: str
    text: str  # the measured value with its interval


@dataclass(frozen=True)
class Row:
    finding: dict[str, Any]
    paper: Outcome  # under profile=paper
    ours: Outcome  # under our defaults
    cause: str = ""  # where not reproduced under the paper profile: what the runs show about why


def load_findings() -> list[dict[str, Any]]:
    text = resources.files(__package__).joinpath("paper_findings.toml").read_text(encoding="utf-8")
    return list(tomllib.loads(text)["finding"])


def label(name: str, profile: str) -> str:
    """The campaign label of CP dispatcher `name` under `profile` (others have one label)."""
    return paper_label(name) if profile == "paper" else name


# -- results ---------------------------------------------------------------------------------------


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
        out.append({"label": s["dispatcher"]["label"], "cp": cp, "predictor": s["predictor"],
                    "pair": (s["workload"]["label"], s["load_factor"], s["replica"], s["predictor"]),
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


# -- measures --------------------------------------------------------------------------------------


def close(value: float, target: float) -> bool:
    if target == 0 or value <= 0 or target < 0:
        return abs(value - target) <= 0.05
    return abs(math.log(value / target)) <= math.log(CLOSE)


def _ratio(res: Results, exp: str, check: dict[str, Any], profile: str) -> Outcome:
    a, b = res.paired(exp, check["a"], check["b"], profile, check["metric"], check["predictor"])
    if not a:
        return Outcome(NOT_RUN, "")
    e = paired_ratio(a, b)
    if e.n == 0:
        return Outcome(NOT, f"{check['a']}/{check['b']}: undefined, a value of 0 in each of {len(a)} pairs")
    target = float(check["target"])
    same_side = (e.mean - 1) * (target - 1) > 0 or e.mean == target
    if same_side and (close(e.mean, target) or (e.contains(target) and not e.contains(1.0))):
        verdict = REPRODUCED
    elif same_side:
        verdict = DIRECTION
    else:
        verdict = NOT
    return Outcome(verdict, f"{check['a']}/{check['b']} = {e.text()}")


def _sign(d: Estimate) -> str:
    if d.n >= 2 and d.high < 0:
        return REPRODUCED
    return DIRECTION if d.mean < 0 else NOT


def _direction(res: Results, exp: str, check: dict[str, Any], profile: str) -> Outcome:
    a, b = res.paired(exp, check["lower"], check["higher"], profile, check["metric"], check["predictor"])
    d = paired_difference(a, b)
    if d.n == 0:
        return Outcome(NOT_RUN, "")
    return Outcome(_sign(d), f"{check['lower']} - {check['higher']} = {d.text()}")


def _ordering(res: Results, exp: str, check: dict[str, Any], profile: str) -> Outcome:
    order = list(check["order"])
    verdicts, parts = [], []
    for low, high in zip(order, order[1:]):
        a, b = res.paired(exp, low, high, profile, check["metric"], check["predictor"])
        d = paired_difference(a, b)
        if d.n == 0:
            return Outcome(NOT_RUN, "")
        verdicts.append(_sign(d))
        parts.append(f"{low} - {high} = {d.text()}")
    verdict = REPRODUCED if all(v == REPRODUCED for v in verdicts) else (
        DIRECTION if all(v != NOT for v in verdicts) else NOT)
    return Outcome(verdict, "; ".join(parts))


def _level(res: Results, exp: str, check: dict[str, Any], profile: str) -> Outcome:
    a, b = res.paired(exp, check["a"], check["b"], profile, check["metric"], check["predictor"])
    if a and all(x == y for x, y in zip(a, b)):  # identical (e.g. no job waits under either)
        return Outcome(REPRODUCED, f"{check['a']} = {check['b']} in each of {len(a)} pairs")
    e = paired_ratio(a, b)
    if e.n == 0:
        return Outcome(NOT_RUN if not a else NOT, "")
    tol = float(check.get("tolerance", 0.1))
    inside = (1 - tol) <= e.mean <= (1 + tol)
    strict = e.n >= 2 and 1 - tol <= e.low and e.high <= 1 + tol
    verdict = REPRODUCED if strict else (DIRECTION if inside else NOT)
    return Outcome(verdict, f"{check['a']}/{check['b']} = {e.text()} (level within ±{tol:.0%})")


def _value(res: Results, exp: str, check: dict[str, Any], profile: str) -> Outcome:
    values = list(res.series(exp, check["a"], profile, check["metric"], check["predictor"]).values())
    e = mean_ci(values)
    if e.n == 0:
        return Outcome(NOT_RUN, "")
    target = float(check["target"])
    ok = e.contains(target) or close(e.mean, target)
    return Outcome(REPRODUCED if ok else NOT, f"{check['a']}: {e.text()}")


def instance_value(res: Results, check: dict[str, Any], profile: str) -> tuple[float, dict[str, Any]] | None:
    """The per-instance statistic a check names, and its dispatcher's row (None: not replayed)."""
    stats = res.study(check["study"], profile)
    row = next((s for s in stats or [] if s["dispatcher"] == check["dispatcher"]), None)
    if row is None:
        return None
    field = check["field"]
    if field == "unsolved_share":
        value = row["statuses"].get("unsolved", 0) / row["with_model"] if row["with_model"] else math.nan
    else:
        value = float(row.get(field, math.nan))
    return value, row


def _instances(res: Results, exp: str, check: dict[str, Any], profile: str) -> Outcome:
    found = instance_value(res, check, profile)
    if found is None:
        return Outcome(NOT_RUN, "")
    value, row = found
    field = check["field"]
    if math.isnan(value):
        return Outcome(NOT_RUN, f"{field}: no instance with a model")
    target, op = float(check["target"]), check.get("op", "~")
    ok = value < target if op == "<" else value > target if op == ">" else close(value, target)
    side = (value < 1) == (target < 1) if field.startswith(("time_ratio_median", "variables_ratio_median")) else False
    verdict = REPRODUCED if ok else (DIRECTION if side else NOT)
    n = row["ratio_instances"] if "ratio" in field else row["with_model"]
    return Outcome(verdict, f"{check['dispatcher']} {field} = {value:.3g} over {n} instances")


def _workload(res: Results, exp: str, check: dict[str, Any], profile: str) -> Outcome:
    value = workload_stat(check["stat"])
    target = float(check["target"])
    ok = abs(value - target) <= 0.02 if target <= 1 else close(value, target)
    return Outcome(REPRODUCED if ok else NOT, f"{check['stat']} = {value:.4g}")


def workload_stat(stat: str) -> float:
    from ..system import load_system

    if stat.startswith("eurora_"):
        if stat == "eurora_nodes":
            return float(load_system("eurora").n_nodes)
        from ..workloads.generator import generate_eurora

        jobs = generate_eurora(5000, 1).jobs
        if stat == "eurora_short_share":
            return sum(j.runtime < 3600 for j in jobs) / len(jobs)
        queue = stat.partition(":")[2]
        return sum(j.queue == queue for j in jobs) / len(jobs)
    kit = load_system("kit-forhlr2")
    gpu = kit.types.index("gpu")
    gpu_nodes = float((kit.capacity[:, gpu] > 0).sum())
    return {"kit_nodes": float(kit.n_nodes), "kit_cores": float(kit.capacity[:, kit.types.index("core")].sum()),
            "kit_gpu_nodes": gpu_nodes, "kit_cpu_only_node_share": 1 - gpu_nodes / kit.n_nodes}[stat]


MEASURES: dict[str, Callable[[Results, str, dict[str, Any], str], Outcome]] = {
    "ratio": _ratio, "direction": _direction, "ordering": _ordering, "level": _level, "value": _value,
    "instances": _instances, "workload": _workload,
}


def _combine(outcomes: list[Outcome]) -> Outcome:
    """Several checks of one finding: the weakest verdict, every measured value."""
    rank = [REPRODUCED, DIRECTION, NOT_CHECKED, NOT_RUN, NOT]
    verdict = max((o.verdict for o in outcomes), key=rank.index)
    return Outcome(verdict, "; ".join(o.text for o in outcomes if o.text))


def evaluate(finding: dict[str, Any], res: Results, profile: str) -> Outcome:
    checks = finding.get("check", {"measure": "none", "why": "no check given"})
    checks = checks if isinstance(checks, list) else [checks]
    outcomes = []
    for check in checks:
        measure = check["measure"]
        if measure == "none":
            outcomes.append(Outcome(NOT_CHECKED, check.get("why", "")))
        else:
            outcomes.append(MEASURES[measure](res, finding["experiment"], check, profile))
    return _combine(outcomes)


def evaluate_all(res: Results) -> list[Row]:
    rows = []
    for f in load_findings():
        paper, ours = evaluate(f, res, "paper"), evaluate(f, res, "ours")
        rows.append(Row(f, paper, ours, cause(f, res, paper, ours)))
    return rows


def moved_towards(check: dict[str, Any], res: Results) -> str:
    """The attribution replays that move a per-instance statistic at least a fifth of the way from
    the paper profile's value to the paper's, with the value each reaches."""
    base = instance_value(res, check, "paper")
    if base is None or math.isnan(base[0]):
        return ""
    target, start = float(check["target"]), base[0]
    out = []
    for key in DIFFERENCES:
        found = instance_value(res, check, f"paper-but-{key}")
        if found is None or math.isnan(found[0]) or target == start:
            continue
        if (found[0] - start) / (target - start) >= 0.2:
            name = f"`{key}={TEXT_VALUES[key]}`" if key in TEXT_VALUES else f"our `{key}`"
            out.append(f"{name} {found[0]:.3g}")
    return ", ".join(out) + (f" (paper profile {start:.3g})" if out else "")


def cause(finding: dict[str, Any], res: Results, paper: Outcome, ours: Outcome) -> str:
    """What the runs show about a finding that the paper profile does not reproduce: the
    differences whose single change (an attribution replay) reproduces it, the set-up that does,
    or the remaining candidates (solver generation, the stand-in workload)."""
    if paper.verdict not in (NOT, DIRECTION):
        return ""
    if finding.get("note"):  # a known difference between the paper's text and what it measured
        return str(finding["note"])
    checks = finding["check"] if isinstance(finding["check"], list) else [finding["check"]]
    if all(c["measure"] == "instances" for c in checks):
        moved = []
        for key in DIFFERENCES:
            if res.study(checks[0]["study"], f"paper-but-{key}") is None:
                continue
            verdict = evaluate(finding, res, f"paper-but-{key}").verdict
            if better(verdict, paper.verdict):
                moved.append(f"`{key}={TEXT_VALUES[key]}` (the paper's text)" if key in TEXT_VALUES
                             else f"our `{key}`")
        if moved:
            return f"closer to the paper with {', '.join(moved)}: a replay that changes only that"
        towards = moved_towards(checks[0], res)
        if towards:
            return (f"replays that change one difference move it towards the paper's {checks[0]['target']:g}: "
                    f"{towards}; no single one reproduces it")
    unsolved = unsolved_cause(res, finding)
    changed = single_difference_cause(res, finding, paper)
    if unsolved or changed:
        return "; ".join(x for x in (unsolved, changed) if x)
    reproduces, workload = workload_cause(res, finding, paper)
    if reproduces:
        return workload
    if better(ours.verdict, paper.verdict):
        return "; ".join(x for x in ("our defaults come closer than the paper profile (the two columns)", workload)
                         if x)
    metrics = {str(c.get("metric", c.get("field", ""))) for c in checks}
    if any(m.startswith(("decision_time", "time_ratio", "solve_ms")) for m in metrics):
        return "; ".join(x for x in (workload, SOLVER_CANDIDATE) if x)
    return workload or "not isolated by a run"


def better(verdict: str, than: str) -> bool:
    rank = [REPRODUCED, DIRECTION, NOT]
    return verdict in rank and than in rank and rank.index(verdict) < rank.index(than)


def single_difference_cause(res: Results, finding: dict[str, Any], paper: Outcome) -> str:
    """What the single-difference runs of a dispatcher the finding compares give (`Results.swapped`)."""
    out = []
    for key in sorted(k for k in res.swapped if k.startswith(finding["experiment"] + ":")
                      and res.swapped_name.get(k) in finding_names(finding)):
        shifted, difference = evaluate({**finding, "experiment": key}, res, "paper"), key.split("paper-but-")[1]
        if better(shifted.verdict, paper.verdict):
            out.append(f"with only our `{difference}` it is {shifted.verdict}: {shifted.text}")
        elif shifted.verdict in (DIRECTION, NOT):
            out.append(f"not our `{difference}` alone (a run that changes only that: {shifted.verdict})")
    return "; ".join(out)


def workload_cause(res: Results, finding: dict[str, Any], paper: Outcome) -> tuple[bool, str]:
    """(whether it reproduces, what it says): the finding on its experiment's workload-only variant."""
    if finding["experiment"] not in WORKLOAD_VARIANTS:
        return False, ""
    variant, what = WORKLOAD_VARIANTS[finding["experiment"]]
    if not res.runs.get(variant):
        return False, ""
    shifted = evaluate({**finding, "experiment": variant}, res, "paper")
    waits = (f"mean wait {paper_wait(res, variant):.0f} s under the paper profile, against "
             f"{paper_wait(res, finding['experiment']):.0f} s")
    if better(shifted.verdict, paper.verdict):
        return True, f"the workload: on {what} ({waits}) the paper profile gives {shifted.verdict}: {shifted.text}"
    if shifted.verdict in (DIRECTION, NOT):  # not run there: the variant says nothing
        return False, f"not the workload alone: on {what} ({waits}) still {shifted.verdict}"
    return False, ""


#: the one difference no run can change: OR-Tools 7.3 has no build for a current Python
SOLVER_CANDIDATE = ("candidate: the solver generation (CP-SAT decides these models in milliseconds, OR-Tools 7.3 "
                    "took hundreds; 7.3 has no build for Python 3.11, so no run can change only that)")


def finding_names(finding: dict[str, Any]) -> set[str]:
    """The dispatchers a finding's checks compare."""
    checks = finding["check"] if isinstance(finding["check"], list) else [finding["check"]]
    names = {c[k] for c in checks for k in ("a", "b", "lower", "higher", "dispatcher") if k in c}
    return names | {n for c in checks for n in c.get("order", [])}


def unsolved_cause(res: Results, finding: dict[str, Any]) -> str:
    """Where a dispatcher the finding compares leaves many decisions unsolved under the paper
    profile (nothing starts: the profile has no fallback), that share; and, where a study replays the
    same system's recorded instances (`RELATED_STUDY`), the differences whose single change lets
    its model decide them all."""
    experiment, names = finding["experiment"], finding_names(finding)
    calls: dict[str, Counter[str]] = {}
    for r in res.runs.get(experiment, []):
        name = r["label"].removesuffix("/paper")
        if r["label"].endswith("/paper") and name in names:
            calls.setdefault(name, Counter()).update(r["summary"].get("decision_status", {}))
    study = RELATED_STUDY.get(experiment, "")
    out = []
    for name, c in sorted(calls.items()):
        total = max(1, sum(c.values()))
        share = _unsolved(c) / total
        if share < 0.05:
            continue
        capped = sum(v for k, v in c.items() if k.endswith(":capped")) / total
        text = (f"{name} left {share:.0%} of its decisions here unsolved (nothing starts; the paper profile has no "
                f"fallback)" + (f", {capped:.0%} stopped by `det_wall_cap`" if capped else ""))
        base = _study_row(res, study, "paper", name)
        if base:
            fixed = [f"our `{key}`" for key in DIFFERENCES
                     if (row := _study_row(res, study, f"paper-but-{key}", name))
                     and row["statuses"].get("optimal", 0) + row["statuses"].get("feasible", 0) == row["instances"]]
            text += (f"; on the same system's recorded instances (`{study}`, {_unsolved(base['statuses'])} of "
                     f"{base['instances']} unsolved under the paper profile) "
                     + (f"its model decides all with only {' or '.join(fixed)} changed" if fixed
                        else "no single difference lets its model decide all"))
        out.append(text)
    return "; ".join(out)


def _unsolved(statuses: dict[str, int]) -> int:
    return sum(v for k, v in statuses.items() if k.startswith("unsolved"))


def _study_row(res: Results, study: str, setup: str, name: str) -> dict[str, Any] | None:
    """Dispatcher `name`'s statistics in one replay of an instance study (None: not replayed)."""
    return next((s for s in (res.study(study, setup) or []) if s["dispatcher"] == name), None) if study else None


def paper_wait(res: Results, experiment: str) -> float:
    """Mean job wait over the paper-profile runs of `experiment` (how contended its workload is)."""
    waits = [float(r["summary"]["avg_wait"]) for r in res.runs.get(experiment, [])
             if r["label"].endswith("/paper") and r["summary"].get("avg_wait") is not None]
    return sum(waits) / len(waits) if waits else math.nan
