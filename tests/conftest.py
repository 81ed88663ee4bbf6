"""Shared fixtures: where the real traces are (beside the repo, never copied into it)."""

from __future__ import annotations

from pathlib import Path

import pytest

WORKLOADS = Path(__file__).resolve().parents[2] / "shared" / "workloads"


@pytest.fixture(scope="session")
def workloads_dir() -> Path:
    if not WORKLOADS.is_dir():
        pytest.fail(f"real traces not found at {WORKLOADS} (shared/ must sit beside the repo)")
    return WORKLOADS
