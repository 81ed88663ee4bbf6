"""HTML pieces of the campaign report: escaped text and tables, cells holding a mean and its interval,
figures inlined as PNG with the numbers they draw, a grid layout, and the self-contained page."""

from __future__ import annotations

import base64
import html
import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

CSS = """body{font-family:sans-serif;max-width:1400px;margin:1em auto;padding:0 1em;color:#222;font-size:15px}
h1{margin:.3em 0}h2{border-bottom:2px solid #ccc;margin:1.4em 0 .4em}h3{margin:1em 0 .3em;font-size:1.05em}
p{margin:.3em 0 .5em}table{border-collapse:collapse;margin:.3em 0 .8em;font-size:.85em}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:right;vertical-align:top}th{background:#f1f1f1}
td.t,table.failed th{text-align:left}table.failed td:last-child{white-space:pre-wrap;font-family:monospace}
td .ci{display:block;font-size:.82em;color:#666;white-space:nowrap}td.best{font-weight:bold}
figure{margin:.4em 0}img{max-width:100%;height:auto}figcaption{font-size:.85em;color:#555}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(600px,1fr));gap:.4em 1.5em;align-items:start}
nav ul{columns:2;margin:.3em 0}pre{background:#f6f6f6;padding:.6em;overflow-x:auto}"""


class Html(str):
    """Text that is already HTML (built here from escaped parts): tables put it in unescaped."""


def e(x: Any) -> str:
    """Every string bound for the page goes through here: labels and errors may hold <, & or quotes."""
    return html.escape(str(x))


def num(x: Any, digits: int = 2) -> str:
    """A table number: '-' when missing, thousands separators, tiny values with 3 significant digits."""
    if x is None or pd.isna(x):
        return "-"
    v = float(x)
    if v != 0 and abs(v) < 0.01:
        return f"{v:.3g}"
    return f"{v:,.{digits}f}"


def estimate(mean: float, low: float, high: float, n: int, digits: int = 2, p: float = math.nan) -> Html:
    """A cell: the mean, and under it its 95% interval (or n=1: no interval; '-' without a value);
    a paired test's p-value after the interval when given."""
    if n < 1 or pd.isna(mean):
        return Html("-")
    if n < 2 or pd.isna(low):
        return Html(f'{e(num(mean, digits))}<span class="ci">n={n}</span>')
    test = "" if pd.isna(p) else f" p={p:.2g}"
    return Html(f'{e(num(mean, digits))}<span class="ci">[{e(num(low, digits))}, {e(num(high, digits))}]'
                f"{e(test)}</span>")


def estimate_of(row: pd.Series | dict[str, Any], metric: str, digits: int = 2) -> Html:
    """`estimate` of the columns {metric}_mean, _lo, _hi, _n (and _p) of a table row."""
    return estimate(row[f"{metric}_mean"], row[f"{metric}_lo"], row[f"{metric}_hi"], int(row[f"{metric}_n"]),
                    digits, row.get(f"{metric}_p", math.nan))


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], left: int = 1, cls: str = "",
          ident: str = "", best: Sequence[set[int]] | None = None) -> str:
    """An HTML table, every plain cell escaped (Html cells as they are); the first `left` columns are
    labels (left-aligned); `best[i]`: the columns of row i to set in bold."""
    head = "".join(f"<th>{e(h)}</th>" for h in headers)
    body = []
    for i, r in enumerate(rows):
        cells = []
        for j, c in enumerate(r):
            text = c if isinstance(c, Html) else e(c)
            klass = "t" if j < left else "best" if best is not None and j in best[i] else ""
            cells.append(f'<td class="{klass}">{text}</td>' if klass else f"<td>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>\n")
    attrs = (f' class="{e(cls)}"' if cls else "") + (f' id="{e(ident)}"' if ident else "")
    return f"<table{attrs}><thead><tr>{head}</tr></thead><tbody>\n{''.join(body)}</tbody></table>\n"


def p(text: str, cls: str = "") -> str:
    """An escaped paragraph."""
    return f'<p class="{cls}">{e(text)}</p>\n' if cls else f"<p>{e(text)}</p>\n"


def h(level: int, text: str, ident: str = "") -> str:
    """An escaped heading."""
    attr = f' id="{e(ident)}"' if ident else ""
    return f"<h{level}{attr}>{e(text)}</h{level}>\n"


def figure(png: bytes, alt: str, caption: str, data: list[dict[str, Any]] | None = None) -> str:
    """A figure inlined as base64 PNG (the page stands alone); `data`: the numbers it draws, as JSON in
    its data-values attribute, for a reader (or a test) to compare with the tables."""
    src = base64.b64encode(png).decode("ascii")
    values = "" if data is None else f' data-values="{e(json.dumps(_clean(data), allow_nan=False))}"'
    return (f'<figure{values}><img alt="{e(alt)}" src="data:image/png;base64,{src}">'
            f"<figcaption>{e(caption)}</figcaption></figure>\n")


def _clean(x: Any) -> Any:
    """JSON without NaN: a missing bound is null."""
    if isinstance(x, float):
        return None if math.isnan(x) else x
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_clean(v) for v in x]
    return x


def grid(*items: str) -> str:
    """Side-by-side blocks (two per row on a wide screen, one on a narrow one); empty blocks dropped."""
    kept = [i for i in items if i]
    if len(kept) < 2:
        return "".join(kept)
    return '<div class="grid">' + "".join(f"<div>{i}</div>" for i in kept) + "</div>\n"


def page(title: str, body: Sequence[str]) -> str:
    """The whole document: inline CSS, an empty data: icon (no favicon request), no script."""
    return ('<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<title>{e(title)}</title><link rel="icon" href="data:,">'
            f"<style>{CSS}</style></head>\n<body>\n{''.join(body)}</body></html>\n")
