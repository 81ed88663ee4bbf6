"""Slurm hostlists (`n[1-3,7],gpu[01-02]`) expanded in Python: one `scontrol show hostnames`
per job would cost 5-20 ms each round."""

from __future__ import annotations

import re

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return [p for p in (s.strip() for s in parts) if p]


def expand(hostlist: str | None) -> list[str]:
    """`n[1-3],m05` -> [n1, n2, n3, m05] (zero padding kept; several bracket groups allowed)."""
    if not hostlist or hostlist == "(null)":
        return []
    out: list[str] = []
    for part in _split_top(hostlist):
        m = re.search(r"\[([^\]]*)\]", part)
        if m is None:
            out.append(part)
            continue
        head, tail = part[: m.start()], part[m.end():]
        for item in m.group(1).split(","):
            r = _RANGE.match(item.strip())
            if r is None:
                raise ValueError(f"bad hostlist range {item!r} in {hostlist!r}")
            lo, hi = r.group(1), r.group(2) or r.group(1)
            width = len(lo) if lo.startswith("0") else 0
            for i in range(int(lo), int(hi) + 1):
                out.extend(expand(f"{head}{i:0{width}d}{tail}"))
    return out
