"""Campaign report: a campaign folder built by hand (cpd.simulate, no runner), the page checked for every
section and image, the numbers checked on hand-computed cases, and the page opened in headless Chromium."""

from __future__ import annotations

import base64
import html
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

import cpdispatch as cpd  # noqa: E402
from cpdispatch.campaign import report  # noqa: E402
from cpdispatch.campaign.report import (  # noqa: E402
    CAMPAIGN_HEADINGS,
    SECTION_HEADINGS,
    class_table,
    duration_slowdown,
    ecdf_points,
    job_metrics,
    prediction_table,
    replica_table,
    run_timeline,
    t_quantile,
    write_report,
)
from cpdispatch.errors import CpdispatchError  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"
SETTINGS = ["key", "workload", "system", "dispatcher", "dispatcher_name", "predictor", "load_factor", "replica"]
FIGURES = ["jobs", "completed", "killed", "rejected", "avg_wait", "sd_wait", "p50_wait", "p95_wait", "max_wait",
           "avg_slowdown", "sd_slowdown", "avg_bounded_slowdown", "sd_bounded_slowdown", "makespan",
           "dispatch_calls", "dispatch_ms_mean", "dispatch_ms_p50", "dispatch_ms_p99", "dispatch_ms_max",
           "sim_wall_s", "peak_rss_mb"]
FAILED_ERROR = 'RuntimeError: <b>solver</b> died & said "bye"'
CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")


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


# ---------------------------------------------------------------- the page


def test_report_has_every_section_and_figure(built: Path, campaign: Path) -> None:
    page = built.read_text(encoding="utf-8")
    assert built.name == "index.html"
    for heading in (*SECTION_HEADINGS, *CAMPAIGN_HEADINGS):
        assert html.escape(heading) in page, heading
    for lf in ("2", "10"):  # one section per (workload, load factor), each with all its headings
        assert f"Workload eurora-200 at load factor {lf}</h2>" in page
    assert page.count(html.escape(SECTION_HEADINGS[1])) == 2
    # self-contained: no script, no link to a file or the network
    assert "<script" not in page.lower()
    assert not re.search(r"""(src|href)=["'](?!data:|#)""", page)
    # the chosen run: no pcp20 run is done, so the first done run in key order
    assert "Run easy-real-lf10-r1: easy" in page


def test_every_image_is_an_inlined_png_and_every_figure_has_svg(built: Path) -> None:
    page = built.read_text(encoding="utf-8")
    tags = images(page)
    # per section: 3 quality bars, duration classes, ECDFs, prediction, decision time; the timeline; 2 ratios
    assert len(tags) == 2 * 7 + 1 + 2
    for tag in tags:
        m = re.search(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', tag)
        assert m and m.group(1), tag[:80]
        data = base64.b64decode(m.group(1), validate=True)
        assert data[:8] == PNG and len(data) > 1000
    pngs = sorted(built.parent.glob("*.png"))
    assert len(pngs) == 2 * 7 + 1
    for png in pngs:
        svg = png.with_suffix(".svg")
        assert png.read_bytes()[:8] == PNG
        assert svg.is_file() and b"<svg" in svg.read_bytes()[:2000]
    assert not list(built.parent.glob(".*partial*"))


def test_failed_runs_and_comparisons_are_escaped(built: Path) -> None:
    page = built.read_text(encoding="utf-8")
    assert html.escape(FAILED_ERROR) in page
    assert "<b>solver</b>" not in page
    assert "pcp20-real-lf2-r1" in page
    assert "median variables ratio 0.08 &lt;x&gt;" in page
    assert 'alt="compare/variables_ratio.png"' in page and 'alt="compare/time_ratio.png"' in page


def test_tables_1_2_hold_the_mean_over_replicas(built: Path, campaign: Path) -> None:
    runs = pd.read_parquet(campaign / "runs.parquet")
    sel = runs[(runs.dispatcher == "fifo") & (runs.predictor == "walltime") & (runs.load_factor == 10.0)]
    page = built.read_text(encoding="utf-8")
    section = page.split("Workload eurora-200 at load factor 10</h2>")[1]
    assert f"{sel.dispatch_ms_mean.mean():,.3f}" in section
    assert f"{sel.sim_wall_s.mean():,.2f}" in section


# ---------------------------------------------------------------- numbers, by hand


def test_t_quantile_matches_the_tables() -> None:
    for df, t in ((1, 12.7062), (2, 4.3027), (3, 3.1824), (10, 2.2281), (30, 2.0423), (200, 1.9719)):
        assert t_quantile(df) == pytest.approx(t, abs=1e-4)


def hand_runs() -> pd.DataFrame:
    """easy/real: 2 replicas (wait 100 and 200, slowdown 2 and 4); fifo/real: 1 replica."""
    rows = []
    for key, disp, rep, wait, sld in (("a", "easy", 1, 100.0, 2.0), ("b", "easy", 2, 200.0, 4.0),
                                      ("c", "fifo", 1, 50.0, 1.5)):
        summary = {k: 1.0 for k in FIGURES} | {"avg_wait": wait, "avg_slowdown": sld, "avg_bounded_slowdown": sld,
                                               "utilization": {"core": 0.5}, "capacity": {"core": 8}}
        rows.append(run_row(settings(key, disp, "real", 1.0, rep, "tiny"), summary, 0.1))
    return pd.DataFrame(rows)


def test_replica_table_mean_and_ci_by_hand() -> None:
    t = replica_table(hand_runs(), ["avg_wait", "avg_slowdown"])
    easy, fifo = t.loc[("easy", "real")], t.loc[("fifo", "real")]
    # mean 150; sd 70.71; half width t(0.975, 1) * sd / sqrt(2) = 12.7062 * 50 = 635.31
    assert easy["runs"] == 2 and easy["avg_wait_n"] == 2
    assert easy["avg_wait_mean"] == pytest.approx(150.0)
    assert easy["avg_wait_lo"] == pytest.approx(150.0 - 635.3102, abs=1e-3)
    assert easy["avg_wait_hi"] == pytest.approx(150.0 + 635.3102, abs=1e-3)
    assert easy["avg_slowdown_hi"] == pytest.approx(3.0 + 12.7062047 * 1.0, abs=1e-4)
    assert fifo["avg_wait_n"] == 1 and np.isnan(fifo["avg_wait_lo"])


def hand_jobs() -> pd.DataFrame:
    """Six jobs of one run (runtime = end - start), one rejected; req_core per unit."""
    cols = ["job_id", "submit", "start", "end", "units", "req_core", "walltime", "runtime", "predicted", "status"]
    nan = float("nan")
    rows = [
        ("1", 0, 100, 1100, 1, 1, 2000, 1000, 900, "completed"),  # short narrow, wait 100, bsld 1.1
        ("2", 0, 0, 7200, 4, 2, 9000, 7200, 7200, "completed"),  # long wide (medium), wait 0, bsld 1
        ("3", 50, 3650, 3655, 1, 1, 60, 5, 60, "completed"),  # short narrow, wait 3600, bsld 360.5, sld 721
        ("4", 0, 3600, 23600, 2, 1, 30000, 20000, 30000, "completed"),  # long wide (long), wait 3600, sld 1.18
        ("5", 0, nan, nan, 1, 1, 100, 50, nan, "rejected"),
        ("6", 0, 400, 4400, 1, 8, 5000, 4000, 4000, "completed"),  # long narrow (medium), wait 400, sld 1.1
    ]
    df = pd.DataFrame(rows, columns=cols)
    df["user"], df["reason"] = "u1", ""
    return df


def hand_campaign(root: Path) -> Path:
    runs = hand_runs()
    jobs = [job_rows(runs.iloc[0].to_dict(), hand_jobs())]
    failed = failed_row(settings("z", "pcp20", "real", 1.0, 1, "tiny"), "boom")
    return write_campaign(root, [*runs.to_dict("records"), failed], jobs)


def test_job_tables_by_hand(tmp_path: Path) -> None:
    root = hand_campaign(tmp_path / "c")
    runs = report.load_runs(root)
    jm = job_metrics(report.load_jobs(root / "jobs.parquet"), runs)
    assert len(jm) == 5  # the rejected job never started
    ct = class_table(jm).set_index(["duration", "width"])
    assert ct.loc[("short", "narrow"), ["jobs", "wait", "bsld"]].tolist() == pytest.approx([2, 1850.0, 180.8])
    assert ct.loc[("long", "wide"), ["jobs", "wait", "bsld"]].tolist() == pytest.approx([2, 1800.0, 1.09])
    assert ct.loc[("long", "narrow"), ["jobs", "wait", "bsld"]].tolist() == pytest.approx([1, 400.0, 1.1])
    assert ("short", "wide") not in ct.index
    ds = duration_slowdown(jm).set_index("duration")
    assert ds.loc["medium", ["jobs", "slowdown"]].tolist() == pytest.approx([2, 1.05])
    assert ds.loc["long", ["jobs", "slowdown"]].tolist() == pytest.approx([1, 1.18])
    pt = prediction_table(jm).set_index("predictor").loc["real"]
    assert [pt.jobs, pt.mae, pt.under, pt.over] == pytest.approx([5, 2031.0, 0.2, 0.4])


def test_hand_campaign_page_shows_the_hand_numbers(tmp_path: Path) -> None:
    index = write_report(hand_campaign(tmp_path / "c"), tmp_path / "r", run_key="a")
    page = index.read_text(encoding="utf-8")
    assert "[-485.31, 785.31]" in page  # easy: wait mean 150 over 2 replicas
    assert "<td>150.00</td><td>[-485.31, 785.31]</td>" in page
    assert "<td>50.00</td><td>n=1</td>" in page  # fifo: one replica
    for cells in ("<td>2</td><td>1,850.00</td><td>180.80</td>", "<td>2</td><td>1,800.00</td><td>1.09</td>",
                  "<td>5</td><td>2,031.0</td><td>20.0 %</td><td>40.0 %</td>", "<td>1</td><td>1.18</td>"):
        assert cells in page
    assert "Run a: easy" in page and "no failed run" not in page and "boom" in page


def test_run_timeline_by_hand() -> None:
    jobs = pd.DataFrame({"submit": [0, 5, 7], "start": [0, 10, np.nan], "end": [10, 20, np.nan],
                         "units": [2, 1, 1], "req_core": [1, 4, 1], "req_gpu": [0, 1, 0]})
    tl = run_timeline(jobs, {"core": 8, "gpu": 2, "mic": 4})
    assert tl["time"].tolist() == [0, 5, 10, 20]
    assert tl["running"].tolist() == [1, 1, 1, 0]
    assert tl["waiting"].tolist() == [0, 1, 0, 0]  # job 3 was rejected: never waiting
    assert tl["util_core"].tolist() == pytest.approx([0.25, 0.25, 0.5, 0.0])
    assert tl["util_gpu"].tolist() == pytest.approx([0.0, 0.0, 0.5, 0.0])
    assert "util_mic" not in tl  # no req_mic column in this run


def test_ecdf_points_are_thinned_but_keep_the_ends() -> None:
    values = np.random.default_rng(1).exponential(100.0, size=500_000)
    x, y = ecdf_points(np.append(values, np.nan))
    assert x.size <= report.MAX_ECDF
    assert x[0] == values.min() and x[-1] == values.max() and y[-1] == 1.0
    assert np.all(np.diff(x) >= 0) and np.all(np.diff(y) > 0)
    assert ecdf_points(np.array([3.0, 1.0]))[0].tolist() == [1.0, 3.0]


def test_run_choice(tmp_path: Path) -> None:
    runs = report.load_runs(hand_campaign(tmp_path / "c"))
    assert report.choose_run(runs, None)["key"] == "a"
    runs.loc[runs.key == "c", "dispatcher_name"] = "pcp20"
    assert report.choose_run(runs, None)["key"] == "c"  # a done pcp20 run is preferred
    with pytest.raises(CpdispatchError, match="no such run"):
        report.choose_run(runs, "nope")
    with pytest.raises(CpdispatchError, match="failed"):
        report.choose_run(runs, "z")
    with pytest.raises(CpdispatchError, match="no runs.parquet"):
        write_report(tmp_path / "missing", tmp_path / "r")


def test_campaign_where_every_run_failed(tmp_path: Path) -> None:
    """The collector then writes a jobs.parquet with the settings columns only, and no figure column in runs."""
    root = tmp_path / "c"
    root.mkdir()
    pd.DataFrame([failed_row(settings("k1", "pcp20", "real", 1.0, 1), "oops <1>")]).to_parquet(
        root / "runs.parquet", index=False)
    pd.DataFrame(columns=SETTINGS).to_parquet(root / "jobs.parquet", index=False)
    page = write_report(root, tmp_path / "r").read_text(encoding="utf-8")
    assert "no completed run in this section" in page and "oops &lt;1&gt;" in page
    assert html.escape(CAMPAIGN_HEADINGS[1]) in page and "<img" not in page
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


def test_page_renders_in_headless_chromium(built: Path, chromium: tuple[str, str], tmp_path: Path) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium[0]
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1300,2400"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(chromium[1]), options=opts)
    try:
        driver.get(built.as_uri())
        state = driver.execute_script(
            "return Array.from(document.images).map(i => [i.complete, i.naturalWidth, i.alt]);")
        assert len(state) == 17
        assert all(done and width > 0 for done, width, _ in state), state
        assert driver.title == "Campaign report"
        severe = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        assert severe == []
        shot = tmp_path / "report.png"
        assert driver.save_screenshot(str(shot))
    finally:
        driver.quit()
    assert shot.stat().st_size > 1000 and shot.read_bytes()[:8] == PNG
