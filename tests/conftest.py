"""Shared fixtures and marks: where the real traces are (beside the repo, never copied into it),
skipping with the reason when they are missing, and which tests the fast lane leaves out."""

from __future__ import annotations

from pathlib import Path

import pytest

WORKLOADS = Path(__file__).resolve().parents[2] / "shared" / "workloads"
MISSING_TRACES = f"real traces not found at {WORKLOADS} (shared/ must sit beside the repository)"

#: For a test that reads a trace of ../shared/workloads by path (the `workloads_dir` fixture skips
#: by itself).
needs_traces = pytest.mark.skipif(not WORKLOADS.is_dir(), reason=MISSING_TRACES)

#: Left out of the fast lane (`python3 dev.py test --fast`, `pytest -m "not slow"`): real Slurm
#: clusters, whole traces, the reproduction end to end, real Dask clusters, the long CP solves.
#: Each takes from several seconds to five minutes; the full suite (CI) runs them all.
SLOW_MODULES = {"test_reproduce", "test_slurm_dispatch", "test_slurm_local_cluster", "test_slurm_failsafe",
                "test_slurm_operations", "test_accasim_golden", "test_pcp20_real_trace", "test_real_trace"}
SLOW_TESTS = {
    "test_slurm_priority.py::test_fair_share_orders_the_queue_only_with_priority_slurm",
    "test_campaign.py::test_real_scheduler_and_two_real_workers",
    "test_campaign.py::test_interrupted_campaign_resumes_to_the_same_results",
    "test_campaign.py::test_a_killed_worker_loses_nothing",
    "test_simulator.py::test_easy_same_decisions_from_queue_views_and_tuples",
    "test_robustness.py::test_signal_in_a_long_solve_keeps_a_partial_valid_marked_run",
    "test_api.py::test_readme_examples_run_as_written",
    "test_golden_runs.py::test_golden_run[kth-600/",  # a prefix: the KTH cases (the Eurora ones stay)
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        test = f"{item.path.name}::{getattr(item, 'originalname', item.name)}"
        full = f"{item.path.name}::{item.name}"
        if (item.path.stem in SLOW_MODULES or test in SLOW_TESTS
                or any(full.startswith(t) for t in SLOW_TESTS if t.endswith(("[", "/")))):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def workloads_dir() -> Path:
    if not WORKLOADS.is_dir():
        pytest.skip(MISSING_TRACES)
    return WORKLOADS
