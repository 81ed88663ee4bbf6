"""A campaign file: the lists whose product is the set of runs, checked before any run starts.

Each run's settings are a plain, normalised dictionary; its key is a hash of those settings and
of the cpdispatch and OR-Tools versions, so the same settings always land in the same run folder
(whatever the order of the keys in the file) and a new solver version makes new runs.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import tomllib
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..system import preset_names
from ..workloads import LOAD_FACTOR_RANGE
from ..workloads.generator import MIXES

TOP_KEYS = ("name", "replicas", "jitter", "dispatchers", "predictors", "load_factors", "workloads",
            "kill_at_walltime", "charge_dispatch_time", "room", "profile", "reference")
WORKLOAD_KEYS = ("generate", "jobs", "gpu_share", "mix", "duration_factor", "path", "system", "limit_jobs", "skip_jobs",
                 "format", "label", "load_factors", "dispatchers")
DISPATCHER_KEYS = ("name", "label", "options", "profile", "predictors")
GENERATORS = ("eurora",)


@dataclass(frozen=True)
class Campaign:
    name: str
    runs: tuple[dict[str, Any], ...]  # normalised settings, one per run (see `run_settings`)
    source: str
    reference: str | None = None  # the dispatcher label the report compares the others with (default: the first)


def versions() -> dict[str, str]:
    """What a run's results depend on besides its settings (CP-SAT under time limits varies)."""
    out = {}
    for package in ("cpdispatch", "ortools"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            out[package] = "unknown"
    return out


def run_key(settings: dict[str, Any]) -> str:
    """16 hex digits of SHA-256 over the settings and the versions, keys sorted."""
    text = json.dumps({"settings": settings, "versions": versions()}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def load_campaign(path: str | Path) -> Campaign:
    """Read and check a campaign file; every error names the file and the key."""
    where = str(path)
    data = _read_toml(where, Path(path))
    _known(where, data, TOP_KEYS, "")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise InputError(where, None, "name", "a non-empty string is required")
    replicas = _int(where, "replicas", data.get("replicas", 1), 1)
    jitter = _int(where, "jitter", data.get("jitter", 0), 0)
    profile = data.get("profile")
    if profile is not None:
        profile = _str(where, "profile", profile)
    dispatchers = [_dispatcher(where, i, d, profile) for i, d in enumerate(_list(where, data, "dispatchers"))]
    labels = [d["label"] for d in dispatchers]
    if len(set(labels)) != len(labels):
        raise InputError(where, None, "dispatchers", "two dispatchers share a label: give one a `label`")
    reference = data.get("reference")
    if reference is not None and reference not in labels:
        raise InputError(where, None, "reference", f"expected a dispatcher label ({', '.join(labels)}), "
                         f"got {reference!r}")
    # default: walltime, as everywhere (api.DEFAULT_PREDICTOR; the papers' studies name theirs)
    predictors = [_str(where, f"predictors[{i}]", p) for i, p in enumerate(_list(where, data, "predictors",
                                                                                ["walltime"]))]
    factors = [_factor(where, i, x) for i, x in enumerate(_list(where, data, "load_factors", [1.0]))]
    workloads = [_workload(where, i, w, Path(path).parent) for i, w in enumerate(_list(where, data, "workloads"))]
    # a workload may have its own loads (a generator and a trace differ in natural load)
    loads = [[_factor(where, j, x, f"workloads[{i}].") for j, x in enumerate(_list(where, w, "load_factors"))]
             if "load_factors" in w else factors for i, w in enumerate(workloads)]
    for w in workloads:
        w.pop("load_factors", None)
    # a dispatcher may run a subset of the predictors (one that reads no prediction needs one);
    # kept out of the run settings, so the keys of runs made without the subset stay the same
    only = {d["label"]: _subset(where, f"dispatchers[{i}].predictors", d.pop("predictors"), predictors,
                                "predictor names")
            for i, d in enumerate(dispatchers) if "predictors" in d}
    # a workload may run a subset of the dispatchers, by label (a costly one only where it is affordable)
    chosen = [(_subset(where, f"workloads[{i}].dispatchers", w.pop("dispatchers"), labels, "dispatcher labels")
               if "dispatchers" in w else labels)
              for i, w in enumerate(workloads)]
    kill, room = _bool(where, data, "kill_at_walltime"), _bool(where, data, "room")
    charge = _bool(where, data, "charge_dispatch_time")
    _check_names(where, dispatchers, predictors, workloads)
    runs = tuple(
        {"workload": w, "replica": k, "jitter": jitter if "path" in w else 0, "dispatcher": d, "predictor": p,
         "load_factor": x, "kill_at_walltime": kill,
         **({"room": True} if room else {}),  # absent when off: the keys of earlier campaigns stay
         **({"charge_dispatch_time": True} if charge else {})}
        for w, wl_factors, wl_labels in zip(workloads, loads, chosen, strict=True)
        for k in range(1, (replicas if "generate" in w or jitter else 1) + 1)
        for d in dispatchers if d["label"] in wl_labels
        for p in predictors if p in only.get(d["label"], predictors) for x in wl_factors
    )
    return Campaign(name, runs, where, reference)


def _read_toml(where: str, path: Path) -> dict[str, Any]:
    """The file's top table; a missing, unreadable or malformed file is an error in the same
    form as a bad key, so the command reports both alike."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(where, None, None, "no such campaign file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(where, None, None, f"cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(where, None, None, f"invalid TOML: {exc}") from None


def _subset(where: str, key: str, value: object, known: list[str], what: str) -> list[str]:
    """`value` as a non-empty list of some of `known` (the campaign's `what`s: "dispatcher labels",
    "predictor names"); else an error naming `key`."""
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise InputError(where, None, key, f"expected a non-empty list of {what}")
    unknown = [v for v in value if v not in known]
    if unknown:
        raise InputError(where, None, key, f"not a {what.split()[0]} of the campaign: {', '.join(unknown)} "
                         f"(known: {', '.join(known)})")
    return value


def _known(where: str, table: dict[str, Any], keys: tuple[str, ...], prefix: str) -> None:
    for key in table:
        if key not in keys:
            guess = difflib.get_close_matches(key, keys, n=1)
            hint = f"did you mean '{guess[0]}'? " if guess else ""
            raise InputError(where, None, prefix + key, f"unknown key ({hint}known: {', '.join(keys)})")


def _list(where: str, data: dict[str, Any], key: str, default: list[Any] | None = None) -> list[Any]:
    value = data.get(key, default)
    if not isinstance(value, list) or not value:
        raise InputError(where, None, key, "a non-empty list is required")
    return value


def _int(where: str, key: str, value: object, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise InputError(where, None, key, f"expected an integer >= {least}, got {value!r}")
    return value


def _bool(where: str, data: dict[str, Any], key: str) -> bool:
    value = data.get(key, False)
    if not isinstance(value, bool):
        raise InputError(where, None, key, f"expected true or false, got {value!r}")
    return value


def _str(where: str, key: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise InputError(where, None, key, f"expected a non-empty string, got {value!r}")
    return value


def _factor(where: str, i: int, value: object, prefix: str = "") -> float:
    low, high = LOAD_FACTOR_RANGE
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise InputError(where, None, f"{prefix}load_factors[{i}]",
                         f"expected a number from {low:g} to {high:g}, got {value!r}")
    return float(value)


def _dispatcher(where: str, i: int, entry: object, profile: str | None = None) -> dict[str, Any]:
    """A name, or {name, label, options, profile}: options as strings (what -o takes), sorted. A
    profile (the entry's, else the campaign's) becomes the option `profile` of the dispatchers that
    have one (the CP dispatchers); the campaign's leaves the others as they are."""
    if isinstance(entry, str):
        entry = {"name": entry}
    if not isinstance(entry, dict):
        raise InputError(where, None, f"dispatchers[{i}]", "expected a name or a table {name, label, options}")
    _known(where, entry, DISPATCHER_KEYS, f"dispatchers[{i}].")
    name = _str(where, f"dispatchers[{i}].name", entry.get("name"))
    options = entry.get("options", {})
    if not isinstance(options, dict):
        raise InputError(where, None, f"dispatchers[{i}].options", "expected a table of option = value")
    own = entry.get("profile")
    if own is not None:
        options = {**options, "profile": _str(where, f"dispatchers[{i}].profile", own)}
    elif profile is not None and "profile" not in options and _has_profile(name):
        options = {**options, "profile": profile}
    opts = {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in sorted(options.items())}
    label = _str(where, f"dispatchers[{i}].label", entry.get("label", name))
    out = {"name": name, "label": label, "options": opts}
    if "predictors" in entry:
        out["predictors"] = entry["predictors"]  # checked and removed by `load_campaign`
    return out


def _has_profile(name: str) -> bool:
    from ..dispatchers.base import dispatcher_class
    from ..errors import CpdispatchError

    try:
        return any(o.name == "profile" for o in dispatcher_class(name).options)
    except CpdispatchError:  # not a built-in dispatcher: `_check_names` says what is wrong
        return False


def _workload(where: str, i: int, entry: object, base: Path) -> dict[str, Any]:
    """{generate, jobs, system, gpu_share, mix, duration_factor} or {path, system, limit_jobs, skip_jobs,
    format}; a path relative to the campaign file's folder becomes absolute (workers may run elsewhere
    on a shared file system)."""
    key = f"workloads[{i}]"
    if not isinstance(entry, dict):
        raise InputError(where, None, key, "expected a table")
    _known(where, entry, WORKLOAD_KEYS, key + ".")
    system = _str(where, f"{key}.system", entry.get("system"))
    if system not in preset_names():  # a system file, relative to the campaign file like a trace
        found = _file(where, f"{key}.system", system, base, "no such system file or preset",
                      f" (presets: {', '.join(preset_names())})")
        system = system if Path(system).is_absolute() else str(found)
    if ("generate" in entry) == ("path" in entry):
        raise InputError(where, None, key, "give exactly one of `generate` and `path`")
    if "generate" in entry:
        kind = entry["generate"]
        if kind not in GENERATORS:
            raise InputError(where, None, f"{key}.generate", f"unknown generator {kind!r} (known: eurora)")
        jobs = _int(where, f"{key}.jobs", entry.get("jobs"), 1)
        out: dict[str, Any] = {"generate": kind, "jobs": jobs, "system": system}
        share = entry.get("gpu_share")
        if share is not None:  # the share of short jobs asking GPUs (generator default: 0.34)
            if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 1:
                raise InputError(where, None, f"{key}.gpu_share", f"expected a number from 0 to 1, got {share!r}")
            out["gpu_share"] = float(share)
        mix = entry.get("mix")
        if mix is not None:  # the generator's job mix (generator.MIXES)
            if mix not in MIXES:
                raise InputError(where, None, f"{key}.mix", f"unknown mix {mix!r} (known: {', '.join(MIXES)})")
            out["mix"] = mix
        longer = entry.get("duration_factor")
        if longer is not None:  # run times and walltimes multiplied (workloads.stretch_durations)
            if isinstance(longer, bool) or not isinstance(longer, int | float) or not longer > 0:
                raise InputError(where, None, f"{key}.duration_factor", f"expected a number > 0, got {longer!r}")
            out["duration_factor"] = float(longer)
        out["label"] = entry.get("label", f"{kind}-{jobs}" + (f"-gpu{share:g}" if share is not None else "")
                                 + (f"-{mix}" if mix is not None else "")
                                 + (f"-x{longer:g}" if longer is not None else ""))
    else:
        path = _file(where, f"{key}.path", _str(where, f"{key}.path", entry["path"]), base, "no such trace file")
        out = {"path": str(path), "system": system, "format": entry.get("format", "auto"),
               "limit_jobs": entry.get("limit_jobs"), "skip_jobs": entry.get("skip_jobs", 0)}
        if out["limit_jobs"] is not None:
            _int(where, f"{key}.limit_jobs", out["limit_jobs"], 1)
        _int(where, f"{key}.skip_jobs", out["skip_jobs"], 0)
        out["label"] = entry.get("label", path.name.split(".swf")[0].split(".csv")[0])
    _str(where, f"{key}.label", out["label"])
    for own in ("load_factors", "dispatchers"):
        if own in entry:
            out[own] = entry[own]
    return out


def _file(where: str, key: str, written: str, base: Path, missing: str, hint: str = "") -> Path:
    """The file `written` names, relative to the campaign file's folder `base`, resolved (run keys and
    workers use that); a missing one is reported as the user wrote it, not under its resolved path."""
    path = Path(written)
    if not path.is_absolute():
        path = base / path
    if not path.is_file():
        relative = "" if Path(written).is_absolute() else f" (relative to the campaign file's folder {base})"
        raise InputError(where, None, key, f"{missing}: {written}{relative}{hint}")
    return path.resolve()


def _check_names(where: str, dispatchers: list[dict[str, Any]], predictors: list[str],
                 workloads: list[dict[str, Any]]) -> None:
    """Every name and option is built once here: a typo fails now, not in the 40th run."""
    from ..dispatchers.base import make_dispatcher
    from ..errors import CpdispatchError
    from ..predictors import resolve_predictor
    from ..recorded import NAME as RECORDED
    from ..system import load_system

    for kind, build, items in (
        ("dispatchers", lambda d: d["name"] == RECORDED or make_dispatcher(d["name"], d["options"]), dispatchers),
        ("predictors", resolve_predictor, predictors),
        ("workloads", lambda w: load_system(w["system"]), workloads),
    ):
        for i, item in enumerate(items):
            try:
                build(item)
            except CpdispatchError as exc:
                raise InputError(where, None, f"{kind}[{i}]", str(exc)) from None
