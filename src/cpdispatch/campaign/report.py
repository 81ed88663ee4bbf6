"""The campaign report: one self-contained `index.html` (plus each figure as PNG and SVG) rebuilt from
`runs.parquet` and `jobs.parquet` alone, so a report never needs the run folders.

It answers the campaign's question first: the headline metrics of every dispatcher across workloads,
as means over replicas with 95% intervals. Then, per (workload, load factor): the means and the paired
differences to a reference dispatcher (the campaign's `reference`, default its first dispatcher), the
job classes, the distributions, the decision times (PCP'20 Tables 1-2) and the prediction error (CP'19
Figure 1); then the utilisation and queue over time of every dispatcher on one replica, the instance
comparisons (PCP'20 Figures 6-7) and the failed runs, each only when there is something to show.

The numbers come from `analysis` (pandas), the figures from `figures`, the HTML from `html` and
`sections`; dispatchers keep the campaign's order and one colour throughout.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..outputs_safety import replacing
from .analysis import HEADLINE, run_timeline, window_mean
from .drawing import emit, palette
from .figures import timeline_figure
from .frames import (
    accelerator_types,
    choose_run,
    job_metrics,
    load_jobs,
    load_runs,
    reference_of,
    replica_jobs,
    replica_runs,
)
from .html import e, figure, grid, h, num, p, page, table
from .sections import SECTION_HEADINGS, Context, across_workloads, section, section_title

#: The headings of the whole campaign's parts (all but the first only when they have data).
CAMPAIGN_HEADINGS = ("Campaign report", "Across workloads",
                     "Utilisation and queue over time, every dispatcher on one replica (2014 paper, Figures 1–6)",
                     "Instance comparisons (PCP'20 Figures 6–7)", "Failed runs")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def write_report(campaign_dir: str | Path, out_dir: str | Path, run_key: str | None = None,
                 reference: str | None = None) -> Path:
    """Write out_dir/index.html (self-contained) and every figure as PNG and SVG; return the index path.

    `run_key`: a run whose replica is drawn over time (every dispatcher of it; default: the reference's
    first run); `reference`: the dispatcher label the others are compared with (default: the campaign
    file's `reference`, else its first dispatcher)."""
    src, out = Path(campaign_dir), Path(out_dir)
    runs = load_runs(src)
    ref = reference_of(src, runs, reference)
    chosen = choose_run(runs, run_key, ref)  # a wrong key fails before any figure is drawn
    types = accelerator_types(runs)
    jm = job_metrics(load_jobs(src / "jobs.parquet", types), runs, types)
    out.mkdir(parents=True, exist_ok=True)
    ctx = Context(out, palette(list(runs["dispatcher"].cat.categories)), ref)
    one = runs["section"].nunique() == 1  # then no copy of a table of millions of jobs
    sections = [section(int(sec), sruns, jm if one else jm[jm["section"] == sec], ctx)
                for sec, sruns in runs.groupby("section", sort=True)]
    tail = [_timeline(src, runs, chosen, ctx), _comparisons(src), _failed(runs)]
    body = [_overview(src, runs, ref, tail), _across(runs), *sections, *tail]
    index = out / "index.html"
    with replacing(index) as tmp:
        tmp.write_text(page(CAMPAIGN_HEADINGS[0], body), encoding="utf-8")
    return index


def _overview(src: Path, runs: pd.DataFrame, ref: str | None, tail: list[str]) -> str:
    """Title, run counts, the reference and in-page links to the sections and the parts with data."""
    done = int((runs["status"] == "done").sum())
    links = [(f"s{int(sec) + 1:02d}", section_title(g.iloc[0])) for sec, g in runs.groupby("section", sort=True)]
    links = [("across", CAMPAIGN_HEADINGS[1])] * bool(done) + links
    links += [(ident, CAMPAIGN_HEADINGS[i]) for i, ident in ((2, "timeline"), (3, "comparisons"), (4, "failed"))
              if tail[i - 2]]
    items = "".join(f'<li><a href="#{i}">{e(t)}</a></li>' for i, t in links)
    names = ", ".join(map(str, runs["dispatcher"].cat.categories))
    text = (f"Campaign folder {src}: {len(runs)} runs, {done} done, {len(runs) - done} failed. Dispatchers in the "
            f"campaign's order: {names}" + (f"; reference for paired differences: {ref}." if ref else "."))
    return h(1, CAMPAIGN_HEADINGS[0]) + p(text) + (f"<nav><ul>{items}</ul></nav>\n" if items else "")


def _across(runs: pd.DataFrame) -> str:
    """The headline metrics of every workload and load side by side."""
    blocks = [across_workloads(runs, m, label, f"across-{m}") for m, label, _ in HEADLINE]
    if not any(blocks):
        return ""
    return h(2, CAMPAIGN_HEADINGS[1], "across") + grid(*blocks)


def _timeline(src: Path, runs: pd.DataFrame, chosen: pd.Series | None, ctx: Context) -> str:
    """The 2014 paper's Figures 1-6 for one replica: utilisation per type and waiting jobs, a line per
    dispatcher, with each one's utilisation over the submit window."""
    if chosen is None:
        return ""
    group = replica_runs(runs, chosen)
    capacity = {c.removeprefix("capacity_"): float(chosen[c]) for c in runs.columns
                if c.startswith("capacity_") and pd.notna(chosen[c]) and chosen[c] > 0}
    jobs = replica_jobs(src / "jobs.parquet", [str(k) for k in group["key"]], capacity)
    if jobs["start"].notna().sum() == 0:
        return ""
    t0, t1 = float(jobs["submit"].min()), float(jobs[["submit", "end"]].max().max())
    last_submit = float(jobs["submit"].max())
    lines, rows = [], []
    for r in group.itertuples(index=False):
        tl = run_timeline(jobs[jobs["key"] == r.key], capacity)
        lines.append((str(r.dispatcher), tl))
        rows.append([str(r.dispatcher), str(r.key), num((float(r.makespan) if pd.notna(r.makespan) else None), 0),
                     *(num(100 * window_mean(tl, f"util_{t}", t0, last_submit), 1) for t in capacity),
                     num(window_mean(tl, "waiting", t0, last_submit), 1)])
    types = [t for t in capacity if any(f"util_{t}" in tl.columns for _, tl in lines)]
    png = emit(timeline_figure(lines, ctx.colours, (t0, last_submit, t1), types), ctx.out, "run-timeline")
    what = (f"Workload {chosen['workload']} at load factor {float(chosen['load_factor']):g}, predictor "
            f"{chosen['predictor']}, replica {chosen['replica']} (run {chosen['key']}: {chosen['dispatcher']}), "
            f"every dispatcher's run of it.")
    caption = ("Share of each resource type's capacity in use and waiting jobs, time-weighted means over at "
               "most 600 bins.")
    heads = ["dispatcher", "run", "makespan [s]", *(f"{t} in use [%]" for t in capacity), "waiting jobs"]
    return (h(2, CAMPAIGN_HEADINGS[2], "timeline") + p(what) + figure(png, "run-timeline", caption)
            + p("Over the submit window (first to last submission: the drain after it does not dilute "
                "the means):") + table(heads, rows, left=2))


def _comparisons(src: Path) -> str:
    """Instance comparisons (`cpdispatch compare`): their summary text and ratio plots, inlined."""
    found = sorted(src.rglob("comparison_summary.txt"))
    if not found:
        return ""
    parts = [h(2, CAMPAIGN_HEADINGS[3], "comparisons")]
    for path in found:
        where = path.parent.relative_to(src)
        blocks = [f"<pre>{e(path.read_text(errors='replace'))}</pre>\n"]
        for name, what in (("variables_ratio.png", "decision variables"), ("time_ratio.png", "dispatching time")):
            png = path.parent / name
            if png.is_file() and png.read_bytes()[:8] == PNG_MAGIC:
                blocks.append(figure(png.read_bytes(), f"{where}/{name}", f"Ratio of {what} per instance ({name})."))
        parts.append(h(3, str(where)) + grid(*blocks))
    return "".join(parts)


def _failed(runs: pd.DataFrame) -> str:
    """Failed runs with settings and error, so that missing points are explained."""
    bad = runs[runs["status"] != "done"]
    if bad.empty:
        return ""
    cols = ["key", "workload", "system", "dispatcher", "predictor", "load_factor", "replica", "status", "error"]
    rows = [[str(v) for v in r] for r in bad[cols].itertuples(index=False)]
    return h(2, CAMPAIGN_HEADINGS[4], "failed") + table(cols, rows, left=len(cols), cls="failed")


__all__ = ["CAMPAIGN_HEADINGS", "SECTION_HEADINGS", "choose_run", "load_runs", "write_report"]
