"""`cpdispatch reproduce`: run the experiments (resumable: complete parts are kept), then write
the reproduction page from their results."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from ..errors import CpdispatchError
from .experiments import SCALES, InstanceStudy, Scale, campaigns, instance_studies

STATS_FILE = "stats.json"
#: the experiments in the order they run: the PCP'20 findings first, the large-system ones last
ORDER = ("eurora-cp", "instances", "kit-large", "ablation", "eurora14", "curie-large")


def estimate(scale: Scale) -> str:
    return (f"reproduce ({scale.name}): {len(campaigns(scale))} campaigns and {len(instance_studies(scale))} "
            f"instance studies, about {scale.minutes:g} minutes on 2 cores")


def reproduce(out: str | Path, scale_name: str = "quick", workers: int | None = None,
              docs: str | Path | None = None, progress: bool | None = None) -> Path:
    """Run what is missing under `out`, evaluate every finding, write `out/reproduction.md` (and
    `docs` when given). Returns the page's path."""
    from ..campaign import run_campaign
    from .evaluate import evaluate_all
    from .page import write_page

    if scale_name not in SCALES:
        raise CpdispatchError(f"unknown scale {scale_name!r} (scales: {', '.join(SCALES)})")
    scale = SCALES[scale_name]
    root = Path(out)
    try:
        (root / "campaigns").mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CpdispatchError(f"--out {out}: cannot create it ({exc.strerror})") from None
    print(estimate(scale), flush=True)
    texts = campaigns(scale)
    studies = {s.id: s for s in instance_studies(scale)}
    for name in sorted([*texts, *studies], key=lambda n: ORDER.index(n) if n in ORDER else len(ORDER)):
        if name in studies:
            run_study(studies[name], scale, root / name)
            continue
        path = root / "campaigns" / f"{name}.toml"
        path.write_text(texts[name], encoding="utf-8")
        counts = run_campaign(path, root / name, workers=workers, progress=progress)
        if counts["failed"]:
            raise CpdispatchError(f"reproduce: {counts['failed']} run(s) of {name} failed; see {root / name}/runs "
                                  "(the same command retries them)")
    rows = evaluate_all(root, scale)
    page = write_page(rows, scale, root / "reproduction.md")
    if docs is not None:
        shutil.copyfile(page, docs)
    return page


def paper_options(scale: Scale) -> dict[str, str]:
    return {"profile": "paper", "deterministic_time": str(scale.det_time)}


def run_study(study: InstanceStudy, scale: Scale, out: Path) -> None:
    """Record the instances once, then replay them under the paper profile and our defaults."""
    from .. import api
    from ..instances import compare
    from ..system import load_system

    out.mkdir(parents=True, exist_ok=True)
    recorded = out / "instances.jsonl.gz"
    if not recorded.exists():
        system = load_system(study.system)
        w = study.workload
        if "generate" in w:
            from ..workloads.generator import generate_eurora

            workload: Any = generate_eurora(w["jobs"], w["seed"])
        else:
            workload = api.read_workload(w["path"], system, limit=w["limit"], skip=w["skip"])
        print(f"{study.id}: recording the instances of {study.recorder} (paper profile) ...", flush=True)
        tmp = out / "instances.partial.jsonl.gz"
        api.simulate(system, workload, study.recorder, "walltime", paper_options(scale),
                     load_factor=study.load_factor, record_instances=tmp)
        os.replace(tmp, recorded)
    for profile in ("paper", "ours"):
        target = out / profile
        if (target / STATS_FILE).exists():
            continue
        print(f"{study.id}: replaying {study.limit} instances with {', '.join(study.compared)} ({profile}) ...",
              flush=True)
        options = {n: paper_options(scale) for n in study.compared} if profile == "paper" else {}
        stats = compare(recorded, list(study.compared), target, limit=study.limit, options=options, progress=False)
        (target / STATS_FILE).write_text(json.dumps(stats, indent=1, default=str), encoding="utf-8")
