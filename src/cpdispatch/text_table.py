"""A plain-text results table (one row per run) for `cpdispatch demo` and `simulate`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Getter = Callable[[dict[str, Any]], Any]


def _util(key: str) -> Getter:
    """Utilisation over the submit window: over the whole run the drain after the last submission
    dominates, and every dispatcher that ends with the same job shows the same number."""
    def get(row: dict[str, Any]) -> Any:
        u = (row.get("utilization_submit") or {}).get(key)
        return None if u is None else 100.0 * u
    return get


UTIL_HEADER = "util core % [submit]"
#: printed under the table: what the utilisation column measures, and where the other one is
LEGEND = (f"{UTIL_HEADER}: share of the core capacity in use from the first to the last submission "
          "(over the whole run, to the last end: summary.json's utilization)")


# (header, value getter, format); text columns are left-aligned, numbers right-aligned.
COLUMNS: list[tuple[str, Getter, str]] = [
    ("dispatcher", lambda r: r.get("dispatcher"), "s"),
    ("predictor", lambda r: r.get("predictor"), "s"),
    ("jobs", lambda r: r.get("jobs"), ",d"),
    ("completed", lambda r: r.get("completed"), ",d"),
    ("killed", lambda r: r.get("killed"), ",d"),
    ("rejected", lambda r: r.get("rejected"), ",d"),
    ("avg wait [s]", lambda r: r.get("avg_wait"), ",.1f"),
    ("avg bsld", lambda r: r.get("avg_bounded_slowdown"), ",.2f"),
    ("avg sld", lambda r: r.get("avg_slowdown"), ",.2f"),
    (UTIL_HEADER, _util("core"), ".1f"),
    ("disp ms mean", lambda r: r.get("dispatch_ms_mean"), ",.2f"),
    ("disp ms p99", lambda r: r.get("dispatch_ms_p99"), ",.2f"),
    ("sim wall [s]", lambda r: r.get("sim_wall_s"), ",.1f"),
]


def _fmt(value: Any, spec: str) -> str:
    """Missing or undefined values (e.g. waits with no started job) show as '-'."""
    if value is None:
        return "-"
    if spec == "s":
        return str(value)
    if spec.endswith("d"):
        value = int(value)
    return format(value, spec)


def format_table(rows: list[dict[str, Any]]) -> str:
    """Aligned table of summary dicts (as `metrics.summarize` returns), header and rule first,
    `LEGEND` last."""
    cells = [[_fmt(get(r), spec) for _, get, spec in COLUMNS] for r in rows]
    heads = [h for h, _, _ in COLUMNS]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(heads)]
    left = [spec == "s" for _, _, spec in COLUMNS]

    def line(items: list[str]) -> str:
        padded = (x.ljust(w) if lt else x.rjust(w) for x, w, lt in zip(items, widths, left, strict=True))
        return "  ".join(padded).rstrip()

    out = [line(heads), "  ".join("-" * w for w in widths)]
    out += [line(c) for c in cells]
    return "\n".join([*out, "", LEGEND])
