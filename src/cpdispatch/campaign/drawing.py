"""What the campaign report's figures are drawn with (matplotlib): point estimates with their intervals on
a scale where every dispatcher is visible, one colour per dispatcher, and the numbers each figure draws
read back from its artists, so that the page can carry (and tests can check) that they equal the tables'.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.colors import TABLEAU_COLORS, to_hex  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from ..outputs_safety import replacing  # noqa: E402

FULL, HALF = 12.0, 6.2  # figure widths [in]: the page's width, half of it
MARKERS = ("o", "s", "D", "^", "v", "P", "X", "h")
LINESTYLES: tuple[Any, ...] = ("-", "--", ":", "-.")
SPAN_FOR_LOG = 20.0  # a panel whose values span more than this factor gets a log axis


@dataclass
class Points:
    """One series of estimates in one panel, and the table cells they must equal: per point, the
    table row's label cells; `column` the table's column header."""

    label: str
    colour: str
    marker: str
    y: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    cells: list[list[str]]
    column: str
    table: str


@dataclass
class Drawn:
    """What a figure drew, kept to be read back: (errorbar container, its Points) per series."""

    items: list[tuple[Any, Points]] = field(default_factory=list)

    def data(self) -> list[dict[str, Any]]:
        """Every drawn point as {table, row, column, mean, low, high, colour}, from the artists themselves."""
        out = []
        for container, pts in self.items:
            x = container.lines[0].get_xdata()
            colour = to_hex(container.lines[0].get_color())
            segs = container.lines[2][0].get_segments() if container.lines[2] else [[(v, 0), (v, 0)] for v in x]
            for cells, m, seg in zip(pts.cells, x, segs):
                low, high = sorted((float(seg[0][0]), float(seg[1][0])))
                out.append({"table": pts.table, "row": cells, "column": pts.column, "mean": float(m),
                            "low": low, "high": high, "colour": colour})
        return out


def palette(labels: Sequence[str]) -> dict[str, Any]:
    """One colour per dispatcher label, in the campaign's order (tab10, then tab20's light shades)."""
    light = matplotlib.colormaps["tab20"]
    base = [*TABLEAU_COLORS.values(), *(light(i) for i in range(1, 20, 2))]
    return {label: base[i % len(base)] for i, label in enumerate(labels)}


def auto_scale(ax: Axes, values: np.ndarray, axis: str = "x") -> None:
    """Log when every value is positive and they span more than SPAN_FOR_LOG; symlog when zeros or signs
    mix over more than two decades; else linear: the smallest dispatcher stays visible beside the largest."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    nonzero = np.abs(v[v != 0])
    if nonzero.size == 0:
        return
    setter = ax.set_xscale if axis == "x" else ax.set_yscale
    target = ax.xaxis if axis == "x" else ax.yaxis
    if v.min() > 0 and v.max() / v.min() > SPAN_FOR_LOG:
        setter("log")
    elif v.min() <= 0 and nonzero.max() / nonzero.min() > 100:
        linthresh = 10.0 ** np.floor(np.log10(nonzero.min()))
        setter("symlog", linthresh=linthresh, linscale=0.5)
        if v.min() >= 0:  # no empty negative decades
            (ax.set_xlim if axis == "x" else ax.set_ylim)(-0.3 * linthresh, None)
    else:
        return
    target.set_major_formatter(FuncFormatter(lambda x, _: f"{x:,.6g}"))


def draw_points(ax: Axes, pts: Points, drawn: Drawn) -> None:
    """Points with horizontal interval bars (a point without interval has none); missing means skipped."""
    ok = np.isfinite(pts.mean)
    if not ok.any():
        return
    m = pts.mean[ok]
    lo = np.where(np.isfinite(pts.low[ok]), pts.low[ok], m)
    hi = np.where(np.isfinite(pts.high[ok]), pts.high[ok], m)
    c = ax.errorbar(m, pts.y[ok], xerr=np.vstack([m - lo, hi - m]), fmt=pts.marker, color=pts.colour, ms=6,
                    capsize=3, elinewidth=1.4, label=pts.label)
    drawn.items.append((c, Points(pts.label, pts.colour, pts.marker, pts.y[ok], m, lo, hi,
                                  [c for c, k in zip(pts.cells, ok) if k], pts.column, pts.table)))


def rows_axis(ax: Axes, labels: Sequence[str], xlabel: str, values: np.ndarray, zero: bool = False) -> None:
    """A panel of point ranges: one row per label, top to bottom, its scale chosen from its values."""
    ax.set_yticks(range(len(labels)), list(labels))
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.set_xlabel(xlabel)
    ax.grid(axis="x", alpha=0.3)
    auto_scale(ax, values)
    if zero:
        ax.axvline(0, color="black", linewidth=0.8)


def offsets(count: int) -> np.ndarray:
    """Vertical offsets of `count` series sharing a row."""
    return (np.arange(count) - (count - 1) / 2) * (0.7 / max(count, 1)) if count > 1 else np.zeros(1)


def legend(fig: Figure, colours: dict[str, Any] | None = None, markers: Sequence[str] = (),
           styles: Sequence[str] = ()) -> None:
    """One legend above the panels: the dispatchers' colours, then marker shapes (predictors or statistics)
    or line styles (predictors), in grey since colours already name the dispatchers."""
    handles = [Line2D([], [], color=c, marker="s", linestyle="", label=d) for d, c in (colours or {}).items()]
    handles += [Line2D([], [], color="dimgrey", marker=MARKERS[i % len(MARKERS)], linestyle="", label=n)
                for i, n in enumerate(markers)]
    handles += [Line2D([], [], color="dimgrey", linestyle=LINESTYLES[i % len(LINESTYLES)], label=n)
                for i, n in enumerate(styles)]
    if handles:
        fig.legend(handles=handles, loc="outside upper center", ncol=min(len(handles), 8), fontsize=8,
                   frameon=False)


def emit(fig: Figure, out: Path, name: str) -> bytes:
    """Write the figure as name.png and name.svg into `out`; return the PNG for the page."""
    if fig.get_layout_engine() is None:
        fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    fig.set_layout_engine("none")  # the layout found for the PNG serves the SVG: not computed twice
    with replacing(out / f"{name}.png") as tmp:
        tmp.write_bytes(buf.getvalue())
    with replacing(out / f"{name}.svg") as tmp:
        fig.savefig(tmp, format="svg")
    plt.close(fig)
    return buf.getvalue()


def log_x_if_wide(ax: Axes, values: Sequence[np.ndarray]) -> None:
    """Log x axis when the values span more than two decades (symlog when zeros are among them)."""
    v = np.concatenate([np.asarray(a, dtype=np.float64) for a in values]) if values else np.zeros(0)
    v = v[np.isfinite(v)]
    if v.size == 0 or v.max() <= 0:
        return
    if v.min() > 0 and v.max() / v[v > 0].min() > 100:
        ax.set_xscale("log")
    elif v.min() <= 0 and v.max() > 100:
        ax.set_xscale("symlog", linthresh=1.0)
