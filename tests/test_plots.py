"""Plots and the results table: what is drawn is the run's data; edge cases do not crash."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.colors import to_hex

from cpdispatch import plots
from cpdispatch.job import Job
from cpdispatch.metrics import job_arrays, summarize
from cpdispatch.plots import DAY, _bins, plot_comparison, plot_run
from cpdispatch.records import JobRecord, SimulationResult
from cpdispatch.text_table import LEGEND, format_table

from .helpers import on
from .test_metrics import empty_result, sample_result, two_nodes

PNG = b"\x89PNG\r\n\x1a\n"


def _is_png(p: Path) -> bool:
    return p.exists() and p.stat().st_size > 1000 and p.read_bytes()[:8] == PNG


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The figures the plot functions save, by file name (the first of that name) and by folder/name,
    so that tests can read what was drawn."""
    figures: dict[str, Any] = {}
    save = plots._save

    def keep(fig: Any, path: Path) -> Path:
        figures.setdefault(path.name, fig)  # a comparison's own figure, not its runs' of the same name
        figures[f"{path.parent.name}/{path.name}"] = fig
        fig.canvas.draw()  # before _save closes it
        return save(fig, path)

    monkeypatch.setattr(plots, "_save", keep)
    return figures


def _curves(ax: Any) -> dict[str, Any]:
    """Drawn series by the name their legend entry starts with (the rest are the numbers)."""
    return {a.get_label().split(":")[0]: a for a in [*ax.patches, *ax.lines] if not a.get_label().startswith("_")}


def test_plot_run_draws_the_used_area_per_type(tmp_path: Path, drawn: dict[str, Any]) -> None:
    """The utilization curve of each type integrates to what the jobs used (units x req x run),
    in the type's shared colour, with the summary's utilisation over the submit window and the run
    in its legend; the queue is one series (its per-bin maximum coincided with the mean)."""
    result = sample_result()
    summary = summarize(result)
    paths = plot_run(result, tmp_path)
    assert [p.name for p in paths] == ["utilization.png", "queue.png"]
    assert all(_is_png(p) for p in paths)
    curves = _curves(drawn["utilization.png"].axes[0])
    assert set(curves) == {"core", "mem", "submit window"}
    for k, t in enumerate(result.system.types):
        values, edges, _ = curves[t].get_data()
        area = float((values / 100 * result.system.totals[k] * np.diff(edges) * DAY).sum())
        used = sum(r.job.units * r.job.req[k] * (r.end - r.start) for r in result.records if r.start is not None)
        assert area == pytest.approx(used)
        assert to_hex(curves[t].get_edgecolor()) == plots.resource_colour(t, k)
        sub, run = 100 * summary["utilization_submit"][t], 100 * summary["utilization"][t]
        assert curves[t].get_label() == f"{t}: {sub:.1f}% submit window, {run:.1f}% run"
    assert set(_curves(drawn["queue.png"].axes[0])) == {"queued jobs (time-weighted mean per bin)", "submit window"}


def test_plot_run_nothing_started(tmp_path: Path, drawn: dict[str, Any]) -> None:
    assert all(_is_png(p) for p in plot_run(empty_result(), tmp_path))
    texts = [t.get_text() for t in drawn["utilization.png"].axes[0].texts]
    assert "no started jobs" in texts


def _mostly_no_wait(n: int = 40, waiting: int = 6) -> SimulationResult:
    """`n` one-core jobs submitted 10 s apart, of which the last `waiting` (15%) waited 7, 14, ... s."""
    jobs = [Job(str(i), 10 * i, 1, (1, 1), 50, 50) for i in range(n)]
    waits = [0] * (n - waiting) + [7 * (i + 1) for i in range(waiting)]
    records = [JobRecord(j, "completed", j.submit + w, j.submit + w + 50, 50, on(0)) for j, w in zip(jobs, waits)]
    return SimulationResult(two_nodes(), "easy", "walltime", records, [])


def test_waiting_plot_shows_the_waiting_jobs_when_most_do_not_wait(tmp_path: Path, drawn: dict[str, Any]) -> None:
    """With 85% of the jobs not waiting, the waiting-time curve still has one step per waiting
    job: it starts at the share that waited (15%) and falls by 1/n at each of their waits; a box
    plot over all jobs had its quartiles at zero."""
    runs = [sample_result(), _mostly_no_wait()]
    paths = plot_comparison(runs, tmp_path)
    assert [p.name for p in paths] == ["waiting.png", "slowdown.png", "queue.png", "utilization.png"]
    assert all(_is_png(p) for p in paths)
    ax = drawn["waiting.png"].axes[0]
    assert (ax.get_xscale(), ax.get_yscale()) == ("log", "log")
    line = _curves(ax)["easy"]
    x, y = line.get_xdata(), line.get_ydata()
    assert list(x[1:]) == [7, 14, 21, 28, 35, 42]
    assert list(y) == pytest.approx([6 / 40, *[(6 - i) / 40 for i in range(6)]])
    assert line.get_label() == "easy: 15.0% of 40; mean 4"  # over all jobs: (7 + ... + 42) / 40 = 3.675
    slow = _curves(drawn["slowdown.png"].axes[0])["easy"]
    assert slow.get_ydata()[0] == pytest.approx(6 / 40)  # bounded slowdown above 1 iff waited here


def test_every_figure_of_a_comparison_gives_run_i_the_same_colour(tmp_path: Path, drawn: dict[str, Any]) -> None:
    runs = [(summarize(sample_result()), sample_result()), _mostly_no_wait(), empty_result()]
    plot_comparison(runs, tmp_path)
    for name in ("waiting.png", "slowdown.png", "queue.png", "utilization.png"):
        for ax in drawn[name].axes:
            legend = ax.get_legend()
            handles = [h for h in legend.legend_handles if h.get_label() != "submit window"]
            colours = [to_hex(h.get_color() if hasattr(h, "get_color") else h.get_edgecolor()) for h in handles]
            assert colours == list(plots.DISPATCHER_COLOURS[:3]), name
    notes = [t.get_text() for t in drawn["waiting.png"].axes[0].get_legend().texts]
    assert notes[-1] == "pcp: no started jobs"


def test_queue_overlay_keeps_each_runs_total_wait(tmp_path: Path, drawn: dict[str, Any]) -> None:
    """One queue series per run, binned over the shared axis: its area is the run's total waiting
    time (the queue after each call counts the waiting jobs), so the overlay orders runs as the table."""
    plot_comparison([sample_result(), _mostly_no_wait()], tmp_path)
    curves = _curves(drawn["queue.png"].axes[0])
    values, edges = curves["fifo"].get_data()[:2]
    assert float((values * np.diff(edges)).sum()) * DAY == pytest.approx(job_arrays(sample_result())["wait"].sum())
    assert curves["easy"].get_label() == "easy: no dispatcher calls"


def test_all_timelines_of_a_comparison_share_the_time_axis(tmp_path: Path, drawn: dict[str, Any]) -> None:
    """The overlays and every run's own plots (drawn with `run_dirs`) span the first submission to
    the last end of any run, whichever run ends first."""
    runs = [sample_result(), _mostly_no_wait()]
    paths = plot_comparison(runs, tmp_path, run_dirs=[tmp_path / "a", tmp_path / "b"])
    assert [p.relative_to(tmp_path).as_posix() for p in paths[4:]] == [
        "a/utilization.png", "a/queue.png", "b/utilization.png", "b/queue.png"]
    t0, last, t1 = plots.span_of(runs)
    assert (t0, last, t1) == (0, 390, 390 + 42 + 50 + 1)  # the last job waits 42 s and runs 50 s
    names = ["utilization.png", "queue.png", *(f"{f}/{n}" for f in "ab" for n in ("utilization.png", "queue.png"))]
    axes = [ax for name in names for ax in drawn[name].axes]
    assert len(axes) == 7  # utilization overlay: one panel per type used (core, mem); five one-panel figures
    for ax in axes:
        assert ax.get_xlim() == pytest.approx((0.0, t1 / DAY))


def test_submit_window_utilization_tells_contended_dispatchers_apart(tmp_path: Path, drawn: dict[str, Any]) -> None:
    """On a small contended workload fifo and easy end with the same job, so their utilisation over
    the whole run is equal, but easy keeps the machine busier while jobs arrive: the table and the
    overlay legend show utilisation over the submit window, which differs."""
    import cpdispatch.api as cpd
    from cpdispatch.workloads.generator import generate_eurora

    jobs = generate_eurora(150, 3)
    runs = [cpd.simulate("eurora", jobs, d, "walltime", load_factor=20.0, seed=1, room=False) for d in ("fifo", "easy")]
    summaries = [r.summary for r in runs]
    whole = [s["utilization"]["core"] for s in summaries]
    submit = [s["utilization_submit"]["core"] for s in summaries]
    assert whole[0] == pytest.approx(whole[1])
    assert submit[1] > submit[0] + 0.01
    table = format_table(summaries).splitlines()
    column = table[0].index("util core % [submit]")
    cells = [line[column:column + len("util core % [submit]")].strip() for line in table[2:4]]
    assert cells == [f"{100 * u:.1f}" for u in submit]
    plot_comparison([(s, r.raw) for s, r in zip(summaries, runs)], tmp_path)
    core = _curves(drawn["utilization.png"].axes[0])
    for name, sub, run in zip(("fifo", "easy"), submit, whole):
        assert core[name].get_label() == f"{name}: {100 * sub:.1f}% submit window, {100 * run:.1f}% run"


def test_bins_preserve_area_and_peaks() -> None:
    times = np.array([0, 100, 105, 200])
    used = np.array([4, 5, 1, 0])
    edges, mean, peak = _bins(times, used, 0, 200, n=2)
    assert edges.tolist() == [0, 100, 200]
    assert mean.tolist() == pytest.approx([4.0, (5 * 5 + 1 * 95) / 100])
    assert peak.tolist() == [4, 5]
    # many steps reduce to at most n bins with the same integral
    t = np.sort(np.random.default_rng(0).choice(10**6, 50_000, replace=False))
    lv = np.random.default_rng(1).integers(0, 50, t.size)
    lv[-1] = 0
    edges, mean, peak = _bins(t, lv, 0, int(t[-1]), n=1000)
    assert mean.size == 1000 and peak.size == 1000
    exact = float(np.sum(lv[:-1] * np.diff(t)))
    assert float(np.sum(mean * np.diff(edges))) == pytest.approx(exact)
    assert peak.max() == lv.max() and np.all(peak >= mean - 1e-9)


def test_format_table() -> None:
    rows = [summarize(sample_result()), summarize(empty_result())]
    lines = format_table(rows).splitlines()
    assert len(lines) == 6  # header, rule, two runs, blank line, legend
    assert lines[0].split()[:2] == ["dispatcher", "predictor"]
    assert "avg wait [s]" in lines[0] and "util core % [submit]" in lines[0]
    assert lines[2].split()[:6] == ["fifo", "walltime", "5", "3", "1", "1"]
    assert "37.5" in lines[2] and "50.0" in lines[2]  # avg wait; core use over the submit window 0-50: 200/400
    assert lines[3].split()[:2] == ["pcp", "last2"] and " - " in lines[3]
    assert len({len(line) for line in lines[:2]}) == 1  # header and rule aligned
    assert lines[-1] == LEGEND and LEGEND.startswith("util core % [submit]: ")
