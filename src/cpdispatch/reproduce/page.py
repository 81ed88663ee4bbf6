"""The reproduction page: one row per finding, grouped by paper, with the set-up that produced it."""

from __future__ import annotations

import datetime
from collections import Counter
from pathlib import Path

from ..campaign.spec import versions
from .evaluate import DIRECTION, NOT, NOT_CHECKED, NOT_RUN, REPRODUCED, Row
from .experiments import Scale, campaigns, instance_studies

PAPERS = ("PCP'20", "CP'19", "CP'14")
VERDICTS = (REPRODUCED, DIRECTION, NOT, NOT_RUN, NOT_CHECKED)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ") or "–"


def setup_text(scale: Scale) -> list[str]:
    v = versions()
    studies = ", ".join(f"`{s.id}` ({s.limit} instances on `{s.system}`)" for s in instance_studies(scale))
    return [
        f"Scale **{scale.name}** (`cpdispatch reproduce{' --quick' if scale.name == 'quick' else ''}`), "
        f"cpdispatch {v['cpdispatch']}, OR-Tools {v['ortools']}, written {datetime.date.today().isoformat()}.",
        "",
        f"- Campaigns: {', '.join(f'`{c}`' for c in campaigns(scale))}; Eurora-like workloads of "
        f"{scale.eurora_jobs:,} jobs at load factors {', '.join(f'{x:g}' for x in scale.eurora_loads)} over "
        f"{scale.seeds} seeds, predictors {', '.join(scale.predictors)}; ablation: {scale.ablation_jobs:,} jobs at "
        f"load 3 over {scale.ablation_seeds} seeds, predictors {', '.join(scale.ablation_predictors)}; the 2014 "
        f"study: {scale.seeds} slices of {scale.kth_jobs} KTH-SP2 jobs.",
        f"- Instance studies: {studies}.",
        f"- **Paper profile** (`profile=paper`, docs/paper-profile.md) with `deterministic_time={scale.det_time:g}`: "
        f"CP-SAT deterministic seconds stand for the paper's first 1-s limit (later limits scale alike), so "
        "these runs decide the same on any machine. **Our defaults**: the `fast` policy and every shortcut.",
        *(f"- **Note**: {n}." for n in scale.notes),
        "- Intervals: 95% Student-t over paired replicas (same seed, load and predictor); ratios are geometric "
        "means of paired ratios. `n` is the number of pairs.",
    ]


def write_page(rows: list[Row], scale: Scale, path: Path) -> Path:
    lines = ["# The papers reproduced, finding by finding", ""]
    lines += setup_text(scale)
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
    for paper in PAPERS:
        lines += ["", f"## {paper}", "",
                  "| finding | where | the paper | ours, paper profile | ours, our defaults | verdict (paper / ours) |",
                  "|---|---|---|---|---|---|"]
        for r in (r for r in rows if r.finding["paper"] == paper):
            f = r.finding
            lines.append(f"| `{f['id']}`: {_cell(f['statement'])} | {_cell(f['where'])} | {_cell(f['paper_value'])} "
                         f"| {_cell(r.paper.text)} | {_cell(r.ours.text)} | {r.paper.verdict} / {r.ours.verdict} |")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _counts(verdicts: list[str]) -> str:
    c = Counter(verdicts)
    return ", ".join(f"{c[v]} {v}" for v in VERDICTS if c[v])
