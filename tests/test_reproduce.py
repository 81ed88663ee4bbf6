"""The reproduction: every finding of the catalogue has a check the engine understands, verdicts
follow their definitions on hand-made results, and `cpdispatch reproduce --quick` runs end to end."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from cpdispatch.reproduce import evaluate as ev
from cpdispatch.reproduce.experiments import QUICK, campaigns, instance_studies
from cpdispatch.stats import mean_ci, paired_ratio

from .conftest import WORKLOADS

EXPERIMENT_NAMES = {
    "eurora-cp": {"pcp20", "pcp19", "hcp19", "pbs", "easy"},
    "ablation": {"pcp", "pcp1", "pcp2", "pcp3", "hcp", "hcp1", "hcp2", "hcp3"},
    "eurora14": {*(f"eurora14-{o}" for o in ("makespan", "tardiness", "late_jobs", "mks-wt-nl", "wt-mks-nl",
                                              "nl-mks-wt")), "pbs", "recorded"},
    "instances": {"pcp20", "pcp19", "hcp19"},
    "kit-large": {"pcp20", "pcp19", "hcp19"},
    "kit-sim": {"pcp20", "hcp19"},
    "ablation-base": {"pcp", "pcp1"},
    "eurora-cp-charged": {"pcp20", "pcp19", "hcp19"},
    "kit-sim-charged": {"pcp20", "hcp19"},
}
PREDICTORS = {"walltime", "datadriven", "real", "last2", "all"}


def checks(f: dict[str, Any]) -> list[dict[str, Any]]:
    c = f["check"]
    return c if isinstance(c, list) else [c]


def test_every_finding_has_a_check_the_engine_understands() -> None:
    findings = ev.load_findings()
    assert len({f["id"] for f in findings}) == len(findings) > 100
    for f in findings:
        for c in checks(f):
            measure = c["measure"]
            assert measure == "none" or measure in ev.MEASURES, f["id"]
            if measure == "none":
                assert c["why"], f["id"]
                continue
            if measure == "workload":
                assert not math.isnan(ev.workload_stat(c["stat"])), f["id"]
                continue
            names = [c[k] for k in ("a", "b", "lower", "higher", "dispatcher") if k in c] + list(c.get("order", []))
            study = c.get("study", f["experiment"])
            assert set(names) <= EXPERIMENT_NAMES[study], (f["id"], names)
            if "predictor" in c:
                assert c["predictor"] in PREDICTORS, f["id"]
            if "metric" in c:
                ev.metric({"avg_wait": 1, "avg_slowdown": 1, "avg_bounded_slowdown": 1, "dispatch_cpu_ms_mean": 1,
                           "dispatch_cpu_ms_max": 1, "makespan": 1, "utilization": {"core": 1}, "completed": 1,
                           "jobs": 1, "by_queue": {}}, c["metric"])


class Fake(ev.Results):
    """Results from a dict: label -> [value per replica] of one metric, one predictor."""

    def __init__(self, values: dict[str, list[float]], stats: dict[str, Any] | None = None) -> None:
        self.values, self.stats = values, stats or {}
        self.runs: dict[str, list[dict[str, Any]]] = {}
        self.swapped: dict[str, list[dict[str, Any]]] = {}
        self.swapped_name: dict[str, str] = {}

    def series(self, experiment: str, name: str, profile: str, metric_name: str, predictor: str
               ) -> dict[tuple[Any, ...], float]:
        values = self.values.get(ev.label(name, profile), self.values.get(name if name in ("pbs", "easy") else "", []))
        return {(i,): v for i, v in enumerate(values)}

    def study(self, study: str, profile: str) -> list[dict[str, Any]] | None:
        return self.stats.get(profile)


def outcome(check: dict[str, Any], values: dict[str, list[float]], profile: str = "paper") -> ev.Outcome:
    finding = {"experiment": "eurora-cp", "check": check}
    return ev.evaluate(finding, Fake(values), profile)


RATIO = {"measure": "ratio", "a": "hcp19", "b": "pcp20", "metric": "decision_time_mean", "predictor": "real",
         "target": 1.63}


def test_ratio_verdicts() -> None:
    near = {"hcp19/paper": [16.0, 17.0, 15.0], "pcp20/paper": [10.0, 10.0, 10.0]}
    assert outcome(RATIO, near).verdict == ev.REPRODUCED
    same_side = {"hcp19/paper": [40.0, 41.0, 39.0], "pcp20/paper": [10.0, 10.0, 10.0]}
    assert outcome(RATIO, same_side).verdict == ev.DIRECTION
    # a wide interval that holds the paper's value but also 1 proves nothing
    vague = {"hcp19/paper": [2.0, 40.0], "pcp20/paper": [10.0, 10.0]}
    assert outcome(RATIO, vague).verdict == ev.NOT
    opposite = {"hcp19/paper": [5.0, 6.0, 5.5], "pcp20/paper": [10.0, 10.0, 10.0]}
    assert outcome(RATIO, opposite).verdict == ev.NOT
    # our defaults are read from the plain labels; missing results are "not run"
    assert outcome(RATIO, near, "ours").verdict == ev.NOT_RUN
    assert outcome(RATIO, {"hcp19": [16.0, 17.0], "pcp20": [10.0, 10.0]}, "ours").verdict == ev.REPRODUCED


def test_direction_and_ordering_need_significance_for_reproduced() -> None:
    check = {"measure": "direction", "lower": "pcp20", "higher": "pbs", "metric": "wait_mean", "predictor": "real"}
    assert outcome(check, {"pcp20/paper": [1.0, 2.0, 3.0], "pbs": [5.0, 6.0, 7.5]}).verdict == ev.REPRODUCED
    assert outcome(check, {"pcp20/paper": [1.0, 9.0, 3.0], "pbs": [5.0, 6.0, 4.0]}).verdict == ev.DIRECTION
    assert outcome(check, {"pcp20/paper": [6.0, 7.0, 8.0], "pbs": [5.0, 6.0, 7.0]}).verdict == ev.NOT
    order = {"measure": "ordering", "order": ["pcp20", "hcp19", "pcp19"], "metric": "decision_time_mean",
             "predictor": "real"}
    values = {"pcp20/paper": [1.0, 1.1, 1.2], "hcp19/paper": [2.0, 2.2, 2.1], "pcp19/paper": [3.0, 3.3, 3.1]}
    assert outcome(order, values).verdict == ev.REPRODUCED
    values["pcp19/paper"] = [1.5, 1.6, 1.7]
    assert outcome(order, values).verdict == ev.NOT


def test_level_and_value() -> None:
    level = {"measure": "level", "a": "pcp20", "b": "hcp19", "metric": "slowdown_mean", "predictor": "real",
             "tolerance": 0.1}
    assert outcome(level, {"pcp20/paper": [10.0, 10.1, 9.9], "hcp19/paper": [10.0, 10.0, 10.0]}).verdict == \
        ev.REPRODUCED
    assert outcome(level, {"pcp20/paper": [13.0, 13.1, 12.9], "hcp19/paper": [10.0, 10.0, 10.0]}).verdict == ev.NOT
    value = {"measure": "value", "a": "pcp20", "metric": "decision_time_mean", "predictor": "real", "target": 252.0}
    assert outcome(value, {"pcp20/paper": [250.0, 260.0]}).verdict == ev.REPRODUCED
    assert outcome(value, {"pcp20/paper": [2.0, 3.0]}).verdict == ev.NOT


def test_several_checks_take_the_weakest_verdict_and_none_is_not_checked() -> None:
    both = [RATIO, {"measure": "none", "why": "hardware"}]
    out = outcome(both, {"hcp19/paper": [16.0, 17.0], "pcp20/paper": [10.0, 10.0]})
    assert out.verdict == ev.NOT_CHECKED and "hardware" in out.text
    # a failed check is not hidden by an unchecked one
    assert outcome(both, {"hcp19/paper": [5.0, 6.0], "pcp20/paper": [10.0, 10.0]}).verdict == ev.NOT


class ByExperiment(Fake):
    """Fake results per experiment: the study and its workload-only variant."""

    def __init__(self, values: dict[str, dict[str, list[float]]], waits: dict[str, float]) -> None:
        super().__init__({})
        self.by_experiment = values
        self.runs = {e: [{"label": "pcp20/paper", "summary": {"avg_wait": w}}] for e, w in waits.items()}

    def series(self, experiment: str, name: str, profile: str, metric_name: str, predictor: str
               ) -> dict[tuple[Any, ...], float]:
        self.values = self.by_experiment.get(experiment, {})
        return super().series(experiment, name, profile, metric_name, predictor)


def test_the_cause_names_the_workload_when_its_variant_alone_reproduces_the_finding() -> None:
    check = {"measure": "direction", "lower": "pcp20", "higher": "pbs", "metric": "wait_mean", "predictor": "real"}
    finding = {"experiment": "eurora-cp", "check": check}
    idle = {"pcp20/paper": [6.0, 7.0, 8.0], "pbs": [5.0, 6.0, 7.0]}
    contended = {"pcp20/paper": [1.0, 2.0, 3.0], "pbs": [5.0, 6.0, 7.5]}
    res = ByExperiment({"eurora-cp": idle, "eurora-cp-busy": contended},
                       {"eurora-cp": 12.0, "eurora-cp-busy": 130.0})
    paper, ours = ev.evaluate(finding, res, "paper"), ev.evaluate(finding, res, "ours")
    assert paper.verdict == ev.NOT
    cause = ev.cause(finding, res, paper, ours)
    assert cause.startswith("the workload:") and "gives reproduced" in cause and "130 s" in cause and "12 s" in cause
    res = ByExperiment({"eurora-cp": idle, "eurora-cp-busy": idle}, {"eurora-cp": 12.0,
                                                                           "eurora-cp-busy": 130.0})
    assert ev.cause(finding, res, paper, ours).startswith("not the workload alone")


def test_a_single_difference_run_that_reproduces_a_finding_is_named_as_its_cause() -> None:
    check = {"measure": "direction", "lower": "pcp3", "higher": "pcp1", "metric": "slowdown_mean",
             "predictor": "real"}
    finding = {"experiment": "ablation", "check": check}
    worse = {"pcp3/paper": [6.0, 7.0, 8.0], "pcp1/paper": [5.0, 6.0, 7.0]}
    better = {"pcp3/paper": [1.0, 2.0, 3.0], "pcp1/paper": [5.0, 6.0, 7.5]}
    res = ByExperiment({"ablation": worse, "ablation:paper-but-fallback": better, "ablation:paper-but-hint": worse},
                       {})
    res.swapped = {"ablation:paper-but-fallback": [], "ablation:paper-but-hint": []}
    res.swapped_name = {"ablation:paper-but-fallback": "pcp3", "ablation:paper-but-hint": "pcp3"}
    paper = ev.evaluate(finding, res, "paper")
    cause = ev.cause(finding, res, paper, ev.evaluate(finding, res, "ours"))
    assert "with only our `fallback` it is reproduced" in cause
    assert "not our `hint` alone (a run that changes only that: not reproduced)" in cause
    other = {"experiment": "ablation", "check": {**check, "lower": "hcp1", "higher": "hcp"}}
    assert "fallback" not in ev.cause(other, res, paper, paper)


def test_unsolved_decisions_are_traced_to_the_difference_that_lets_the_model_decide() -> None:
    """A simulation where the paper profile leaves decisions unsolved: the cause names the replays of
    the same system's recorded instances in which only one difference changed and the model decided
    them all (a fallback or shortcut deciding instead does not count)."""
    def stats(**statuses: int) -> list[dict[str, Any]]:
        return [{"dispatcher": "pcp20", "instances": 4, "statuses": statuses}]

    res = Fake({}, {"paper": stats(unsolved=3, optimal=1), "paper-but-hint": stats(optimal=4),
                    "paper-but-fallback": stats(fallback=3, optimal=1)})
    res.runs = {"kit-sim": [{"label": "pcp20/paper", "summary": {"decision_status": {"unsolved": 30, "optimal": 10}}},
                            {"label": "hcp19/paper", "summary": {"decision_status": {"optimal": 40}}}]}
    check = {"measure": "direction", "lower": "hcp19", "higher": "pcp20", "metric": "wait_mean", "predictor": "real"}
    text = ev.unsolved_cause(res, {"experiment": "kit-sim", "check": check})
    assert text.startswith("pcp20 left 75% of its decisions here unsolved") and "3 of 4 unsolved" in text
    assert "only our `hint` changed" in text and "fallback" not in text.split("no fallback")[1]
    assert ev.unsolved_cause(res, {"experiment": "eurora-cp", "check": check}) == ""


def test_intervals_come_from_the_t_distribution() -> None:
    e = mean_ci([1.0, 2.0, 3.0])
    assert math.isclose(e.mean, 2.0) and math.isclose(e.high - 2.0, 4.302652729749464 * 1 / math.sqrt(3))
    r = paired_ratio([2.0, 8.0], [1.0, 2.0])
    assert math.isclose(r.mean, math.sqrt(2 * 4))


def test_the_quick_experiments_name_only_what_exists(tmp_path: Path) -> None:
    from cpdispatch.campaign.spec import load_campaign

    for name, text in campaigns(QUICK).items():
        path = tmp_path / f"{name}.toml"
        path.write_text(text)
        labels = {r["dispatcher"]["label"] for r in load_campaign(path).runs}
        # every CP dispatcher runs under the paper profile beside our defaults
        assert all(f"{label}/paper" in labels for label in labels if "/" not in label and label not in
                   ("pbs", "easy", "recorded")), (name, labels)
    assert {s.id for s in instance_studies(QUICK)} == {"instances", "kit-large"}


@pytest.mark.skipif(not WORKLOADS.is_dir(), reason=f"the real traces are missing at {WORKLOADS}")
def test_reproduce_quick_end_to_end(tmp_path: Path) -> None:
    """The whole quick reproduction: every finding gets a row, the paper-profile runs really ran
    under the paper's settings (decisions by the model only, no fast path or greedy)."""
    from cpdispatch.cli import main

    out = tmp_path / "repro"
    assert main(["reproduce", "--quick", "--out", str(out), "--workers", "2", "--no-progress"]) == 0
    page = (out / "reproduction.md").read_text()
    findings = ev.load_findings()
    assert all(f"`{f['id']}`" in page for f in findings)
    for section in ("## Headline findings", "## How the decisions were taken", "## Decision times on the same",
                    "## Which difference moves"):
        assert section in page
    for run in (out / "eurora-cp" / "runs").glob("*/run.json"):
        settings = json.loads(run.read_text())["settings"]
        statuses = json.loads((run.parent / "summary.json").read_text())["decision_status"]
        if settings["dispatcher"]["label"].endswith("/paper"):
            assert not {s.split(":")[0] for s in statuses} & {"fastpath", "greedy", "fallback"}, statuses
    verdicts = [ev.evaluate(f, ev.Results(out), "paper").verdict for f in findings]
    assert verdicts.count(ev.NOT_RUN) == 0


@pytest.mark.parametrize("name", ["pcp20", "pcp19", "hcp19"])
def test_paper_but_changes_exactly_one_difference(name: str) -> None:
    """The attribution runs: the paper profile with one option at our default (pcp19 is an alias:
    its profile is pcp3's)."""
    from cpdispatch.dispatchers.base import make_dispatcher
    from cpdispatch.reproduce.experiments import DIFFERENCES, TEXT_VALUES, paper_but, paper_options

    paper = make_dispatcher(name, paper_options(QUICK))
    for key in DIFFERENCES:
        d = make_dispatcher(name, paper_but(name, key, QUICK))
        changed = {o.name for o in d.options if getattr(d, o.name) != getattr(paper, o.name)} - {"profile"}
        default = {o.name: o.default for o in d.options}
        target = TEXT_VALUES.get(key, default.get(key))
        expected = {key} if key in default and getattr(paper, key) != target else set()
        if key == "time_policy":
            expected.add("deterministic_time")  # the fast policy keeps its own budget
        assert changed == expected, (name, key, changed)


def test_missing_traces_are_a_one_line_error_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                             ) -> None:
    from cpdispatch.cli import main
    from cpdispatch.reproduce.experiments import TRACES_VARIABLE

    out = tmp_path / "repro"
    try:
        assert main(["reproduce", "--quick", "--out", str(out), "--traces", str(tmp_path / "none")]) == 2
    finally:
        import os

        os.environ.pop(TRACES_VARIABLE, None)
    err = capsys.readouterr().err.strip()
    assert err.startswith("cpdispatch: error: reproduce: trace(s)") and "--traces" in err and "\n" not in err
    assert not out.exists()


def test_the_busy_pcp20_studies_are_the_charged_runs_uncharged_twins(tmp_path: Path) -> None:
    """At the papers' contention the PCP'20 and KIT studies run exactly the charged campaigns' runs
    without the charge (plus the baselines), so the two columns differ by the charge alone."""
    from cpdispatch.campaign.spec import load_campaign
    from cpdispatch.reproduce.experiments import FULL

    def runs(name: str) -> list[dict[str, Any]]:
        (tmp_path / f"{name}.toml").write_text(campaigns(FULL)[name])
        return [{k: v for k, v in s.items() if k != "charge_dispatch_time"}
                for s in load_campaign(tmp_path / f"{name}.toml").runs]

    for busy, charged in (("eurora-cp-busy", "eurora-cp-charged"), ("kit-sim-busy", "kit-sim-charged")):
        cp_runs = [s for s in runs(busy) if s["dispatcher"]["label"].endswith("/paper")]
        assert {json.dumps(s, sort_keys=True) for s in cp_runs} == {json.dumps(s, sort_keys=True)
                                                                   for s in runs(charged)}, busy
        assert len(cp_runs) == len(runs(charged))


def test_at_contention_a_finding_against_the_recorded_schedule_compares_with_the_pbs_like_one() -> None:
    """The recorded schedule runs at its own load only: at the papers' contention the PBS it stands
    for is the PBS-like baseline."""
    check = {"measure": "direction", "lower": "eurora14-makespan", "higher": "recorded", "metric": "wait_mean",
             "predictor": "walltime"}
    finding = {"experiment": "eurora14", "check": check, "dispatchers": ["eurora14-makespan", "recorded"]}
    low = {"eurora14-makespan/paper": [1.0, 2.0, 3.0], "recorded/paper": [5.0, 6.0, 7.0]}  # Fake: CP-like label
    contended = {"eurora14-makespan/paper": [9.0, 9.5, 10.0], "pbs": [5.0, 6.0, 7.0]}
    res = ByExperiment({"eurora14": low, "eurora14-busy": contended}, {"eurora14": 1.0, "eurora14-busy": 9.0})
    paper = ev.evaluate(finding, res, "paper")
    assert paper.verdict == ev.REPRODUCED
    at_contention = ev.busy(finding, res, paper)
    assert at_contention is not None and at_contention.verdict == ev.NOT and "pbs" in at_contention.text
