"""Expected waiting times per queue (EWT): the PBS rule ranks jobs by them, and the CP dispatchers'
time policies read them too, so both take them from here."""

from __future__ import annotations

from ..errors import CpdispatchError

# The Eurora queues of the CP 2014 paper (Table 1, "Approx. Wait": seconds / minutes / hours),
# read as one order of magnitude each; other queues fall back to the AccaSim default of 1800 s.
EWT_PRESETS = {"eurora": "debug=60,parallel=600,longpar=3600,default=1800"}


def parse_ewt(text: str) -> dict[str, int]:
    """'queue=seconds,...,default=seconds' (or a preset name) -> {queue: seconds}; default 1800 s."""
    text = EWT_PRESETS.get(text.strip(), text)
    ewt = {"default": 1800}
    for item in text.split(","):
        if not item.strip():
            continue
        queue, sep, value = item.partition("=")
        try:
            seconds = int(value)
        except ValueError:
            seconds = 0
        if not sep or not queue.strip() or seconds <= 0:
            raise CpdispatchError(f"option ewt: expected queue=seconds (seconds > 0), got {item.strip()!r}")
        ewt[queue.strip()] = seconds
    return ewt
