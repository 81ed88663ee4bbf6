"""Plots and the results table: what is drawn is the run's data; edge cases do not crash."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cpdispatch import plots
from cpdispatch.metrics import summarize
from cpdispatch.plots import DAY, _bins, plot_comparison, plot_run
from cpdispatch.report import format_table

from .test_metrics import empty_result, sample_result

PNG = b"\x89PNG\r\n\x1a\n"


def _is_png(p: Path) -> bool:
    return p.exists() and p.stat().st_size > 1000 and p.read_bytes()[:8] == PNG


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The figures the plot functions save, by file name (so tests can read what was drawn)."""
    figures: dict[str, Any] = {}
    save = plots._save

    def keep(fig: Any, path: Path) -> Path:
        figures[path.name] = fig
        fig.canvas.draw()  # before _save closes it
        return save(fig, path)

    monkeypatch.setattr(plots, "_save", keep)
    return figures


def test_plot_run_draws_the_used_area_per_type(tmp_path: Path, drawn: dict[str, Any]) -> None:
    """The utilization curve of each type integrates to what the jobs used (units x req x run),
    and the queue curve is drawn: the plot shows the run's data, not just any image."""
    result = sample_result()
    paths = plot_run(result, tmp_path)
    assert [p.name for p in paths] == ["utilization.png", "queue.png"]
    assert all(_is_png(p) for p in paths)
    ax = drawn["utilization.png"].axes[0]
    curves = {line.get_label(): line for line in ax.patches}
    assert set(curves) == {"core", "mem"}
    for k, t in enumerate(result.system.types):
        values, edges, _ = curves[t].get_data()
        area = float((values / 100 * result.system.totals[k] * np.diff(edges) * DAY).sum())
        used = sum(r.job.units * r.job.req[k] * (r.end - r.start) for r in result.records if r.start is not None)
        assert area == pytest.approx(used)
    queue = drawn["queue.png"].axes[0]
    assert {p.get_label() for p in queue.patches} == {"maximum in bin", "time-weighted mean"}


def test_plot_run_nothing_started(tmp_path: Path, drawn: dict[str, Any]) -> None:
    assert all(_is_png(p) for p in plot_run(empty_result(), tmp_path))
    texts = [t.get_text() for t in drawn["utilization.png"].axes[0].texts]
    assert "no started jobs" in texts


def test_plot_comparison_bars_are_the_mean_waits(tmp_path: Path, drawn: dict[str, Any]) -> None:
    runs = [(summarize(sample_result()), sample_result()), empty_result()]
    paths = plot_comparison(runs, tmp_path)
    assert [p.name for p in paths] == ["waiting.png", "slowdown.png"]
    assert all(_is_png(p) for p in paths)
    bars = [p for p in drawn["waiting.png"].axes[0].patches if p.get_width() == pytest.approx(0.6)]
    assert [b.get_height() for b in bars] == pytest.approx([summarize(sample_result())["avg_wait"], 0.0])
    notes = [t.get_text() for t in drawn["waiting.png"].axes[0].texts]
    assert "no started jobs" in notes


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
    assert len(lines) == 4
    assert lines[0].split()[:2] == ["dispatcher", "predictor"]
    assert "avg wait [s]" in lines[0] and "util core %" in lines[0]
    assert lines[2].split()[:6] == ["fifo", "walltime", "5", "3", "1", "1"]
    assert "37.5" in lines[2] and "32.5" in lines[2]  # avg wait; 520/1600 core utilization
    assert lines[3].split()[:2] == ["pcp", "last2"] and " - " in lines[3]
    assert len({len(line) for line in lines[:2]}) == 1  # header and rule aligned
