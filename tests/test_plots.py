"""Plots and the results table: files are produced, edge cases do not crash."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cpdispatch.metrics import summarize
from cpdispatch.plots import _bins, plot_comparison, plot_run
from cpdispatch.report import format_table

from .test_metrics import empty_result, sample_result

PNG = b"\x89PNG\r\n\x1a\n"


def _is_png(p: Path) -> bool:
    return p.exists() and p.stat().st_size > 1000 and p.read_bytes()[:8] == PNG


def test_plot_run(tmp_path: Path) -> None:
    paths = plot_run(sample_result(), tmp_path)
    assert [p.name for p in paths] == ["utilization.png", "queue.png"]
    assert all(_is_png(p) for p in paths)


def test_plot_run_nothing_started(tmp_path: Path) -> None:
    assert all(_is_png(p) for p in plot_run(empty_result(), tmp_path))


def test_plot_comparison(tmp_path: Path) -> None:
    runs = [(summarize(sample_result()), sample_result()), empty_result()]
    paths = plot_comparison(runs, tmp_path)
    assert [p.name for p in paths] == ["waiting.png", "slowdown.png"]
    assert all(_is_png(p) for p in paths)


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
