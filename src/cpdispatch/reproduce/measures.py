"""The measures a finding's check names (ratio, direction, ordering, level, value, instances,
workload), each turning the runs into an Outcome: a verdict and the measured value.

Verdicts: *reproduced* (a ratio or value within the interval or within 25% of the paper's; a
direction or ordering significant at 95%; a level claim whose interval lies within the tolerance),
*direction reproduced* (the paper's side of 1 or the paper's order, not within 25% or not
significant), *not reproduced*, *not run* (the results are missing) and *not checked* (the
finding cannot be checked by a simulation; the reason is given).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..stats import Estimate, mean_ci, paired_difference, paired_ratio
from .results import Results

REPRODUCED, DIRECTION, NOT, NOT_RUN, NOT_CHECKED = (
    "reproduced", "direction reproduced", "not reproduced", "not run", "not checked")
#: relative distance within which a ratio or value counts as the paper's
CLOSE = 1.25


@dataclass(frozen=True)
class Outcome:
    verdict: str
    text: str  # the measured value with its interval


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


def checks_of(finding: dict[str, Any]) -> list[dict[str, Any]]:
    """A finding's checks as a list (the catalogue writes a single one as a table)."""
    checks = finding.get("check", {"measure": "none", "why": "no check given"})
    return checks if isinstance(checks, list) else [checks]


def evaluate(finding: dict[str, Any], res: Results, profile: str) -> Outcome:
    outcomes = []
    for check in checks_of(finding):
        measure = check["measure"]
        if measure == "none":
            outcomes.append(Outcome(NOT_CHECKED, check.get("why", "")))
        else:
            outcomes.append(MEASURES[measure](res, finding["experiment"], check, profile))
    return _combine(outcomes)
