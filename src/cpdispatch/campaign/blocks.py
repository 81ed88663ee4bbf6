"""Replicas of one history: a whole-trace run cut into blocks of submit time, paired across configurations.

A real trace is one history, so seeds give no replicas. Every configuration replays the same jobs;
cut by submit time into blocks (30 days by default), each block is the same set of jobs under every
configuration, so per-block means pair naturally, and the paired t interval over blocks
(`cpdispatch.stats`) says whether a difference is larger than month-to-month variation. Blocks of
one run are not fully independent (a backlog crosses a block's end); `autocorrelation` in the
table measures that (lag-1 correlation of the paired differences): near 0, blocks behave as
independent replicas. Block means weigh every block alike; the whole-trace means are printed beside.

Job classes: short (run < 1 h) or long, narrow (at most one node's worth of the first resource
type, e.g. a node's cores) or wide.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..dispatchers.builtin import is_cp
from ..metrics import SHORT_S, slowdowns
from ..stats import paired_difference
from ..system import load_system

BLOCK_DAYS = 30
CLASSES = ("short narrow", "short wide", "long narrow", "long wide")
CONFIG = ["workload", "dispatcher", "predictor"]
#: A `reference` that means, per workload, the configuration of a non-CP dispatcher with the lowest
#: whole-trace mean bounded slowdown: the best practical alternative, which differs by trace.
BEST_BASELINE = ("best", "baseline")


def _node_size(system: str) -> int:
    """The largest amount of the first resource type on one node of `system`."""
    return int(load_system(system).capacity[:, 0].max())


def job_table(jobs: pd.DataFrame, days: float = BLOCK_DAYS) -> pd.DataFrame:
    """Started jobs of a jobs.parquet frame with wait, bounded slowdown, block (of `days` days
    from the workload's first submission) and class."""
    done = jobs[jobs["start"].notna() & jobs["end"].notna()]
    submit = done["submit"].to_numpy(np.float64)
    wait = done["start"].to_numpy(np.float64) - submit
    run = done["end"].to_numpy(np.float64) - done["start"].to_numpy(np.float64)
    _, bsld = slowdowns(wait, run)
    first = done.groupby("workload", observed=True)["submit"].transform("min").to_numpy(np.float64)
    size = {s: _node_size(s) for s in done["system"].astype(str).unique()}
    node = done["system"].astype(str).map(size).to_numpy(np.float64)
    procs = done["units"].to_numpy(np.float64) * (done["req_core"].fillna(1).to_numpy(np.float64)
                                                   if "req_core" in done.columns else 1.0)
    cls = np.where(run < SHORT_S, 0, 2) + np.where(procs <= node, 0, 1)
    return pd.DataFrame({
        **{c: done[c].astype(str).to_numpy() for c in CONFIG},
        "block": ((submit - first) // (days * 86_400)).astype(np.int64),
        "class": pd.Categorical.from_codes(cls, list(CLASSES)), "wait": wait, "bsld": bsld,
    })


def summary_table(table: pd.DataFrame) -> pd.DataFrame:
    """Per configuration: jobs, whole-trace mean bounded slowdown and wait, and the mean bounded
    slowdown per class."""
    g = table.groupby(CONFIG, sort=False)
    out = pd.DataFrame({"jobs": g.size(), "bsld": g["bsld"].mean(), "wait": g["wait"].mean()})
    per_class = table.pivot_table(index=CONFIG, columns="class", values="bsld", aggfunc="mean", observed=False,
                                  sort=False)
    return out.join(per_class.rename(columns=lambda c: f"bsld {c}"))


def block_means(table: pd.DataFrame, metric: str = "bsld") -> pd.DataFrame:
    """Per configuration (rows) and block (columns): the mean of `metric` over the block's jobs."""
    return table.pivot_table(index=CONFIG, columns="block", values=metric, aggfunc="mean", sort=False)


def best_baselines(table: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """Per workload, the (dispatcher, predictor) of a non-CP dispatcher with the lowest whole-trace
    mean bounded slowdown."""
    summary = summary_table(table).reset_index()
    summary = summary[~summary["dispatcher"].map(is_cp)]
    best = summary.loc[summary.groupby("workload", sort=False)["bsld"].idxmin()]
    return {w: (d, p) for w, d, p in best[CONFIG].itertuples(index=False)}


def _resolve(reference: tuple[str, str], workload: str, best: dict[str, tuple[str, str]]) -> tuple[str, str]:
    if reference == BEST_BASELINE:
        return best.get(workload, reference)
    return reference


def paired_blocks(table: pd.DataFrame, reference: tuple[str, str], metric: str = "bsld") -> pd.DataFrame:
    """Per workload and configuration: the mean over blocks of (configuration - reference) in
    `metric`, its 95% paired t interval and p-value, the blocks paired and the lag-1
    autocorrelation of the differences. `reference` is (dispatcher, predictor), or
    `BEST_BASELINE`."""
    means = block_means(table, metric)
    best = best_baselines(table) if reference == BEST_BASELINE else {}
    rows = []
    for workload, per in means.groupby(level="workload", sort=False):
        key = (workload, *_resolve(reference, str(workload), best))
        if key not in per.index:
            continue
        ref = per.loc[key]
        for idx, values in per.iterrows():
            if idx == key:
                continue
            both = values.notna() & ref.notna()
            a, b = values[both].to_numpy(np.float64), ref[both].to_numpy(np.float64)
            e = paired_difference(a, b)
            d = a - b
            lag1 = float(np.corrcoef(d[:-1], d[1:])[0, 1]) if len(d) > 2 and d[:-1].std() and d[1:].std() else np.nan
            rows.append(dict(zip(CONFIG, idx, strict=True)) | {
                "blocks": e.n, "diff": e.mean, "low": e.low, "high": e.high, "p": e.p, "autocorrelation": lag1})
    return pd.DataFrame(rows)


def _cell(mean: float, low: float, high: float, p: float) -> str:
    sign = "**" if p < 0.05 else ""
    return f"{sign}{mean:+.1f}{sign} ({low:+.1f}, {high:+.1f})"


def markdown(table: pd.DataFrame, references: list[tuple[str, str]]) -> str:
    """Per workload: every configuration's whole-trace figures and per-class bounded slowdown,
    then its paired difference in mean bounded slowdown over blocks against each reference
    (bold: the 95% interval excludes 0)."""
    summary = summary_table(table)
    best = best_baselines(table) if BEST_BASELINE in references else {}
    pairs = {ref: paired_blocks(table, ref) for ref in references}
    pairs = {ref: p.set_index(CONFIG) if len(p) else p for ref, p in pairs.items()}
    lines = []
    for workload, part in summary.groupby(level="workload", sort=False):
        blocks = table.loc[table["workload"] == workload, "block"].nunique()
        lines += [f"### {workload} ({blocks} blocks)", ""]
        if workload in best:
            lines += ["Best baseline: {} with {}.".format(*best[workload]), ""]
        head = ["dispatcher", "predictor", "jobs", "mean bsld", "mean wait s", *CLASSES]
        head += [("vs best baseline" if ref == BEST_BASELINE else f"vs {ref[0]} {ref[1]}") + ": Δ bsld (95% CI)"
                 for ref in references]
        lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for idx, row in part.sort_values("bsld").iterrows():
            cells = [idx[1], idx[2], f"{int(row['jobs']):,}", f"{row['bsld']:.1f}", f"{row['wait']:,.0f}"]
            cells += [f"{row[f'bsld {c}']:.1f}" if pd.notna(row.get(f"bsld {c}")) else "–" for c in CLASSES]
            for ref in references:
                d = pairs[ref]
                if idx == (workload, *_resolve(ref, str(workload), best)):
                    cells.append("ref")
                else:  # "–": the reference did not run on this workload
                    cells.append(_cell(*d.loc[idx, ["diff", "low", "high", "p"]]) if idx in d.index else "–")
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)
