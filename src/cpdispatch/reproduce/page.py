"""The reproduction page: one row per finding, grouped by paper, with the set-up that produced it."""

from __future__ import annotations

import datetime
from collections import Counter
from pathlib import Path
from typing import Any

from ..campaign.spec import versions
from .evaluate import DIRECTION, NOT, NOT_CHECKED, NOT_RUN, REPRODUCED, Results, Row
from .experiments import (
    ABLATION_ATTRIBUTION,
    BUSY_TARGET,
    DIFFERENCES,
    WALL_SCALE,
    Scale,
    campaigns,
    instance_studies,
)
from .results import ALREADY_BUSY

PAPERS = ("PCP'20", "CP'19", "CP'14")
VERDICTS = (REPRODUCED, DIRECTION, NOT, NOT_RUN, NOT_CHECKED)
MODEL = ("optimal", "feasible")
STATUS_TABLES = (("eurora-cp", "Eurora-like study"), ("kit-sim", "CEA-Curie jobs on the KIT shape"),
                 ("ablation", "CP'19 ablation"), ("ablation-base", "PCP base beside PCP1"))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ") or "–"


def setup_text(scale: Scale) -> list[str]:
    v = versions()
    studies = ", ".join(f"`{s.id}` ({s.limit} instances on `{s.system}`, recorded from {s.recorder}'s run of "
                        + (f"{s.workload['jobs']:,} generated jobs" if "generate" in s.workload else
                           f"{Path(s.workload['path']).name.split('-')[0]} jobs after the first "
                           f"{s.workload['skip']:,} ({s.workload['limit']:,} jobs)")
                        + f" at load {s.load_factor:g})" for s in instance_studies(scale))
    return [
        f"Scale **{scale.name}** (`cpdispatch reproduce{' --quick' if scale.name == 'quick' else ''}`), "
        f"cpdispatch {v['cpdispatch']}, OR-Tools {v['ortools']}, written {datetime.date.today().isoformat()}.",
        "",
        f"- Campaigns: {', '.join(f'`{c}`' for c in campaigns(scale))}; Eurora-like workloads of "
        f"{scale.eurora_jobs:,} jobs at load factors {', '.join(f'{x:g}' for x in scale.eurora_loads)} over "
        f"{scale.seeds} seeds, predictors {', '.join(scale.predictors)}; ablation: KTH-SP2 jobs "
        f"{scale.ablation_skip + 1:,}-{scale.ablation_skip + scale.ablation_jobs:,} in {scale.ablation_seeds} replicas "
        f"(submit times jittered by ±60 s), "
        f"predictors {', '.join(scale.ablation_predictors)}, `deterministic_time={scale.ablation_det_time:g}` and "
        f"`det_wall_cap={scale.ablation_wall_cap:g}` (the status suffix `:capped` counts the decisions it stopped); "
        f"PCP base (`ablation-base`, beside PCP1) in {scale.base_seeds} replicas with the wall-time predictor only "
        "(its one finding); the 2014 study: "
        f"{scale.kth_slices} slices of {scale.kth_jobs} KTH-SP2 jobs.",
        f"- KIT simulation (`kit-sim`, Table 1 and Fig. 4): {scale.kit_sim_jobs} CEA-Curie jobs after the first "
        f"200,000 on `kit-forhlr2` at load 1 in {scale.seeds} replicas (submit times jittered by ±60 s), predictors "
        "last2, real (the paper's L2 and R); KIT's trace is not public and RICC's jobs leave that system idle.",
        *([f"- At the papers' contention (column *at contention*; paper profile and baselines, "
           f"{scale.variant_seeds} replicas): each study's workload calibrated so that its baseline waits about "
           f"as long as Eurora's PBS on BATCH1 ({BUSY_TARGET:,.0f} s, CP'14 Table 4, the papers' only printed "
           f"wait; `benchmarks/calibrate_contention.py`): `eurora-cp-busy`, the generated jobs "
           f"{scale.eurora_busy_factor:g} times longer (no load queues 1,000 of them as long), `kit-sim-busy`, "
           f"CEA-Curie's jobs after the first {scale.kit_busy_skip:,} at load "
           f"{scale.kit_busy_load:g}, `eurora14-busy`, the 2014 study's slices at load {scale.eurora14_busy_load:g} "
           "(without the recorded schedule, which runs at one load only: its findings against the recorded PBS "
           "compare with the PBS-like one there); the ablation's slice already is that "
           f"contended. The PCP'20 and KIT studies' runs there have the papers' wall-time limits at {WALL_SCALE:g} "
           "of their seconds (`limit_scale`, machine-dependent), as the charged runs below, whose uncharged twins "
           "they are: under deterministic limits PCP'19's paper policy costs about a second per decision on "
           "these queues (docs/reproduction-time.md); the 2014 study keeps them.",
           f"- Runs for the causes only: `ablation-attribution`, PCP3 on the ablation's slice under the paper "
           f"profile with one of our differences at a time "
           f"({', '.join(f'`{k}`' for k in ABLATION_ATTRIBUTION[1])})."]
          if scale.causes else []),
        "- Beyond the papers (the experiment PCP'20's conclusion asks for): `eurora-cp-charged` and "
        "`kit-sim-charged`, the two studies' workloads"
        + (" at the papers' contention (above)" if scale.causes else "") + " under the paper profile only, each "
        f"decision's wall time added to the waits (`charge_dispatch_time`), with the papers' wall-time limits at "
        f"{WALL_SCALE:g} of their seconds (`limit_scale`): machine-dependent by design.",
        f"- Instance studies: {studies}.",
        f"- **Paper profile** (`profile=paper`, docs/paper-profile.md) with `deterministic_time={scale.det_time:g}`: "
        "CP-SAT deterministic seconds stand for one second of the paper's limits (every limit scales alike), "
        "so these runs decide the same on any machine (their times still vary). **Our defaults**: the `fast` "
        "policy and every shortcut.",
        *(f"- **Note**: {n}." for n in scale.notes),
        "- Intervals: 95% Student-t over paired replicas (same seed, load and predictor); ratios are geometric "
        "means of paired ratios. `n` is the number of pairs.",
    ]


#: the papers' headline findings, shown first (the rest follow per paper)
HEADLINES = (
    "pcp20-fig6-variable-ratio-below-0.1", "pcp20-fig7-time-ratio-range", "pcp20-sec52-eurora-time-ordering",
    "pcp20-table2-ratio-hcp19-pcp20-time-d", "pcp20-table2-ratio-hcp19-pcp20-time-r",
    "pcp20-sec51-pcp19-kit-blocks", "pcp20-table1-ratio-pcp20-hcp19-time-l2",
    "pcp20-fig4-kit-wait-hcp19-slightly-better", "pcp20-fig5-eurora-slowdown-comparable",
    "pcp20-fig5-eurora-slowdown-better-than-pbs", "cp19-fig2-pcp1r-pcp3r-slowdown-58pct",
    "cp19-fig2-pcp3d-slowdown-37pct", "cp19-fig3-hcp1w-beats-hcp-slowdown", "cp19-fig2-pcp3-beats-pbs-slowdown",
    "cp19-table2-pcp-crash",
    "cp14-table4-all-models-beat-pbs", "cp14-table5-best-20pct-over-pbs",
)


def finding_rows(rows: list[Row]) -> list[str]:
    out = ["| finding | where | the paper | ours, paper profile | ours, paper profile at the papers' contention "
           "| ours, our defaults | verdict (paper / at contention / ours) | cause, where not reproduced |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        f = r.finding
        busy, busy_verdict = ("–", "–") if r.busy is None else (_cell(r.busy.text), r.busy.verdict)
        if f["experiment"] in ALREADY_BUSY and r.busy is not None:
            busy = "the same runs (already as contended)"
        out.append(f"| `{f['id']}`: {_cell(f['statement'])} | {_cell(f['where'])} | {_cell(f['paper_value'])} "
                   f"| {_cell(r.paper.text)} | {busy} | {_cell(r.ours.text)} "
                   f"| {r.paper.verdict} / {busy_verdict} / {r.ours.verdict} | {_cell(r.cause)} |")
    return out


def status_table(res: Results, experiment: str, title: str) -> list[str]:
    """How the decisions of one experiment were taken, per dispatcher set-up: the share of calls
    decided by the model (optimal, feasible) and by each shortcut."""
    shares: dict[str, Counter[str]] = {}
    for r in res.runs.get(experiment, []):
        shares.setdefault(r["label"], Counter()).update(r["summary"].get("decision_status", {}))
    if not shares:
        return []
    kinds = sorted({k for c in shares.values() for k in c}, key=lambda k: (k.split(":")[0] not in MODEL, k))
    lines = ["", f"## How the decisions were taken ({title}, all runs)", "",
             "Share of dispatcher calls by decision status: `optimal`/`feasible` are the model's own "
             "decisions; `unsolved` started nothing (the papers' behaviour when no plan is found in time); "
             "`fastpath`, `greedy...` (the greedy plan, no solve) and `fallback...` (the greedy plan, the solver "
             "found nothing better) are our shortcuts; `none`: no plan at all; `empty`: nothing fits now; "
             "`:capped`: a solve stopped by `det_wall_cap`.", "",
             "| set-up | calls | " + " | ".join(kinds) + " |", "|---|---|" + "---|" * len(kinds)]
    for name in sorted(shares):
        c = shares[name]
        total = sum(c.values())
        lines.append(f"| {name} | {total:,} | " + " | ".join(f"{c[k] / total:.1%}" if c[k] else "–" for k in kinds)
                     + " |")
    return lines


def time_tables(res: Results) -> list[str]:
    """Decision times of each dispatcher on the same recorded instances (per study and set-up)."""
    lines: list[str] = []
    for study in ("instances", "kit-large", "curie-large"):
        for profile in ("paper", "ours"):
            stats = res.study(study, profile)
            if not stats:
                continue
            if not lines:
                lines = ["", "## Decision times on the same recorded instances", "",
                         "Wall milliseconds per instance, model building included, on this machine "
                         "(one core, other work running); `unsolved`: the solve found no plan in time.", "",
                         "| study | set-up | dispatcher | instances (with a model) | mean ms | p50 ms | p99 ms | "
                         "unsolved | mean variables |", "|---|---|---|---|---|---|---|---|---|"]
            for s in stats:
                lines.append(f"| {study} | {profile} | {s['dispatcher']} | {s['instances']} ({s['with_model']}) | "
                             f"{s['solve_ms_mean']:.1f} | {s['solve_ms_p50']:.1f} | {s['solve_ms_p99']:.1f} | "
                             f"{s['statuses'].get('unsolved', 0)} | {_num(s['variables_mean'])} |")
    return lines


def attribution_table(res: Results) -> list[str]:
    """Figs. 6-7's statistics under the paper profile, under it with one difference at our default,
    and under our defaults: which of our differences moves each finding."""
    lines: list[str] = []
    for study in ("instances", "kit-large"):
        setups = ["paper", *(f"paper-but-{k}" for k in DIFFERENCES), "ours"]
        found: list[tuple[str, list[dict[str, Any]]]] = []
        for name in setups:
            stats = res.study(study, name)
            if stats:
                found.append((name, stats))
        if len(found) < 3:
            continue
        note = " (the KIT replays leave PCP'19 out: 10 s per instance)" if study == "kit-large" else ""
        lines += ["", f"## Which difference moves the per-instance findings ({study}{note})", "",
                  "Each row replays the same instances; `paper-but-X` is the paper profile with option X at our "
                  "default (`free_now`: at `false`, the node capacities over which the paper's text counts "
                  "PCP'19's unit intervals, where its runs used the free amounts), so it changes only that. "
                  "Ratios are PCP'20 over PCP'19 on the instances where both built a model; times are wall "
                  "milliseconds on a shared machine, so small differences in the time ratio are noise.", "",
                  "| set-up | instances compared | variables ratio median | share < 0.1 | time ratio median | "
                  "share in [0.01, 1] | pcp20 / pcp19 / hcp19 mean ms | unsolved (pcp20 / pcp19) |",
                  "|---|---|---|---|---|---|---|---|"]
        for name, stats in found:
            by = {s["dispatcher"]: s for s in stats}
            a = by.get("pcp20", {}) if "pcp19" in by else {}  # its ratios are over the second dispatcher
            ms = " / ".join(f"{by[d]['solve_ms_mean']:.1f}" if d in by else "–" for d in ("pcp20", "pcp19", "hcp19"))
            uns = " / ".join(str(by[d]["statuses"].get("unsolved", 0)) if d in by else "–" for d in ("pcp20", "pcp19"))
            lines.append(f"| {name} | {a.get('ratio_instances', 0)} | {_num(a.get('variables_ratio_median'))} | "
                         f"{_num(a.get('variables_ratio_below_0.1'))} | {_num(a.get('time_ratio_median'))} | "
                         f"{_num(a.get('time_ratio_0.01_to_1'))} | {ms} | {uns} |")
    return lines


def _num(x: object) -> str:
    return f"{x:.3g}" if isinstance(x, int | float) and x == x else "–"


def contention(res: Results) -> list[str]:
    """How contended each simulation's workload is: the mean job wait of each set-up, over its runs
    (allocation and scheduling can matter only where jobs wait)."""
    parts = []
    for name, runs in res.runs.items():
        waits: dict[str, list[float]] = {}
        for r in runs:
            waits.setdefault(r["label"], []).append(float(r["summary"].get("avg_wait") or 0.0))
        means = (f"{label} {sum(w) / len(w):,.0f} s" for label, w in sorted(waits.items()))
        parts.append(f"`{name}` " + ", ".join(means))
    return [f"- Mean job wait per set-up (how contended each workload is): {'; '.join(parts)}."] if parts else []


def completeness(res: Results, scale: Scale) -> list[str]:
    """What the page rests on: complete runs per campaign, studies replayed (an interrupted
    reproduction still writes its page; rerunning the command completes it)."""
    parts = [f"`{name}` {len(runs)} of {res.planned[name]} runs" for name, runs in res.runs.items()]
    for study in instance_studies(scale):
        done = res.study(study.id, "paper") is not None
        parts.append(f"`{study.id}` {'replayed' if done else 'not run'}")
    return [f"- Complete when this page was written: {'; '.join(parts)}."]


def write_page(rows: list[Row], scale: Scale, path: Path, res: Results | None = None) -> Path:
    lines = ["# The papers reproduced, finding by finding", ""]
    lines += setup_text(scale)
    if res is not None:
        lines += completeness(res, scale) + contention(res)
    lines += ["", "Verdicts (column *paper profile*, then *our defaults*): " + ", ".join(VERDICTS) + ". "
              "*reproduced*: a ratio or value within the 95% interval or within 25% of the paper's, a direction or "
              "ordering significant at 95%, a level claim whose interval lies within its tolerance; *direction "
              "reproduced*: the paper's side or order without that; *not run*: the experiment has no result for "
              "it; *not checked*: a simulation cannot check it (the reason is given).", ""]
    lines += ["| paper | verdicts under the paper profile | under our defaults |", "|---|---|---|"]
    for paper in PAPERS:
        mine = [r for r in rows if r.finding["paper"] == paper]
        lines.append(f"| {paper} | {_counts([r.paper.verdict for r in mine])} | "
                     f"{_counts([r.ours.verdict for r in mine])} |")
    heads = [r for h in HEADLINES for r in rows if r.finding["id"] == h]
    if heads:
        lines += ["", "## Headline findings", ""] + finding_rows(heads)
    if res is not None:
        for experiment, title in STATUS_TABLES:
            lines += status_table(res, experiment, title)
        lines += time_tables(res) + attribution_table(res)
    for paper in PAPERS:
        lines += ["", f"## {paper}", ""] + finding_rows([r for r in rows if r.finding["paper"] == paper])
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _counts(verdicts: list[str]) -> str:
    c = Counter(verdicts)
    return ", ".join(f"{c[v]} {v}" for v in VERDICTS if c[v])
