"""Every dispatcher's whole schedule on two small workloads, pinned: a restructuring of the
simulator, the API or a dispatcher must reproduce them byte for byte (SHA-256 of schedule.csv
plus the headline figures). When a behaviour changes on purpose, regenerate with
``python -m tests.test_golden_runs`` in the commit that says which behaviour changed and why.

The CP dispatchers run the default fast policy: deterministic-time and conflict limits, one
worker, so their schedules do not depend on the machine (the 1-s wall cap is never reached on
these instances)."""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import cpdispatch as cpd
from cpdispatch.dispatchers.base import all_names

from .conftest import MISSING_TRACES, WORKLOADS

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).with_name("golden_runs.json")
KTH = WORKLOADS / "KTH-SP2-1996-2.1-cln.swf.gz"
DISPATCHERS = ("fifo", "sjf", "ljf", "easy", "pbs", "hcp", "hcp1", "hcp2", "hcp19", "pcp", "pcp1", "pcp2", "pcp19",
               "pcp20", "eurora14")
#: eurora14 (no conflict limit in its fast policy) and the ablation bases (every queued job in the
#: model) run only the smallest case, with deterministic limits instead of the 1-s wall cap they
#: would reach on a slow machine (on KTH they take minutes).
ONLY_EURORA = ("eurora14", "hcp", "pcp")
OPTIONS = {name: {"deterministic_time": 0.002} for name in ONLY_EURORA}
#: pinned set-ups other than a dispatcher's defaults: pcp20 with the 5-ms fast budget it had
#: before issue 26 (its pins date from then: the speed work changed no schedule under it)
VARIANTS = {"pcp20-budget5ms": ("pcp20", {"fast_budget": 0.005})}


def cases() -> dict[str, Callable[[], tuple[cpd.System, Any, float]]]:
    """Each case built when asked (the KTH one reads the real trace)."""
    kth = cpd.System.preset("kth-sp2")
    eurora = cpd.System.preset("eurora")
    return {
        "kth-600": lambda: (kth, cpd.read_workload(KTH, kth, limit=600), 2.0),
        "eurora-300-gpu": lambda: (eurora, cpd.generate_eurora(300, seed=5, gpu_share=0.5), 12.0),
        "eurora-80-gpu": lambda: (eurora, cpd.generate_eurora(80, seed=5, gpu_share=0.5), 12.0),
    }


def fingerprint(case: str, dispatcher: str) -> dict[str, Any]:
    if case.startswith("kth") and not KTH.exists():
        pytest.skip(MISSING_TRACES)
    system, jobs, load = cases()[case]()
    name, options = VARIANTS.get(dispatcher, (dispatcher, OPTIONS.get(dispatcher)))
    t0 = time.perf_counter()
    result = cpd.simulate(system, jobs, dispatcher=name, predictor="last2", load_factor=load, options=options)
    with tempfile.TemporaryDirectory() as tmp:
        result.save(tmp, plots=False)
        digest = hashlib.sha256((Path(tmp) / "schedule.csv").read_bytes()).hexdigest()
    s = result.summary
    print(f"{case}/{dispatcher}: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return {"schedule_sha256": digest, "avg_wait": round(s["avg_wait"], 6),
            "avg_bounded_slowdown": round(s["avg_bounded_slowdown"], 6), "completed": s["completed"],
            "rejected": s["rejected"], "dispatch_calls": s["dispatch_calls"]}


def test_every_dispatcher_is_pinned() -> None:
    pinned = json.loads(GOLDEN.read_text())
    assert set(DISPATCHERS) <= set(all_names())
    assert {key.split("/")[1] for key in pinned} == set(DISPATCHERS) | set(VARIANTS)


@pytest.mark.parametrize("key", sorted(json.loads(GOLDEN.read_text())))
def test_golden_run(key: str) -> None:
    case, dispatcher = key.split("/")
    assert fingerprint(case, dispatcher) == json.loads(GOLDEN.read_text())[key]


if __name__ == "__main__":  # regenerate
    table = {f"{c}/{d}": fingerprint(c, d) for c in cases() for d in (*DISPATCHERS, *VARIANTS)
             if (c == "eurora-80-gpu") == (d in ONLY_EURORA)}
    GOLDEN.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(table)} fingerprints to {GOLDEN}", file=sys.stderr)
