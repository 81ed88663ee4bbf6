"""`profile=paper`: it sets exactly what docs/paper-profile.md says, refuses what contradicts it,
and its decisions are the paper model's own (optimum = brute force, the model's placement)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cpdispatch.campaign.spec import load_campaign
from cpdispatch.dispatchers.base import make_dispatcher, registry
from cpdispatch.dispatchers.cp import objectives
from cpdispatch.dispatchers.cp.frontend import CpDispatcher
from cpdispatch.dispatchers.cp.profiles import free_options, paper_overrides
from cpdispatch.errors import CpdispatchError, InputError
from cpdispatch.system import NodeGroup, System

from .helpers import job, snapshot
from .test_pcp20 import brute_force, check_plan

DOC = Path(__file__).resolve().parent.parent / "docs" / "paper-profile.md"
ALL = "all"


def cp_classes() -> dict[str, type[CpDispatcher]]:
    return {n: c for n, c in registry().items() if issubclass(c, CpDispatcher)}


def documented() -> dict[str, dict[str, Any]]:
    """The page's table: dispatcher -> {option: value}, rows applied where the option exists."""
    classes = cp_classes()
    out: dict[str, dict[str, Any]] = {name: {} for name in classes}
    row = re.compile(r"^\| ([a-z0-9, ]+) \| `(\w+)` \| `([^`]+)` \|")
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = row.match(line)
        if not m:
            continue
        who, option, text = m.groups()
        names = list(classes) if who == ALL else [w.strip() for w in who.split(",")]
        for name in names:
            opts = {o.name: o for o in classes[name].options}
            if option in opts:
                out[name][option] = opts[option].parse(text)
    return out


def test_the_page_lists_the_profile_option_by_option() -> None:
    doc = documented()
    for name, cls in cp_classes().items():
        defaults = {o.name: o.default for o in cls.options}
        built = make_dispatcher(name, {"profile": "paper"})
        for option, default in defaults.items():
            if option in free_options(cls.options):
                continue
            expected = doc[name].get(option, default)
            assert getattr(built, option) == expected, (name, option)
        # every value the code changes is on the page, and the page claims nothing the code does not set
        assert {k: v for k, v in doc[name].items() if v != defaults[k]} == paper_overrides(cls.options), name


def test_the_default_profile_changes_nothing() -> None:
    for name, cls in cp_classes().items():
        built = make_dispatcher(name, {"profile": "default"})
        assert all(getattr(built, o.name) == o.default for o in cls.options), name


def test_free_options_stay_free_and_same_values_are_accepted() -> None:
    d = make_dispatcher("pcp20", {"profile": "paper", "seed": "3", "limit_scale": "0.1", "reductions": "false"})
    assert (d.seed, d.limit_scale, d.reductions) == (3, 0.1, False)  # type: ignore[attr-defined]
    e = make_dispatcher("eurora14", {"profile": "paper", "objective": "makespan"})  # the 2014 paper's factor
    assert (e.objective, e.layout) == ("makespan", "units")  # type: ignore[attr-defined]


@pytest.mark.parametrize(("options", "words"), [
    ({"profile": "papr"}, "profile must be one of default, paper"),
    ({"profile": "paper", "reductions": "true"}, "reductions=True conflicts with profile=paper"),
    ({"profile": "paper", "time_policy": "fast"}, "time_policy='fast' conflicts"),
    ({"limit_scale": "0.1"}, "limit_scale scales the papers' time policies"),
    ({"profile": "paper", "limit_scale": "0"}, "limit_scale must be > 0"),
])
def test_bad_profile_options_are_one_line_errors(options: dict[str, str], words: str) -> None:
    with pytest.raises(CpdispatchError) as exc:
        make_dispatcher("pcp20", options)
    assert words in str(exc.value) and "\n" not in str(exc.value)
    assert str(exc.value).startswith("dispatcher pcp20: ")


def test_an_alias_error_names_the_alias_the_user_typed() -> None:
    with pytest.raises(CpdispatchError, match=r"^dispatcher pcp19: option fastpath=True conflicts"):
        make_dispatcher("pcp19", {"profile": "paper", "fastpath": "true"})


def test_a_campaign_profile_reaches_the_cp_dispatchers_only(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('name = "c"\nprofile = "paper"\ndispatchers = ["pcp20", "easy", '
                    '{name = "hcp19", profile = "default"}]\n'
                    '[[workloads]]\ngenerate = "eurora"\njobs = 10\nsystem = "eurora"\n')
    runs = load_campaign(path).runs
    options = {r["dispatcher"]["label"]: r["dispatcher"]["options"] for r in runs}
    assert options == {"pcp20": {"profile": "paper"}, "easy": {}, "hcp19": {"profile": "default"}}
    path.write_text('name = "c"\ndispatchers = [{name = "pcp20", profile = "paper", options = {fastpath = true}}]\n'
                    '[[workloads]]\ngenerate = "eurora"\njobs = 10\nsystem = "eurora"\n')
    with pytest.raises(InputError, match="fastpath=True conflicts with profile=paper"):
        load_campaign(path)


# -- decisions: the paper model's own ---------------------------------------------------------------


def gpu_system() -> System:
    return System.build("t", [NodeGroup("g", 1, {"core": 4, "gpu": 2}), NodeGroup("c", 2, {"core": 2, "gpu": 0})])


def test_paper_pcp20_solves_what_our_default_takes_by_the_fast_path() -> None:
    snap = snapshot(gpu_system(), [(job("a", 90, 5, 1, (2, 1)), 5), (job("b", 95, 5, 2, (1, 0)), 5)])
    ours = make_dispatcher("pcp20").decide(snap)
    paper = make_dispatcher("pcp20", {"profile": "paper"}).decide(snap)
    assert ours.status == "fastpath"
    assert paper.status == "optimal" and paper.variables is not None
    assert {s.job_id for s in paper.starts} == {"a", "b"}


@pytest.mark.parametrize("name", ["pcp20", "pcp19"])
def test_a_paper_decision_reaches_the_brute_force_optimum_on_the_models_nodes(name: str) -> None:
    """Contended: 3 jobs fit now one at a time; the total-slowdown optimum decides which start."""
    sys_ = gpu_system()
    queued = [(job("wide", 40, 4, 3, (2, 0)), 4), (job("gpu", 60, 3, 1, (2, 2)), 3),
              (job("small", 99, 1, 2, (1, 0)), 1)]
    snap = snapshot(sys_, queued)
    disp = make_dispatcher(name, {"profile": "paper"})
    assert isinstance(disp, CpDispatcher)
    inst = disp.instance(snap, disp.select(snap, disp.order(snap)))
    built = disp.build(inst)
    decision = disp.decide(snap)
    assert decision.status == "optimal"
    assert decision.objective == brute_force(inst, "slowdown")
    # the enacted nodes are a valid placement, and the jobs started are those planned at 0
    planned = {j: t - snap.time for j, t in decision.plan.items()}
    starts = {s.job_id: 0 for s in decision.starts}
    full = {**planned, **starts}
    assert set(full) == {j.id for j in inst.jobs}
    assert objectives.objective("slowdown").value(inst, full) == decision.objective
    work = np.array(snap.free)
    for s in decision.starts:
        for k in s.nodes:
            work[k] -= np.asarray(next(j.req for j in inst.jobs if j.id == s.job_id))
    assert (work >= 0).all()
    assert built.variables is not None and built.variables > 0


def test_det_wall_cap_stops_a_deterministic_solve_and_says_so() -> None:
    """A cap far below what the solve needs stops it, and the decision's status says it was capped
    (such a decision is no longer machine-independent); without the cap the same solve is optimal."""
    queued = [(job("wide", 40, 4, 3, (2, 0)), 4), (job("gpu", 60, 3, 1, (2, 2)), 3),
              (job("small", 99, 1, 2, (1, 0)), 1)]
    snap = snapshot(gpu_system(), queued)
    free = make_dispatcher("pcp19", {"profile": "paper", "deterministic_time": "1"}).decide(snap)
    capped = make_dispatcher("pcp19", {"profile": "paper", "deterministic_time": "1", "det_wall_cap": "1e-9"})
    assert free.status == "optimal"
    assert capped.decide(snap).status.endswith(":capped")
    with pytest.raises(CpdispatchError, match="det_wall_cap must be >= 0"):
        make_dispatcher("pcp20", {"det_wall_cap": "-1"})


def test_paper_pcp20_enacts_the_models_placement() -> None:
    """Under our default, pcp20 re-places the jobs it starts by scarce fit; under the paper
    profile the model's own nodes run (here: the plan's extracted nodes, checked valid)."""
    sys_ = gpu_system()
    snap = snapshot(sys_, [(job("cpu", 90, 5, 1, (1, 0)), 5), (job("gpu", 95, 9, 1, (4, 2)), 9),
                           (job("late", 99, 5, 2, (2, 0)), 5)])
    disp = make_dispatcher("pcp20", {"profile": "paper"})
    assert isinstance(disp, CpDispatcher)
    inst = disp.instance(snap, disp.select(snap, disp.order(snap)))
    built = disp.build(inst)
    built.add_search()
    _, plan = disp.solve_once(built, None, 5.0, 0.0)
    assert plan is not None
    check_plan(inst, plan)
    decision = disp.decide(snap)
    enacted = {s.job_id: tuple(s.nodes) for s in decision.starts}
    assert enacted == {j: tuple(plan.nodes[j]) for j, s in plan.starts.items() if s == 0}
