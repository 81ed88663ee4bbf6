"""`cpdispatch reproduce`: run the experiments (resumable: complete parts are kept), then write
the reproduction page from their results."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path
from typing import Any

from ..campaign.spec import versions
from ..errors import CpdispatchError
from .evaluate import Results, evaluate_all
from .experiments import (
    DIFFERENCES,
    SCALES,
    STATS_FILE,
    InstanceStudy,
    Scale,
    campaigns,
    instance_studies,
    paper_but,
    paper_options,
    traces,
)
from .page import write_page

TRACES_USED = ("KTH-SP2-1996-2.1-cln.swf.gz", "RICC-2010-2.swf.gz", "CEA-Curie-2011-2.1-cln.swf.gz")
MANIFEST = "study.json"  # what a study folder holds: a different study or version is redone
#: the experiments in the order they run: the PCP'20 findings first, the large-system ones last
ORDER = ("eurora-cp", "instances", "kit-large", "kit-sim", "eurora-cp-charged", "kit-sim-charged", "kit-sim-busy",
         "eurora14-busy", "eurora14", "ablation", "curie-large", "ablation-base", "ablation-attribution",
         "eurora-cp-busy")


def estimate(scale: Scale) -> str:
    return (f"reproduce ({scale.name}): {len(campaigns(scale))} campaigns and {len(instance_studies(scale))} "
            f"instance studies, about {scale.minutes:g} minutes on 2 cores")


def reproduce(out: str | Path, scale_name: str = "quick", workers: int | None = None,
              docs: str | Path | None = None, progress: bool | None = None) -> Path:
    """Run what is missing under `out`, evaluate every finding, write `out/reproduction.md` (and
    `docs` when given). Returns the page's path."""
    from ..campaign import run_campaign

    if scale_name not in SCALES:
        raise CpdispatchError(f"unknown scale {scale_name!r} (scales: {', '.join(SCALES)})")
    scale = SCALES[scale_name]
    missing = [n for n in TRACES_USED if not (traces() / n).is_file()]
    if missing:
        raise CpdispatchError(f"reproduce: trace(s) {', '.join(missing)} not found in {traces()} (give the folder "
                              "with --traces)")
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
        counts = run_campaign(path, root / name, workers=workers, progress=progress, take_over=True)
        if counts["failed"]:
            raise CpdispatchError(f"reproduce: {counts['failed']} run(s) of {name} failed; see {root / name}/runs "
                                  "(the same command retries them)")
    res = Results(root)
    page = write_page(evaluate_all(res), scale, root / "reproduction.md", res)
    if docs is not None:
        shutil.copyfile(page, docs)
    return page


def run_study(study: InstanceStudy, scale: Scale, out: Path) -> None:
    """Record the instances once, then replay them under the paper profile and our defaults."""
    from .. import api
    from ..instance_replay import compare
    from ..system import load_system

    manifest = json.dumps({"study": dataclasses.asdict(study), "det_time": scale.det_time, "versions": versions()},
                          sort_keys=True, default=str)
    if (out / MANIFEST).is_file() and (out / MANIFEST).read_text() != manifest:
        print(f"{study.id}: {out} holds another scale's or version's study: it is redone", flush=True)
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / MANIFEST).write_text(manifest)
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
    runs: list[tuple[str, dict[str, dict[str, str]], int]] = [
        ("paper", {n: paper_options(scale) for n in study.compared}, study.limit), ("ours", {}, study.limit)]
    if study.attribute:
        runs += [(f"paper-but-{key}", {n: paper_but(n, key, scale) for n in study.attribute_with or study.compared},
                  study.attribute) for key in DIFFERENCES]
    for profile, options, limit in runs:
        target = out / profile
        if (target / STATS_FILE).exists():
            continue
        print(f"{study.id}: replaying {limit} instances with {', '.join(options or study.compared)} ({profile}) ...",
              flush=True)
        stats = compare(recorded, list(options or study.compared), target, limit=limit, options=options,
                        progress=False)
        (target / STATS_FILE).write_text(json.dumps(stats, indent=1, default=str), encoding="utf-8")
