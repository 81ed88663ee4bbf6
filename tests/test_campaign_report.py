"""Campaign report: a campaign folder built by hand (cpd.simulate, no runner), the page checked for every
section and image, the figures' numbers read back and compared with the tables', the numbers checked on
hand-computed cases, and the page opened in headless Chromium."""

from __future__ import annotations

import base64
import html
import json
import os
import re
import shutil
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from scipy import stats as scipy_stats  # noqa: E402

import cpdispatch as cpd  # noqa: E402
from cpdispatch.campaign import frames  # noqa: E402
from cpdispatch.campaign.analysis import (  # noqa: E402
    MAX_ECDF,
    class_table,
    ecdf_points,
    paired_table,
    prediction_table,
    replica_table,
    run_timeline,
    window_mean,
)
from cpdispatch.campaign.drawing import auto_scale  # noqa: E402
from cpdispatch.campaign.html import num  # noqa: E402
from cpdispatch.campaign.report import CAMPAIGN_HEADINGS, SECTION_HEADINGS, write_report  # noqa: E402
from cpdispatch.errors import CpdispatchError  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"
SETTINGS = ["key", "workload", "system", "dispatcher", "dispatcher_name", "predictor", "load_factor", "replica"]
FIGURES = ["jobs", "completed", "killed", "rejected", "avg_wait", "sd_wait", "p50_wait", "p95_wait", "max_wait",
           "avg_slowdown", "sd_slowdown", "avg_bounded_slowdown", "sd_bounded_slowdown", "makespan",
           "dispatch_calls", "dispatch_ms_mean", "dispatch_ms_p50", "dispatch_ms_p99", "dispatch_ms_max",
           "sim_wall_s", "peak_rss_mb"]
FAILED_ERROR = 'RuntimeError: <b>solver</b> died & said "bye"'
CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
#: per section: headline, job classes, ECDFs, decision time, prediction; then the timeline and 2 ratio plots
SECTION_FIGURES = ("headline", "classes", "ecdf", "decision-time", "prediction")


# ---------------------------------------------------------------- a campaign folder, as the collector writes it


def settings(key: str, disp: str, pred: str, lf: float, rep: int, workload: str = "eurora-200") -> dict[str, Any]:
    return {"key": key, "workload": workload, "system": "eurora", "dispatcher": disp, "dispatcher_name": disp,
            "predictor": pred, "load_factor": lf, "replica": rep}


def run_row(s: dict[str, Any], summary: dict[str, Any], wall: float) -> dict[str, Any]:
    """runs.parquet's row of a done run (the contract: settings, status, figures, util_/capacity_ per type)."""
    row = {**s, "options": json.dumps(summary.get("options", {}), sort_keys=True), "status": "done", "error": ""}
    row.update({k: summary.get(k) for k in FIGURES})
    row["run_wall_s"] = wall
    row.update({f"util_{t}": u for t, u in summary["utilization"].items()})
    row.update({f"capacity_{t}": c for t, c in summary["capacity"].items()})
    return row


def failed_row(s: dict[str, Any], error: str) -> dict[str, Any]:
    return {**s, "options": "{}", "status": "failed", "error": error}


def job_rows(s: dict[str, Any], schedule: pd.DataFrame) -> pd.DataFrame:
    """jobs.parquet's rows of a run: its settings, then the schedule columns without `nodes`."""
    jobs = schedule.drop(columns=["nodes"], errors="ignore").copy()
    for i, k in enumerate(SETTINGS):
        jobs.insert(i, k, s[k])
    return jobs


def write_campaign(root: Path, runs: list[dict[str, Any]], jobs: list[pd.DataFrame]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(runs).to_parquet(root / "runs.parquet", index=False)
    pd.concat(jobs, ignore_index=True).to_parquet(root / "jobs.parquet", index=False)
    return root


def ratio_png(path: Path) -> None:
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1, 2], [1.0, 0.5, 0.2])
    fig.savefig(path, format="png")
    plt.close(fig)


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """easy, fifo x real, walltime x 2 replicas x load factors 2 and 10 (200 Eurora jobs), one failed run,
    and an instance comparison folder."""
    root = tmp_path_factory.mktemp("campaign")
    system = cpd.System.preset("eurora")
    runs, jobs = [], []
    for lf in (2.0, 10.0):
        for disp in ("easy", "fifo"):
            for pred in ("real", "walltime"):
                for k in (1, 2):
                    s = settings(f"{disp}-{pred}-lf{lf:g}-r{k}", disp, pred, lf, k)
                    t0 = time.perf_counter()
                    result = cpd.simulate(system, cpd.generate_eurora(200, seed=k), dispatcher=disp, predictor=pred,
                                          load_factor=lf, seed=k)
                    runs.append(run_row(s, result.summary, time.perf_counter() - t0))
                    jobs.append(job_rows(s, result.jobs))
    runs.append(failed_row(settings("pcp20-real-lf2-r1", "pcp20", "real", 2.0, 1), FAILED_ERROR))
    write_campaign(root, runs, jobs)
    (root / "compare").mkdir()
    (root / "compare" / "comparison_summary.txt").write_text("pcp20 vs pcp19: median variables ratio 0.08 <x>\n")
    for name in ("variables_ratio.png", "time_ratio.png"):
        ratio_png(root / "compare" / name)
    return root


@pytest.fixture(scope="module")
def built(campaign: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_report(campaign, tmp_path_factory.mktemp("report") / "out")


def images(page: str) -> list[str]:
    return re.findall(r"<img\b[^>]*>", page)


# ---------------------------------------------------------------- reading the page back


class PageReader(HTMLParser):
    """Tables by id (header texts, row cell texts) and the numbers of every figure's data-values."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, dict[str, list[Any]]] = {}
        self.figures: list[list[dict[str, Any]]] = []
        self._table: dict[str, list[Any]] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "figure" and a.get("data-values"):
            self.figures.append(json.loads(a["data-values"] or "[]"))
        elif tag == "table":
            self._table = {"headers": [], "rows": []}
            if a.get("id"):
                self.tables[str(a["id"])] = self._table
        elif tag == "tr" and self._table is not None:
            self._table["rows"].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._table is not None:
            text = "".join(self._cell).strip()
            (self._table["headers"] if tag == "th" else self._table["rows"][-1]).append(text)
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def read_page(page: str) -> tuple[dict[str, dict[str, list[Any]]], list[list[dict[str, Any]]]]:
    reader = PageReader()
    reader.feed(page)
    for t in reader.tables.values():
        t["rows"] = [r for r in t["rows"] if r]  # the header row
    return reader.tables, reader.figures


def split_cell(text: str) -> tuple[str, str | None, str | None]:
    """'1,234.50[1,000.00, 1,500.00] p=0.03' -> ('1,234.50', '1,000.00', '1,500.00'); 'x n=1' -> (x, None, None)."""
    m = re.fullmatch(r"(.+?)(?:\[(.+?), (.+?)\](?: p=\S+)?|n=\d+)?", text.strip())
    assert m, text
    return m.group(1).strip(), m.group(2), m.group(3)


def check_figures_against_tables(tables: dict[str, dict[str, list[Any]]], figures: list[list[dict[str, Any]]]
                                 ) -> int:
    """Every point a figure drew equals its table cell as shown (the report's own rounding); returns the
    number of points checked."""
    checked = 0
    for points in figures:
        for pt in points:
            t = tables[pt["table"]]
            col = t["headers"].index(pt["column"])
            rows = [r for r in t["rows"] if r[:len(pt["row"])] == pt["row"]]
            assert len(rows) == 1, (pt, t["rows"])
            mean, low, high = split_cell(rows[0][col])
            assert num(pt["mean"]) == mean, (pt, rows[0][col])
            if low is None:
                assert pt["low"] == pytest.approx(pt["mean"]) and pt["high"] == pytest.approx(pt["mean"])
            else:
                assert (num(pt["low"]), num(pt["high"])) == (low, high), (pt, rows[0][col])
            checked += 1
    return checked


# ---------------------------------------------------------------- the page


def test_report_has_every_section_and_figure(built: Path) -> None:
    page = built.read_text(encoding="utf-8")
    assert built.name == "index.html"
    for heading in (*SECTION_HEADINGS, *CAMPAIGN_HEADINGS):
        assert html.escape(heading) in page, heading
    for lf in ("2", "10"):  # one section per (workload, load factor), each with all its headings
        assert f"Workload eurora-200 at load factor {lf}</h2>" in page
    assert page.count(html.escape(SECTION_HEADINGS[0])) == 2
    assert "per dispatcher and predictor" not in page
    # self-contained: no script, no link to a file or the network
    assert "<script" not in page.lower()
    assert not re.search(r"""(src|href)=["'](?!data:|#)""", page)
    # the drawn replica: the reference's (easy, the first dispatcher) first run, with every dispatcher on it
    assert "(run easy-real-lf2-r1: easy), every dispatcher" in page
    assert "reference for paired differences: easy" in page


def test_every_image_is_an_inlined_png_and_every_figure_has_svg(built: Path) -> None:
    page = built.read_text(encoding="utf-8")
    tags = images(page)
    assert len(tags) == 2 * len(SECTION_FIGURES) + 1 + 2
    for tag in tags:
        m = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', tag)
        assert m and m.group(1), tag[:80]
        data = base64.b64decode(m.group(1), validate=True)
        assert data[:8] == PNG and len(data) > 1000
    pngs = sorted(built.parent.glob("*.png"))
    assert sorted(p.stem for p in pngs) == sorted(
        ["run-timeline", *(f"s{s:02d}-{f}" for s in (1, 2) for f in SECTION_FIGURES)])
    for png in pngs:
        svg = png.with_suffix(".svg")
        assert png.read_bytes()[:8] == PNG
        assert svg.is_file() and b"<svg" in svg.read_bytes()[:2000]
    assert not list(built.parent.glob(".*partial*"))


def test_figures_draw_the_numbers_of_their_tables(built: Path) -> None:
    tables, figures = read_page(built.read_text(encoding="utf-8"))
    # per section: 4 series x 3 metrics, 2 paired differences x 3 metrics, 4 series x 8 classes x 2 metrics
    assert check_figures_against_tables(tables, figures) == 2 * (12 + 6 + 64)
    assert {"s01-means", "s01-diffs", "s02-class-wait", "across-avg_wait"} <= set(tables)


def test_one_colour_per_dispatcher_throughout(built: Path) -> None:
    _, figures = read_page(built.read_text(encoding="utf-8"))
    colours: dict[str, set[str]] = {}
    for pt in (pt for points in figures for pt in points):
        dispatcher = pt["row"][0] if "-class-" not in pt["table"] else pt["column"].split(" / ")[0]
        colours.setdefault(dispatcher, set()).add(pt["colour"])
    assert set(colours) == {"easy", "fifo"}
    assert all(len(c) == 1 for c in colours.values()) and colours["easy"] != colours["fifo"], colours


def test_scale_shows_every_dispatcher() -> None:
    """fifo's mean wait of hours beside seconds: a log axis; with a zero among them: symmetric log; close
    values: linear."""
    for values, scale in (([11.0, 85.0, 5000.0], "log"), ([0.0, 11.0, 85.0, 5000.0], "symlog"),
                          ([-3.0, 2.0, 16000.0], "symlog"), ([1.0, 1.2, 1.8], "linear"), ([0.0, 3.0, 8.0], "linear")):
        fig, ax = plt.subplots()
        ax.plot(values, values)
        auto_scale(ax, np.array(values))
        assert ax.get_xscale() == scale, values
        if min(values) == 0 and scale == "symlog":  # linear below 10 (the smallest value), no negative decades
            assert ax.get_xlim()[0] == pytest.approx(-3.0)
        plt.close(fig)


def test_failed_runs_and_comparisons_are_escaped(built: Path) -> None:
    page = built.read_text(encoding="utf-8")
    assert html.escape(FAILED_ERROR) in page
    assert "<b>solver</b>" not in page
    assert "pcp20-real-lf2-r1" in page
    assert "median variables ratio 0.08 &lt;x&gt;" in page
    assert 'alt="compare/variables_ratio.png"' in page and 'alt="compare/time_ratio.png"' in page


def test_decision_table_holds_the_mean_over_replicas(built: Path, campaign: Path) -> None:
    runs = pd.read_parquet(campaign / "runs.parquet")
    sel = runs[(runs.dispatcher == "fifo") & (runs.predictor == "walltime") & (runs.load_factor == 10.0)]
    page = built.read_text(encoding="utf-8")
    section = page.split("Workload eurora-200 at load factor 10</h2>")[1]
    assert f"{sel.dispatch_ms_mean.mean():,.3f}" in section
    assert f"{sel.sim_wall_s.mean():,.2f}" in section


def test_table_across_workloads_and_paired_differences_match_the_runs(built: Path, campaign: Path) -> None:
    runs = pd.read_parquet(campaign / "runs.parquet")
    tables, _ = read_page(built.read_text(encoding="utf-8"))
    across = tables["across-avg_wait"]
    assert across["headers"] == ["workload", "load factor", "predictor", "easy", "fifo"]  # pcp20: no done run
    row = next(r for r in across["rows"] if r[:3] == ["eurora-200", "10", "walltime"])
    fifo = runs[(runs.dispatcher == "fifo") & (runs.predictor == "walltime") & (runs.load_factor == 10.0)]
    easy = runs[(runs.dispatcher == "easy") & (runs.predictor == "walltime") & (runs.load_factor == 10.0)]
    assert split_cell(row[4])[0] == num(fifo.avg_wait.mean())
    diffs = tables["s02-diffs"]
    cell = next(r for r in diffs["rows"] if r[:2] == ["fifo", "walltime"])[diffs["headers"].index("mean wait [s]")]
    d = fifo.sort_values("replica").avg_wait.to_numpy() - easy.sort_values("replica").avg_wait.to_numpy()
    low, high = scipy_stats.t.interval(0.95, 1, loc=d.mean(), scale=scipy_stats.sem(d))
    assert split_cell(cell) == (num(d.mean()), num(low), num(high))


# ---------------------------------------------------------------- numbers, by hand


def hand_runs(waits: tuple[float, ...] = (100.0, 200.0), fifo_waits: tuple[float, ...] = (50.0,)) -> pd.DataFrame:
    """easy/real: a replica per wait in `waits` (slowdown = wait / 50); fifo/real: one per `fifo_waits`."""
    rows = []
    for disp, ws in (("easy", waits), ("fifo", fifo_waits)):
        for rep, wait in enumerate(ws, 1):
            key = {("easy", 1): "a", ("easy", 2): "b", ("fifo", 1): "c"}.get((disp, rep), f"{disp}{rep}")
            summary = {k: 1.0 for k in FIGURES} | {"avg_wait": wait, "avg_slowdown": wait / 50,
                                                   "avg_bounded_slowdown": wait / 50,
                                                   "utilization": {"core": 0.5, "gpu": 0.1},
                                                   "capacity": {"core": 8, "gpu": 2}}
            rows.append(run_row(settings(key, disp, "real", 1.0, rep, "tiny"), summary, 0.1))
    return pd.DataFrame(rows)


def test_replica_table_mean_and_interval_by_hand() -> None:
    t = replica_table(frames_runs(hand_runs()), ["avg_wait", "avg_slowdown"])
    easy, fifo = t.loc[("easy", "real")], t.loc[("fifo", "real")]
    # mean 150; sd 70.71; half width t(0.975, 1) * sd / sqrt(2) = 12.7062 * 50 = 635.31, cut at 0 below
    assert easy["runs"] == 2 and easy["avg_wait_n"] == 2
    assert easy["avg_wait_mean"] == pytest.approx(150.0)
    assert easy["avg_wait_lo"] == 0.0
    assert easy["avg_wait_hi"] == pytest.approx(150.0 + 635.3102, abs=1e-3)
    assert easy["avg_slowdown_lo"] == 1.0  # 3 - 12.71: cut at the lowest slowdown
    assert easy["avg_slowdown_hi"] == pytest.approx(3.0 + 12.7062047 * 1.0, abs=1e-4)
    assert fifo["avg_wait_n"] == 1 and np.isnan(fifo["avg_wait_lo"])


def frames_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """A runs frame labelled as `load_runs` labels it (categoricals in order of appearance)."""
    out = runs.copy()
    for c in frames.ORDERED:
        out[c] = pd.Categorical(out[c], categories=list(dict.fromkeys(out[c])), ordered=True)
    out["section"] = 0
    return out


def test_paired_differences_by_hand() -> None:
    runs = frames_runs(hand_runs((100.0, 200.0, 300.0), (150.0, 260.0, 330.0)))
    t = paired_table(runs, ["avg_wait"], "easy")
    assert list(t.index) == [("fifo", "real")]  # the reference has no row
    fifo = t.loc[("fifo", "real")]
    # fifo - easy = 50, 60, 30: mean 46.67, sd 15.28, half width 4.3027 * 15.28 / sqrt(3) = 37.95
    assert fifo["pairs"] == 3 and fifo["avg_wait_mean"] == pytest.approx(46.6667, abs=1e-3)
    assert fifo["avg_wait_hi"] - fifo["avg_wait_mean"] == pytest.approx(37.946, abs=1e-3)
    assert fifo["avg_wait_p"] == pytest.approx(scipy_stats.ttest_rel([150, 260, 330], [100, 200, 300]).pvalue)


def hand_jobs() -> pd.DataFrame:
    """Six jobs of one run (runtime = end - start), one rejected; req_core and req_gpu per unit."""
    cols = ["job_id", "submit", "start", "end", "units", "req_core", "req_gpu", "walltime", "runtime", "predicted",
            "status"]
    nan = float("nan")
    rows = [
        ("1", 0, 100, 1100, 1, 1, 0, 2000, 1000, 900, "completed"),  # short narrow, wait 100, bsld 1.1
        ("2", 0, 0, 7200, 4, 2, 1, 9000, 7200, 7200, "completed"),  # medium wide GPU, wait 0, bsld 1
        ("3", 50, 3650, 3655, 1, 1, 0, 60, 5, 60, "completed"),  # short narrow, wait 3600, bsld 360.5
        ("4", 0, 3600, 23600, 2, 1, 0, 30000, 20000, 30000, "completed"),  # long wide, wait 3600, bsld 1.18
        ("5", 0, nan, nan, 1, 1, 0, 100, 50, nan, "rejected"),
        ("6", 0, 400, 4400, 1, 8, 0, 5000, 4000, 4000, "completed"),  # medium narrow, wait 400, bsld 1.1
    ]
    df = pd.DataFrame(rows, columns=cols)
    df["user"], df["reason"] = "u1", ""
    return df


def hand_campaign(root: Path, failed: bool = True) -> Path:
    runs = hand_runs()
    jobs = [job_rows(runs.iloc[0].to_dict(), hand_jobs())]
    extra = [failed_row(settings("z", "pcp20", "real", 1.0, 1, "tiny"), "boom")] if failed else []
    return write_campaign(root, [*runs.to_dict("records"), *extra], jobs)


def test_job_tables_by_hand(tmp_path: Path) -> None:
    root = hand_campaign(tmp_path / "c")
    runs = frames.load_runs(root)
    types = frames.accelerator_types(runs)
    assert types == ["gpu"]
    jm = frames.job_metrics(frames.load_jobs(root / "jobs.parquet", types), runs, types)
    assert len(jm) == 5  # the rejected job never started
    ct = class_table(jm, runs).set_index("class")
    assert list(ct.index) == ["GPU jobs", "CPU-only jobs", "short jobs (< 1 h)", "medium jobs (1–5 h)",
                              "long jobs (> 5 h)", "narrow jobs (1 unit)", "wide jobs (> 1 unit)"]
    expected = {"GPU jobs": (1, 0.0, 1.0), "CPU-only jobs": (4, 1925.0, 90.97),
                "short jobs (< 1 h)": (2, 1850.0, 180.8), "medium jobs (1–5 h)": (2, 200.0, 1.05),
                "long jobs (> 5 h)": (1, 3600.0, 1.18), "narrow jobs (1 unit)": (3, 4100 / 3, 362.7 / 3),
                "wide jobs (> 1 unit)": (2, 1800.0, 1.09)}
    for cls, (jobs, wait, bsld) in expected.items():
        row = ct.loc[cls]
        assert [row.jobs_mean, row.wait_mean, row.bsld_mean] == pytest.approx([jobs, wait, bsld]), cls
        assert row.wait_n == 1 and np.isnan(row.wait_lo)  # one replica: no interval
    pt = prediction_table(jm).set_index("predictor").loc["real"]
    assert [pt.jobs, pt.mae, pt.under, pt.over] == pytest.approx([5, 2031.0, 0.2, 0.4])


def test_hand_campaign_page_shows_the_hand_numbers(tmp_path: Path) -> None:
    index = write_report(hand_campaign(tmp_path / "c"), tmp_path / "r", run_key="a")
    page = index.read_text(encoding="utf-8")
    tables, figures = read_page(page)
    means = tables["s01-means"]
    easy = next(r for r in means["rows"] if r[0] == "easy")
    assert split_cell(easy[means["headers"].index("mean wait [s]")]) == ("150.00", "0.00", "785.31")
    fifo = next(r for r in means["rows"] if r[0] == "fifo")
    assert fifo[means["headers"].index("mean wait [s]")] == "50.00n=1"
    wait = tables["s01-class-wait"]
    assert wait["headers"] == ["job class", "jobs per replica", "easy"]  # only easy's run has jobs
    assert ["short jobs (< 1 h)", "2", "1,850.00n=1"] in wait["rows"]
    assert "<td>5</td><td>2,031.0</td><td>20.0 %</td><td>40.0 %</td>" in page
    assert check_figures_against_tables(tables, figures) > 0
    assert "(run a: easy), every dispatcher" in page and "boom" in page


def test_run_timeline_and_window_mean_by_hand() -> None:
    jobs = pd.DataFrame({"submit": [0, 5, 7], "start": [0, 10, np.nan], "end": [10, 20, np.nan],
                         "units": [2, 1, 1], "req_core": [1, 4, 1], "req_gpu": [0, 1, 0]})
    tl = run_timeline(jobs, {"core": 8, "gpu": 2, "mic": 4})
    assert tl["time"].tolist() == [0, 5, 10, 20]
    assert tl["running"].tolist() == [1, 1, 1, 0]
    assert tl["waiting"].tolist() == [0, 1, 0, 0]  # job 3 was rejected: never waiting
    assert tl["util_core"].tolist() == pytest.approx([0.25, 0.25, 0.5, 0.0])
    assert tl["util_gpu"].tolist() == pytest.approx([0.0, 0.0, 0.5, 0.0])
    assert "util_mic" not in tl  # no req_mic column in this run
    assert window_mean(tl, "util_core", 0, 10) == pytest.approx(0.25)
    assert window_mean(tl, "util_core", 0, 20) == pytest.approx(0.375)
    assert window_mean(tl, "waiting", 0, 7) == pytest.approx(2 / 7)


def test_ecdf_points_are_thinned_but_keep_the_ends() -> None:
    values = np.random.default_rng(1).exponential(100.0, size=500_000)
    x, y = ecdf_points(np.append(values, np.nan))
    assert x.size <= MAX_ECDF
    assert x[0] == values.min() and x[-1] == values.max() and y[-1] == 1.0
    assert np.all(np.diff(x) >= 0) and np.all(np.diff(y) > 0)
    assert ecdf_points(np.array([3.0, 1.0]))[0].tolist() == [1.0, 3.0]


def test_run_choice(tmp_path: Path) -> None:
    runs = frames.load_runs(hand_campaign(tmp_path / "c"))
    assert frames.choose_run(runs, None)["key"] == "a"  # first section, predictor and replica
    assert frames.choose_run(runs, None, "fifo")["key"] == "c"  # the reference's run
    assert list(frames.replica_runs(runs, frames.choose_run(runs, None))["key"]) == ["a", "c"]
    with pytest.raises(CpdispatchError, match="no such run"):
        frames.choose_run(runs, "nope")
    with pytest.raises(CpdispatchError, match="failed"):
        frames.choose_run(runs, "z")
    with pytest.raises(CpdispatchError, match="no runs.parquet"):
        write_report(tmp_path / "missing", tmp_path / "r")


def test_campaign_order_and_reference_come_from_the_campaign_files(tmp_path: Path) -> None:
    root = hand_campaign(tmp_path / "c", failed=False)
    runs_json = [{"workload": {"label": "tiny"}, "dispatcher": {"label": d}, "predictor": "real"}
                 for d in ("fifo", "easy")]
    (root / "campaign-runs.json").write_text(json.dumps({"name": "t", "source": "t.toml", "runs": runs_json}))
    (root / "campaign.toml").write_text('name = "t"\nreference = "easy"\n')
    runs = frames.load_runs(root)
    assert list(runs["dispatcher"].cat.categories) == ["fifo", "easy"]
    assert frames.reference_of(root, runs) == "easy"
    assert frames.reference_of(root, runs, "fifo") == "fifo"
    with pytest.raises(CpdispatchError, match="reference nope: no such dispatcher"):
        frames.reference_of(root, runs, "nope")
    page = write_report(root, tmp_path / "r").read_text(encoding="utf-8")
    tables, _ = read_page(page)
    assert tables["across-avg_wait"]["headers"][-2:] == ["fifo", "easy"]  # the campaign's order, not sorted
    assert "Paired difference to easy" in page
    # sections without data are left out: no comparison folder, no failed run
    for heading in CAMPAIGN_HEADINGS[3:]:
        assert html.escape(heading) not in page


def test_campaign_file_names_its_reference(tmp_path: Path) -> None:
    from cpdispatch.campaign.spec import load_campaign

    text = ('name = "t"\ndispatchers = ["fifo", "easy"]\n{ref}\n'
            '[[workloads]]\ngenerate = "eurora"\njobs = 10\nsystem = "eurora"\n')
    path = tmp_path / "t.toml"
    path.write_text(text.format(ref='reference = "easy"'))
    assert load_campaign(path).reference == "easy"
    path.write_text(text.format(ref=""))
    assert load_campaign(path).reference is None  # the report then compares with the first, fifo
    path.write_text(text.format(ref='reference = "pcp20"'))
    with pytest.raises(CpdispatchError, match="reference.*expected a dispatcher label \\(fifo, easy\\)"):
        load_campaign(path)


def test_campaign_where_every_run_failed(tmp_path: Path) -> None:
    """The collector then writes a jobs.parquet with the settings columns only, and no figure column in runs."""
    root = tmp_path / "c"
    root.mkdir()
    pd.DataFrame([failed_row(settings("k1", "pcp20", "real", 1.0, 1), "oops <1>")]).to_parquet(
        root / "runs.parquet", index=False)
    pd.DataFrame(columns=SETTINGS).to_parquet(root / "jobs.parquet", index=False)
    page = write_report(root, tmp_path / "r").read_text(encoding="utf-8")
    assert "No completed run in this section" in page and "oops &lt;1&gt;" in page
    assert "<img" not in page
    for heading in (*SECTION_HEADINGS, *CAMPAIGN_HEADINGS[1:4]):  # nothing to show: left out
        assert html.escape(heading) not in page, heading
    runs = pd.read_parquet(root / "runs.parquet")
    pd.concat([runs, runs]).to_parquet(root / "runs.parquet", index=False)
    with pytest.raises(CpdispatchError, match="more than once"):
        write_report(root, tmp_path / "r")


# ---------------------------------------------------------------- a real browser


@pytest.fixture(scope="session")
def chromium() -> tuple[str, str]:
    """Debian's chromium and chromedriver; installed once with apt-get when missing and we are root."""
    pytest.importorskip("selenium", reason="selenium is not installed (pip install selenium)")
    if not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
        apt = shutil.which("apt-get")
        if os.geteuid() != 0 or apt is None:
            pytest.skip(f"{CHROMIUM} or {CHROMEDRIVER} missing, and not root with apt-get to install them")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run([apt, "update", "-qq"], env=env, capture_output=True, timeout=600, check=False)  # fresh images
        done = subprocess.run([apt, "install", "-y", "chromium", "chromium-driver"], env=env, capture_output=True,
                              text=True, timeout=1200, check=False)
        if done.returncode != 0 or not (CHROMIUM.exists() and CHROMEDRIVER.exists()):
            pytest.skip(f"apt-get install chromium chromium-driver failed: {done.stderr.strip()[-300:]}")
    return str(CHROMIUM), str(CHROMEDRIVER)


READ_BACK = """
const tables = {};
document.querySelectorAll('table[id]').forEach(t => {
  tables[t.id] = {headers: [...t.tHead.rows[0].cells].map(c => c.textContent.trim()),
                  rows: [...t.tBodies[0].rows].map(r => [...r.cells].map(c => c.textContent.trim()))};
});
const figures = [...document.querySelectorAll('figure[data-values]')].map(f => JSON.parse(f.dataset.values));
return [tables, figures, document.documentElement.scrollHeight];
"""


def test_page_renders_in_headless_chromium(built: Path, chromium: tuple[str, str], tmp_path: Path) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium[0]
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,2400"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(chromium[1]), options=opts)
    try:
        driver.get(built.as_uri())
        state = driver.execute_script(
            "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.alt]);")
        assert len(state) == 2 * len(SECTION_FIGURES) + 1 + 2
        assert all(done and width > 0 for done, width, _ in state), state
        assert driver.title == "Campaign report"
        tables, figures, height = driver.execute_script(READ_BACK)
        assert check_figures_against_tables(tables, figures) == 2 * (12 + 6 + 64)
        assert height < 9000  # figures beside their tables: the one-column page of this campaign was 11,088 px
        severe = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        assert severe == []
        shot = tmp_path / "report.png"
        assert driver.save_screenshot(str(shot))
    finally:
        driver.quit()
    assert shot.stat().st_size > 1000 and shot.read_bytes()[:8] == PNG
