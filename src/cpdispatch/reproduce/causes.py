"""Why a finding is not reproduced under the paper profile, from what the runs show: the single
differences (attribution replays, single-difference runs) that reproduce it, the workload-only
variant, decisions left unsolved, or the remaining candidates."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from .experiments import DIFFERENCES, TEXT_VALUES
from .measures import DIRECTION, NOT, REPRODUCED, Outcome, checks_of, evaluate, instance_value
from .results import WORKLOAD_VARIANTS, Results

#: a simulation whose system's recorded instances a study replays one difference at a time
RELATED_STUDY = {"kit-sim": "kit-large"}


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
    checks = checks_of(finding)
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
    checks = checks_of(finding)
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
