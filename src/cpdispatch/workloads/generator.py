"""Synthetic Eurora workload (no public Eurora trace exists), shaped after the papers' description.

What it reproduces, and from where:
* queues debug / parallel / longpar with the limits of CP'14 Table 1 (debug: 2 nodes, 32 cores /
  4 GPUs, 30 min; parallel: 32 nodes, 512 / 64, 6 h; longpar: 16 nodes, 256 / 32, 24 h); a job's
  walltime never exceeds its queue's maximum time, and its run time never exceeds its walltime
  (PBS kills it there);
* run times: 93.14% under 1 h, 6.10% 1-5 h, 0.75% over 5 h (CP'19, Sect. 5);
* accelerators as CP'14 Table 6: about a third of jobs ask GPUs, under 1% MICs, never both; cores
  per unit mostly 1, else 2/4/8/16; memory per unit in MB;
* users (about 100, Zipf-like activity) each run a few applications; an application has a fixed
  shape (queue, units, per-unit request, walltime habit) and its own log-normal run time, and its
  jobs are named `<app>_<n>`, so a user/name-based predictor (the data-driven one) can learn;
* arrivals: a Poisson process with a day/night cycle whose mean rate comes from the generated
  jobs' own work, so that the core offered load is OFFERED_CORE_LOAD (the GPU load capped at
  OFFERED_GPU_LOAD) for any size and seed: busy, not saturated. Measured with `fifo` (first fit,
  walltime predictor) on 30,000 jobs, seeds 1-5 (2.8-5 days): core utilisation 0.61-0.68 over the
  submit window (0.52-0.63 including the final drain), mean wait 0.2-2.0 h, median wait 0 s-1.5 h
  (FIFO stalls behind the rare 16-32 node jobs and GPU jobs that find their node's cores taken).
  Small workloads (a few thousand jobs, under a day) are dominated by the drain of their long jobs.

Deterministic: the same (n_jobs, seed) gives identical jobs (two seeded numpy Generators: one for
the per-job draws, one for the applications' shapes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from ..job import Job
from .base import Workload

EURORA_TYPES = ("core", "mem", "gpu", "mic")  # the eurora preset's type order
NODE_CORES, NODE_MEM, NODE_ACC = 16, 16384, 2
HOUR, DAY = 3600, 86400
#: The eurora preset's capacity per type (64 nodes; 32 with two GPUs, 32 with two MICs), in
#: EURORA_TYPES order: what the offered loads are shares of.
CAPACITY = np.array([64 * NODE_CORES, 64 * NODE_MEM, 32 * NODE_ACC, 32 * NODE_ACC], dtype=float)


@dataclass(frozen=True)
class Queue:
    name: str
    max_nodes: int
    max_cores: int
    max_gpus: int  # also the MIC limit
    max_time: int


QUEUES = {
    "debug": Queue("debug", 2, 32, 4, 30 * 60),
    "parallel": Queue("parallel", 32, 512, 64, 6 * HOUR),
    "longpar": Queue("longpar", 16, 256, 32, 24 * HOUR),
}

# Run-time classes: (share of jobs, queue choice, range of an application's median run time [s]).
# Medium and long shares are raised by 1 / (1 - FAILED_SHARE): failed jobs of any class end short.
CLASSES = {
    "short": (0.9294, {"debug": 0.42, "parallel": 0.53, "longpar": 0.05}, (20, 15 * 60)),
    "medium": (0.0629, {"parallel": 0.8, "longpar": 0.2}, (1.3 * HOUR, 3 * HOUR)),
    "long": (0.0077, {"longpar": 1.0}, (6 * HOUR, 14 * HOUR)),
}
# Accelerator kind per class (none, gpu, mic; a job asks one kind at most): a third of all jobs ask
# GPUs, fewer among the long ones (long, wide GPU jobs would make GPUs the bottleneck).
ACCEL_KINDS = ("none", "gpu", "mic")
ACCELERATORS = {"short": (0.652, 0.34, 0.008), "medium": (0.912, 0.08, 0.008), "long": (0.912, 0.08, 0.008)}
CORES_PER_UNIT = ((1, 0.62), (2, 0.08), (4, 0.04), (8, 0.16), (16, 0.10))
# Accelerator jobs leave cores free on their node (a 16-core GPU unit would need an empty GPU node,
# which CPU jobs rarely leave under first fit: FIFO then stalls behind it); they are also narrower
# (at most 8 units), and short ones are shorter than CPU ones (medium and long keep their class).
ACCEL_CORES_PER_UNIT = ((1, 0.35), (2, 0.25), (4, 0.25), (8, 0.15))
ACCEL_ONE = 0.85  # share of accelerator applications using one card per unit (else two)
ACCEL_MAX_UNITS = 8
ACCEL_SPEEDUP = 0.3
UNITS = {
    "debug": ((1, 0.85), (2, 0.15)),
    "parallel": ((1, 0.6), (2, 0.15), (4, 0.13), (8, 0.085), (16, 0.03), (32, 0.005)),
    "longpar": ((1, 0.6), (2, 0.2), (4, 0.12), (8, 0.06), (16, 0.02)),
}
APP_NAMES = {
    "none": ("lammps", "qe_pw", "cp2k", "wrf", "openfoam", "python", "matlab", "postproc", "hpl",
             "mpi_test", "rstats", "bash", "gromacs", "namd", "abinit", "siesta"),
    "gpu": ("cuda_md", "tf_train", "gromacs_gpu", "namd_cuda", "lattice_gpu", "torch", "amber_gpu"),
    "mic": ("mic_offload", "phi_bench", "lammps_mic"),
}
N_USERS = 100
ZIPF_S = 1.1  # user activity ~ rank^-s
FAILED_SHARE = 0.03  # jobs that crash within two minutes, whatever their application
# Offered load = requested amount x run time / (capacity x submit span); see the module docstring for
# what fifo achieves with it. GPU load above ~0.45 makes FIFO stall on GPU nodes whose cores are taken.
OFFERED_CORE_LOAD = 0.68
OFFERED_GPU_LOAD = 0.45
DAY_AMPLITUDE = 0.5  # arrival rate = mean x (1 + A sin(...)): peak at 15:00, trough at 03:00


@dataclass(frozen=True)
class Mix:
    """What sets a generated mix apart: accelerator shares per run-time class (none, gpu, mic),
    cores per GPU unit, the share of one-card GPU units, the short GPU jobs' speed-up, and the
    offered loads of cores and GPUs: arrivals are spread so that neither is passed and one is met."""

    accelerators: dict[str, tuple[float, float, float]]
    gpu_cores: tuple[tuple[int, float], ...]
    gpu_one: float
    gpu_speedup: float
    core_load: float
    gpu_load: float


MIXES = {
    # CP'14 Table 6 and CP'19 Sect. 5 (the module docstring)
    "eurora": Mix(ACCELERATORS, ACCEL_CORES_PER_UNIT, ACCEL_ONE, ACCEL_SPEEDUP, OFFERED_CORE_LOAD, OFFERED_GPU_LOAD),
    # GPUs contended and placement nontrivial: 30% of the jobs of every class ask GPUs, with 4-12
    # cores per unit (a 12-core GPU unit needs a GPU node that CPU jobs left mostly free), one or
    # two cards, no speed-up (GPU jobs as long as the others); arrivals set the GPU offered load at
    # 0.9 unless the cores' would then pass 0.95 (seeds 1-3, 3,000 jobs: cores 0.55-0.72).
    "gpu-contended": Mix(
        {"short": (0.692, 0.3, 0.008), "medium": (0.692, 0.3, 0.008), "long": (0.692, 0.3, 0.008)},
        ((4, 0.3), (6, 0.2), (8, 0.3), (12, 0.2)), 0.6, 1.0, 0.95, 0.9),
}


@dataclass
class _App:
    name: str
    queue: str
    units: int
    req: tuple[int, int, int, int]
    median: float
    sigma: float
    walltime: int
    variants: int
    variant_factor: tuple[float, ...]


def _pick(rng: np.random.Generator, table: tuple[tuple[int, float], ...]) -> int:
    values, weights = zip(*table)
    return int(rng.choice(values, p=np.asarray(weights) / sum(weights)))


def _draw(weights: tuple[float, ...], u: float) -> int:
    """Index drawn from `weights` with the uniform number u in [0, 1)."""
    acc, total = 0.0, sum(weights)
    for i, w in enumerate(weights):
        acc += w
        if u * total < acc:
            return i
    return len(weights) - 1


def _round_up(seconds: float, step: int) -> int:
    return int(math.ceil(seconds / step) * step)


def _make_app(
    rng: np.random.Generator, klass: str, accel: str, queue_name: str, habit: float, mix: Mix
) -> _App:
    """One application of a user: fixed shape, walltime habit and run-time distribution."""
    q = QUEUES[queue_name]
    cores = _pick(rng, CORES_PER_UNIT if accel == "none" else mix.gpu_cores if accel == "gpu" else ACCEL_CORES_PER_UNIT)
    units = _pick(rng, UNITS[queue_name])
    acc = 0
    if accel != "none":
        acc = 1 if rng.random() < (mix.gpu_one if accel == "gpu" else ACCEL_ONE) else 2
        units = min(units, q.max_gpus // acc, ACCEL_MAX_UNITS)
    units = max(1, min(units, q.max_nodes, q.max_cores // cores))
    mem = min(NODE_MEM - 1024, int(cores * rng.choice((256, 512, 900)) + rng.integers(0, 8) * 128))
    req = (cores, mem, acc if accel == "gpu" else 0, acc if accel == "mic" else 0)
    lo, hi = CLASSES[klass][2]
    median = float(math.exp(rng.uniform(math.log(lo), math.log(hi))))
    if accel != "none" and klass == "short":
        median *= mix.gpu_speedup if accel == "gpu" else ACCEL_SPEEDUP
    sigma = float(rng.uniform(0.15, 0.5))
    if rng.random() < habit:
        walltime = q.max_time  # as CP'19 notes, users mostly ask the queue's maximum
    else:
        want = median * math.exp(2 * sigma) * rng.uniform(1.2, 2.0)
        walltime = min(q.max_time, _round_up(want, 300 if want < HOUR else 1800))
    variants = int(rng.integers(1, 7))
    factors = tuple(float(x) for x in np.exp(rng.normal(0.0, 0.15, size=variants)))
    base = str(rng.choice(APP_NAMES[accel]))
    return _App(base, queue_name, units, req, median, sigma, walltime, variants, factors)


def _arrivals(rng: np.random.Generator, n: int, mean_rate: float) -> np.ndarray:
    """n arrival times of a Poisson process of rate mean_rate x (1 + A sin(2 pi (t/day - 0.375)))
    (peak at 15:00), by thinning a process of the peak rate."""
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    peak = mean_rate * (1 + DAY_AMPLITUDE)
    out: list[np.ndarray] = []
    got, t0 = 0, 0.0
    while got < n:
        m = int((n - got) * (1 + DAY_AMPLITUDE) * 1.2) + 16
        t = t0 + np.cumsum(rng.exponential(1.0 / peak, size=m))
        keep = rng.random(m) < (1 + DAY_AMPLITUDE * np.sin(2 * np.pi * (t / DAY - 0.375))) / (1 + DAY_AMPLITUDE)
        out.append(t[keep])
        got += int(keep.sum())
        t0 = float(t[-1])
    return np.floor(np.concatenate(out)[:n]).astype(np.int64)


def accelerator_shares(
    gpu_share: float | None, base: dict[str, tuple[float, float, float]] = ACCELERATORS
) -> dict[str, tuple[float, float, float]]:
    """Per run-time class, the (none, gpu, mic) shares; `gpu_share` replaces the short jobs' GPU
    share (0.34 by default) and scales the medium and long ones alike (MIC shares unchanged)."""
    if gpu_share is None:
        return base
    if not 0 <= gpu_share <= 1 - base["short"][2]:
        raise ValueError(f"gpu_share must be in [0, {1 - base['short'][2]}], got {gpu_share}")
    scale = gpu_share / base["short"][1]
    out = {}
    for klass, (_, gpu, mic) in base.items():
        g = min(1 - mic, gpu * scale)
        out[klass] = (1 - mic - g, g, mic)
    return out


class _Draws(NamedTuple):
    """Every per-job random draw, made up front in a fixed order: what makes a seed reproducible."""

    habits: np.ndarray  # per user, the taste for asking the queue maximum
    user_ids: np.ndarray
    users: np.ndarray
    klass_of: np.ndarray
    accel_u: np.ndarray
    queue_u: np.ndarray
    variant_u: np.ndarray
    failed_u: np.ndarray
    fail_run: np.ndarray
    noise: np.ndarray


def _per_job_draws(rng: np.random.Generator, n_jobs: int) -> _Draws:
    ranks = np.arange(1, N_USERS + 1, dtype=float)
    user_p = ranks**-ZIPF_S / (ranks**-ZIPF_S).sum()
    habits = rng.uniform(0.2, 0.8, size=N_USERS)
    user_ids = rng.permutation(np.arange(1, N_USERS + 1))
    users = rng.choice(N_USERS, size=n_jobs, p=user_p)
    klass_of = rng.choice(len(CLASSES), size=n_jobs, p=[share for share, _, _ in CLASSES.values()])
    accel_u, queue_u, variant_u, failed_u, fail_run = (rng.random(n_jobs) for _ in range(5))
    return _Draws(habits, user_ids, users, klass_of, accel_u, queue_u, variant_u, failed_u, fail_run,
                  rng.standard_normal(n_jobs))


def _job_shapes(
    d: _Draws, app_rng: np.random.Generator, shares: dict[str, tuple[float, float, float]], spec: Mix
) -> tuple[list[tuple[int, str, _App, int, int]], int]:
    """Per job (user, queue, application, variant, run time), and the number of applications: a
    user's application of a (class, accelerator, queue) is drawn when first needed, then reused."""
    klasses = list(CLASSES)
    apps: dict[tuple[int, str, str, str], _App] = {}
    names_used: dict[tuple[int, str], int] = {}
    shapes: list[tuple[int, str, _App, int, int]] = []
    for i in range(len(d.users)):
        user, klass = int(d.users[i]), klasses[d.klass_of[i]]
        accel = ACCEL_KINDS[_draw(shares[klass], float(d.accel_u[i]))]
        qtable = CLASSES[klass][1]
        queue = list(qtable)[_draw(tuple(qtable.values()), float(d.queue_u[i]))]
        app = apps.get((user, klass, accel, queue))
        if app is None:
            app = _make_app(app_rng, klass, accel, queue, float(d.habits[user]), spec)
            serial = names_used.get((user, app.name), 0) + 1
            names_used[(user, app.name)] = serial
            if serial > 1:  # the user's second application with this base name: keep names distinct
                app = replace(app, name=f"{app.name}{serial}")
            apps[(user, klass, accel, queue)] = app
        variant = int(d.variant_u[i] * app.variants)
        if d.failed_u[i] < FAILED_SHARE:
            run = 1 + 119 * float(d.fail_run[i])
        else:
            run = app.median * app.variant_factor[variant] * math.exp(app.sigma * float(d.noise[i]))
        shapes.append((user, queue, app, variant, min(app.walltime, int(run))))
    return shapes, len(apps)


def generate_eurora(n_jobs: int, seed: int, gpu_share: float | None = None, mix: str = "eurora") -> Workload:
    """`n_jobs` synthetic Eurora jobs (ids 1..n in submit order), types core, mem, gpu, mic.

    `gpu_share`: share of short jobs asking GPUs (default: the mix's), for workloads where GPUs are
    in heavy demand; arrivals still keep the offered GPU load at most the mix's. `mix`: one of
    `MIXES` ("gpu-contended": GPUs offered at 0.9 and GPU units of 4-12 cores)."""
    if n_jobs < 0:
        raise ValueError(f"n_jobs must be >= 0, got {n_jobs}")
    if mix not in MIXES:
        raise ValueError(f"unknown mix {mix!r} (known: {', '.join(MIXES)})")
    spec = MIXES[mix]
    shares = accelerator_shares(gpu_share, spec.accelerators)
    rng = np.random.default_rng(seed)
    draws = _per_job_draws(rng, n_jobs)
    # application shapes come from their own generator, drawn as first needed
    shapes, n_apps = _job_shapes(draws, np.random.default_rng([seed, 1]), shares, spec)
    work = np.zeros(len(EURORA_TYPES))
    for _, _, app, _, run in shapes:
        work += np.asarray(app.req, dtype=float) * (app.units * run)
    span = max(work[0] / (spec.core_load * CAPACITY[0]), work[2] / (spec.gpu_load * CAPACITY[2]), 1.0)
    submits = _arrivals(rng, n_jobs, n_jobs / span)
    jobs = [
        Job(
            id=str(i + 1), submit=int(submits[i]), units=app.units, req=app.req, walltime=app.walltime,
            runtime=run, user=f"u{draws.user_ids[user]:03d}", name=f"{app.name}_{variant + 1}", queue=queue,
        )
        for i, (user, queue, app, variant, run) in enumerate(shapes)
    ]
    notes = {
        "format": "generated",
        "generator": f"eurora(n_jobs={n_jobs}, seed={seed}"
                     + (f", gpu_share={gpu_share}" if gpu_share is not None else "")
                     + (f", mix={mix!r})" if mix != "eurora" else ")"),
        "offered_load": {t: round(float(w / (span * c)), 4) for t, w, c in zip(EURORA_TYPES, work, CAPACITY)},
        "applications": n_apps,
    }
    return Workload(source=f"generated:eurora:{n_jobs}:{seed}", jobs=jobs, notes=notes)
