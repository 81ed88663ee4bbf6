"""Campaigns: dispatchers x predictors x workloads x load factors x replicas, one `cpd.simulate`
per run, as Dask tasks on one machine or a cluster; resumable, and collected into Parquet.

    cpdispatch campaign run CAMPAIGN.toml --out DIR [--workers N] [--scheduler ADDRESS]
    cpdispatch campaign status DIR
    cpdispatch campaign collect DIR
    cpdispatch report DIR --out REPORT_DIR
"""

from __future__ import annotations

import json
import shutil
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

from ..errors import CpdispatchError
from ..outputs_safety import replacing
from .collect import collect
from .runner import clean_partial, execute, failed_file, is_done, plan
from .spec import Campaign, load_campaign, run_key

CAMPAIGN_FILE = "campaign.toml"
RUNS_FILE = "campaign-runs.json"  # the campaign's runs, paths resolved (the copied TOML's relative paths are not)


def run_campaign(path: str | Path, out: str | Path, *, workers: int | None = None, scheduler: str | None = None,
                 retry_failed: bool = True, progress: bool | None = None, take_over: bool = False
                 ) -> dict[str, int]:
    """Run what is not complete yet; returns counts {total, skipped_done, done, failed, not_retried}.
    Interrupting it (Ctrl-C) loses only the runs in progress. A folder holding another campaign (or
    anything else) is refused before anything is written, unless `take_over` (`reproduce`, which reads
    only the runs of the campaign last run in a folder)."""
    campaign = load_campaign(path)
    root = Path(out)
    if not take_over:
        check_resumable(campaign, path, out)
    try:
        root.mkdir(parents=True, exist_ok=True)
        # the saved runs first: an interruption here leaves a campaign folder, never an anonymous one
        with replacing(root / RUNS_FILE) as tmp:
            tmp.write_text(json.dumps({"name": campaign.name, "source": str(path), "runs": campaign.runs}, indent=1))
        if not (root / CAMPAIGN_FILE).exists() or not (root / CAMPAIGN_FILE).samefile(path):
            shutil.copyfile(path, root / CAMPAIGN_FILE)  # for the record; `status` reads the resolved runs
        (root / "runs").mkdir(exist_ok=True)
    except OSError as exc:
        raise CpdispatchError(f"--out {out}: cannot write there ({exc.strerror})") from None
    clean_partial(root)
    todo, done_before, not_retried = plan(campaign, root, retry_failed)
    counts = {"total": len(campaign.runs), "skipped_done": done_before, "done": 0, "failed": 0,
              "not_retried": not_retried}
    print(f"campaign {campaign.name}: {len(campaign.runs)} runs, {done_before} complete, {len(todo)} to run"
          + (f", {not_retried} failed not retried" if not_retried else ""), flush=True)
    if todo:
        bar = _Bar(len(todo), progress)

        def on_result(outcome: dict[str, Any]) -> None:
            counts[outcome["status"]] += 1
            bar.update(counts, outcome)

        try:
            execute(todo, root, workers, scheduler, on_result)
        finally:
            bar.close()
    collect(root)
    return counts


def campaign_folder(out: str | Path) -> Path:
    """`out` if `campaign run` wrote it, else a one-line error: what status, collect and report
    read, and collect and report write into, must not be an empty, a demo's or a mistyped folder."""
    root = Path(out)
    if not root.exists():
        raise CpdispatchError(f"{out}: no such folder")
    if not root.is_dir():
        raise CpdispatchError(f"{out}: not a folder")
    if not (root / RUNS_FILE).is_file():
        raise CpdispatchError(f"{out}: not a campaign folder (no {RUNS_FILE}: run `campaign run` first)")
    return root


def check_resumable(campaign: Campaign, path: str | Path, out: str | Path) -> None:
    """A folder holds one campaign: running another into it would mix their runs in runs.parquet
    and leave `status` describing only the last. The same campaign (same name and runs, in any order
    and from any copy of its file) resumes; a new or empty folder starts."""
    root = Path(out)
    if not root.is_dir() or not any(root.iterdir()):
        return
    if (root / RUNS_FILE).is_file():
        try:
            saved = json.loads((root / RUNS_FILE).read_text())
            same = saved["name"] == campaign.name and _canonical(saved["runs"]) == _canonical(campaign.runs)
            theirs = f"'{saved['name']}', {len(saved['runs'])} runs, from {saved['source']}"
        except (OSError, ValueError, KeyError, TypeError):
            same, theirs = False, f"an unreadable {RUNS_FILE}"
    elif (root / CAMPAIGN_FILE).is_file():  # written before the runs were saved beside it
        same, theirs = _same_toml(root / CAMPAIGN_FILE, path), f"its {CAMPAIGN_FILE}"
    else:
        raise CpdispatchError(f"--out {out}: not empty and not a campaign folder: choose another --out (a new or "
                              "empty folder)")
    if not same:
        raise CpdispatchError(f"--out {out}: holds another campaign ({theirs}): choose another --out, remove "
                              "the folder, or run that campaign's file again to resume it")


def _canonical(runs: Any) -> list[str]:
    """Runs as sorted JSON texts: equal for the same runs whatever their order, tuples or lists."""
    return sorted(json.dumps(s, sort_keys=True) for s in runs)


def _same_toml(saved: Path, path: str | Path) -> bool:
    try:
        return bool(tomllib.loads(saved.read_text(encoding="utf-8")) == tomllib.loads(Path(path).read_text(
            encoding="utf-8")))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False


def status(out: str | Path) -> str:
    """Runs complete, failed (with the first errors) and missing, per dispatcher label."""
    root = campaign_folder(out)
    saved = json.loads((root / RUNS_FILE).read_text())
    campaign = Campaign(saved["name"], tuple(saved["runs"]), saved["source"])
    per: dict[str, list[int]] = {}
    errors: list[str] = []
    for s in campaign.runs:
        key = run_key(s)
        cell = per.setdefault(s["dispatcher"]["label"], [0, 0, 0])
        if is_done(root, key):
            cell[0] += 1
        elif failed_file(root, key).exists():
            cell[1] += 1
            errors.append(f"  {key} ({s['dispatcher']['label']}, {s['workload']['label']}): "
                          f"{json.loads(failed_file(root, key).read_text())['error']}")
        else:
            cell[2] += 1
    lines = [f"campaign {campaign.name}: {len(campaign.runs)} runs", f"{'dispatcher':<20} {'done':>6} "
             f"{'failed':>6} {'to run':>6}"]
    lines += [f"{label:<20} {c[0]:>6} {c[1]:>6} {c[2]:>6}" for label, c in per.items()]
    totals = [sum(c[i] for c in per.values()) for i in range(3)]
    lines.append(f"{'all':<20} {totals[0]:>6} {totals[1]:>6} {totals[2]:>6}")
    if errors:
        lines += ["failed runs:", *errors[:10]] + ([f"  ... and {len(errors) - 10} more"] if len(errors) > 10 else [])
    return "\n".join(lines)


class _Bar:
    """Runs done, running and failed, with an ETA (tqdm; only on a terminal unless asked)."""

    def __init__(self, total: int, enabled: bool | None) -> None:
        self.bar: Any = None
        self.t0 = time.perf_counter()
        if enabled or (enabled is None and sys.stderr.isatty()):
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="run", desc="campaign", file=sys.stderr)

    def update(self, counts: dict[str, int], outcome: dict[str, Any]) -> None:
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix_str(f"done {counts['done']}, running {outcome.get('running', 0)}, "
                                     f"failed {counts['failed']}")
        elif outcome["status"] == "failed":
            print(f"run {outcome['key']} failed: {outcome['error']}", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


__all__ = ["Campaign", "campaign_folder", "check_resumable", "collect", "load_campaign", "run_campaign",
           "status"]
