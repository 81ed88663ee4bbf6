"""Block replicas of one history: blocks, classes, paired differences, on hand-checked frames."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cpdispatch.campaign.blocks import BLOCK_DAYS, job_table, paired_blocks, summary_table
from cpdispatch.stats import paired_difference

DAY = 86_400


def frame(dispatcher: str, waits: list[int], predictor: str = "walltime") -> pd.DataFrame:
    """One job per 10 days on kth-sp2 (one core per node): run 100 s, 1 or 3 processors."""
    n = len(waits)
    submit = np.arange(n) * 10 * DAY + 500
    return pd.DataFrame({
        "workload": "w", "system": "kth-sp2", "dispatcher": dispatcher, "predictor": predictor,
        "submit": submit, "start": submit + np.array(waits), "end": submit + np.array(waits) + 100,
        "units": [1, 3] * (n // 2) + [1] * (n % 2), "req_core": 1.0})


def test_blocks_classes_and_whole_trace_means() -> None:
    jobs = pd.concat([frame("a", [0] * 9), frame("b", [900] * 9)])
    t = job_table(jobs)
    assert t["block"].tolist()[:9] == [0, 0, 0, 1, 1, 1, 2, 2, 2]  # 30-day blocks from the first submit
    assert BLOCK_DAYS == 30
    assert t["class"].tolist()[:2] == ["short narrow", "short wide"]
    s = summary_table(t)
    assert s.loc[("w", "b", "walltime"), "bsld"] == pytest.approx(10.0)  # (900 + 100) / 100
    assert s.loc[("w", "a", "walltime"), "bsld short wide"] == 1.0


def test_paired_blocks_against_the_reference() -> None:
    waits = [0, 100, 300, 50, 0, 400, 200, 0, 100, 600, 0, 0]
    jobs = pd.concat([frame("ref", [0] * 12), frame("x", waits), frame("x", waits, "last2")])
    table = job_table(jobs)
    p = paired_blocks(table, ("ref", "walltime")).set_index(["dispatcher", "predictor"])
    assert len(p) == 2 and p.loc[("x", "walltime"), "blocks"] == 4
    per_block = [np.mean(np.maximum(1, (np.array(waits[i:i + 3]) + 100) / 100)) - 1 for i in range(0, 12, 3)]
    e = paired_difference(per_block, [0.0] * 4)
    assert p.loc[("x", "walltime"), "diff"] == pytest.approx(e.mean)
    assert (p.loc[("x", "walltime"), "low"], p.loc[("x", "walltime"), "high"]) == pytest.approx((e.low, e.high))
    assert np.isfinite(p.loc[("x", "walltime"), "autocorrelation"])


def test_markdown_marks_the_reference_and_a_missing_one() -> None:
    from cpdispatch.campaign.blocks import markdown

    waits = [0, 100, 300, 50, 0, 400]
    table = job_table(pd.concat([frame("ref", [0] * 6), frame("x", waits)]))
    text = markdown(table, [("ref", "walltime"), ("absent", "walltime")])
    rows = {line.split(" | ")[0].strip("| "): line for line in text.splitlines() if line.startswith("| ref")
            or line.startswith("| x")}
    assert rows["ref"].endswith("| ref | – |") and rows["x"].endswith("| – |") and "(" in rows["x"]


def test_best_baseline_is_the_lowest_non_cp_configuration_per_workload() -> None:
    from cpdispatch.campaign.blocks import BEST_BASELINE, best_baselines, markdown

    waits = [0, 100, 300, 50, 0, 400]
    # pcp20 is best but is a CP dispatcher; of the baselines, easy with last2 waits least
    jobs = pd.concat([frame("pcp20", [0] * 6), frame("easy", waits), frame("easy", [0, 10, 0, 0, 0, 0], "last2"),
                      frame("fifo", [900] * 6)])
    table = job_table(jobs)
    assert best_baselines(table) == {"w": ("easy", "last2")}
    p = paired_blocks(table, BEST_BASELINE).set_index(["dispatcher", "predictor"])
    assert ("easy", "last2") not in p.index and p.loc[("fifo", "walltime"), "diff"] > 0
    text = markdown(table, [BEST_BASELINE])
    assert "Best baseline: easy with last2." in text
    assert next(line for line in text.splitlines() if line.startswith("| easy | last2")).endswith("| ref |")
