"""Synthetic Eurora workload: determinism, the papers' statistics, queue limits, learnability."""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from cpdispatch.system import load_system
from cpdispatch.workloads import load_workload, write_native
from cpdispatch.workloads.base import Workload
from cpdispatch.workloads.generator import EURORA_TYPES, OFFERED_CORE_LOAD, QUEUES, generate_eurora

N = 4000
CORE, MEM, GPU, MIC = range(4)


@pytest.fixture(scope="module", params=[1, 2, 3])
def workload(request: pytest.FixtureRequest) -> Workload:
    return generate_eurora(N, request.param)


def test_deterministic() -> None:
    a, b = generate_eurora(1500, 7), generate_eurora(1500, 7)
    assert a.jobs == b.jobs and a.notes == b.notes
    assert generate_eurora(1500, 8).jobs != a.jobs
    assert generate_eurora(0, 1).jobs == []


def test_shape(workload: Workload) -> None:
    jobs = workload.jobs
    assert [j.id for j in jobs] == [str(i) for i in range(1, N + 1)]
    assert all(a.submit <= b.submit for a, b in zip(jobs, jobs[1:]))
    assert all(j.runtime >= 0 and j.units >= 1 and j.walltime is not None for j in jobs)
    assert 60 <= len({j.user for j in jobs}) <= 100
    assert all(re.fullmatch(r"[a-z0-9_]+_\d+", j.name) for j in jobs)


def test_runtime_classes(workload: Workload) -> None:
    run = np.array([j.runtime for j in workload.jobs])
    assert abs((run < 3600).mean() - 0.9314) <= 0.03
    assert 0.002 <= (run > 5 * 3600).mean() <= 0.02


def test_queue_limits(workload: Workload) -> None:
    for j in workload.jobs:
        q = QUEUES[j.queue]
        assert j.units <= q.max_nodes and j.units * j.req[CORE] <= q.max_cores
        assert j.units * j.req[GPU] <= q.max_gpus and j.units * j.req[MIC] <= q.max_gpus
        assert j.walltime is not None and j.runtime <= j.walltime <= q.max_time
    assert {j.queue for j in workload.jobs} == set(QUEUES)


def test_accelerators_and_cores(workload: Workload) -> None:
    jobs = workload.jobs
    assert not any(j.req[GPU] and j.req[MIC] for j in jobs)
    assert 0.25 <= np.mean([j.req[GPU] > 0 for j in jobs]) <= 0.42
    assert 0 < np.mean([j.req[MIC] > 0 for j in jobs]) < 0.02
    per_unit = np.array([j.req[CORE] for j in jobs])
    assert set(per_unit) <= {1, 2, 4, 8, 16} and (per_unit == 1).mean() > 0.3


def test_every_job_fits_eurora(workload: Workload) -> None:
    eurora = load_system("eurora")
    assert eurora.types == EURORA_TYPES
    assert all(eurora.max_units(j.req) >= j.units for j in workload.jobs)
    assert workload.notes["offered_load"]["core"] <= OFFERED_CORE_LOAD + 1e-9


def test_name_and_user_predict_runtime(workload: Workload) -> None:
    """The previous run of the same (user, name) predicts a job far better than the user's previous job."""
    by_name: dict[tuple[str, str], int] = {}
    by_user: dict[str, int] = {}
    err_name, err_user = [], []
    for j in workload.jobs:
        run = max(j.runtime, 1)
        key = (j.user, j.name)
        if key in by_name and j.user in by_user:
            err_name.append(abs(np.log(run / by_name[key])))
            err_user.append(abs(np.log(run / by_user[j.user])))
        by_name[key], by_user[j.user] = run, run
    assert np.median(err_name) < 0.5 * np.median(err_user)


def test_day_night_cycle() -> None:
    jobs = generate_eurora(20000, 5).jobs
    hours: defaultdict[int, int] = defaultdict(int)
    for j in jobs:
        hours[j.submit % 86400 // 3600] += 1
    day = sum(hours[h] for h in range(11, 19))
    night = sum(hours[h] for h in (23, 0, 1, 2, 3, 4, 5, 6))
    assert day > 1.6 * night  # rate 1 +- 0.5 around the mean, peak at 15:00


def test_native_round_trip(tmp_path: Path) -> None:
    eurora = load_system("eurora")
    w = generate_eurora(500, 3)
    out = str(tmp_path / "eurora.csv")
    write_native(out, w, eurora)
    back = load_workload(out, eurora).jobs
    assert [dataclasses.replace(j, line=0) for j in back] == w.jobs


def test_the_gpu_contended_mix_offers_gpus_at_090_with_wide_gpu_units() -> None:
    """GPUs offered at 0.9 (the cores' bound the arrivals instead when they would pass 0.95), GPU
    units of 4-12 cores with one or two cards, GPU jobs in every run-time class."""
    for seed in (1, 2, 3):
        w = generate_eurora(2000, seed, mix="gpu-contended")
        offered = w.notes["offered_load"]
        assert offered["gpu"] == pytest.approx(0.9, abs=1e-3) or offered["core"] == pytest.approx(0.95, abs=1e-3)
        assert offered["core"] <= 0.95 + 1e-9 and offered["gpu"] <= 0.9 + 1e-9
        gpu_jobs = [j for j in w.jobs if j.req[2] > 0]
        assert 0.2 < len(gpu_jobs) / len(w.jobs) < 0.4
        assert {j.req[0] for j in gpu_jobs} <= {4, 6, 8, 12} and {j.req[2] for j in gpu_jobs} <= {1, 2}
        assert any(j.runtime > 3600 for j in gpu_jobs)
        assert "mix='gpu-contended'" in w.notes["generator"]
    with pytest.raises(ValueError, match="unknown mix"):
        generate_eurora(10, 1, mix="nope")
