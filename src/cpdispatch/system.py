"""Systems: nodes with a capacity per resource type, read from TOML files or package presets."""

from __future__ import annotations

import difflib
import functools
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np

from .errors import InputError

PRESETS_PACKAGE = "cpdispatch.presets"


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """`count` identical nodes named `<group>-<i>`."""

    group: str
    count: int
    resources: dict[str, int]


@dataclass(frozen=True)
class System:
    """An ordered list of nodes; capacities as an (nodes x types) integer array.

    `types` fixes the order of every per-type vector in the project (job requests, free amounts).
    `swf_processor` says what one SWF processor becomes as a job unit (per-type amounts).
    """

    name: str
    groups: tuple[NodeGroup, ...]
    swf_processor: dict[str, int] = field(default_factory=lambda: {"core": 1})
    start_time: int = 0
    types: tuple[str, ...] = ()
    capacity: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    node_names: tuple[str, ...] = ()
    _max_units: dict[tuple[tuple[int, ...], bool], int] = field(
        default_factory=dict, init=False, repr=False, compare=False)  # asked once per job of a trace

    @staticmethod
    def build(
        name: str,
        groups: list[NodeGroup] | tuple[NodeGroup, ...],
        swf_processor: dict[str, int] | None = None,
        start_time: int = 0,
    ) -> System:
        types: list[str] = []
        for g in groups:
            for t in g.resources:
                if t not in types:
                    types.append(t)
        rows: list[list[int]] = []
        names: list[str] = []
        for g in groups:
            row = [int(g.resources.get(t, 0)) for t in types]
            for i in range(1, g.count + 1):
                rows.append(row)
                names.append(f"{g.group}-{i}")
        cap = np.array(rows, dtype=np.int64).reshape(len(rows), len(types))
        cap.setflags(write=False)
        return System(
            name=name,
            groups=tuple(groups),
            swf_processor=dict(swf_processor or {"core": 1}),
            start_time=start_time,
            types=tuple(types),
            capacity=cap,
            node_names=tuple(names),
        )

    @classmethod
    def preset(cls, name: str) -> System:
        """A bundled system description by name (`preset_names()`: eurora, hpc2n, ...)."""
        if name not in preset_names():
            raise InputError(name, None, None, f"no such preset (presets: {', '.join(preset_names())})")
        return load_system(name)

    @classmethod
    def from_toml(cls, path: str | Path) -> System:
        """A system described in a TOML file (the format of the presets)."""
        return read_system_file(str(path))

    @property
    def n_nodes(self) -> int:
        return int(self.capacity.shape[0])

    @property
    def totals(self) -> tuple[int, ...]:
        return tuple(int(x) for x in self.capacity.sum(axis=0))

    def type_index(self, name: str) -> int:
        return self.types.index(name)

    @functools.cached_property
    def node_index(self) -> dict[str, int]:
        """Each node's index by its name (a `Start` may name its nodes)."""
        return {name: i for i, name in enumerate(self.node_names)}

    def units_fitting(self, free: np.ndarray, req: tuple[int, ...], one_per_node: bool = False) -> np.ndarray:
        """How many units of per-unit request `req` fit on each node given `free` (nodes x types)."""
        return units_fitting(free, req, one_per_node)

    def max_units(self, req: tuple[int, ...], one_per_node: bool = False) -> int:
        """Units of `req` that fit on the empty system (AccaSim's CHECK_REQUEST test); 0 for a
        request of nothing, which no dispatcher could place."""
        key = (req, one_per_node)
        fit = self._max_units.get(key)
        if fit is None:
            fit = self._max_units[key] = int(units_fitting(self.capacity, req, one_per_node).sum()) \
                if any(a > 0 for a in req) else 0
        return fit

    def unfit_reason(self, units: int, req: tuple[int, ...], fit: int, one_per_node: bool = False) -> str:
        """Why a job of `units` units of `req` (`fit` = max_units(req) < units) can never run."""
        if not any(a > 0 for a in req):
            return "requests no resource (every amount is 0)"
        want = ", ".join(f"{t} {a}" for t, a in zip(self.types, req) if a)
        return (f"needs {units} unit{'s' if units != 1 else ''} of {{{want}}}{' on distinct nodes' * one_per_node} "
                f"but at most {fit} fit on the empty system")

    def to_toml(self) -> str:
        lines = [f'name = "{self.name}"', f"start_time = {self.start_time}", ""]
        for g in self.groups:
            res = ", ".join(f"{k} = {v}" for k, v in g.resources.items())
            lines += ["[[nodes]]", f'group = "{g.group}"', f"count = {g.count}", f"resources = {{ {res} }}", ""]
        proc = ", ".join(f"{k} = {v}" for k, v in self.swf_processor.items())
        lines += ["[swf]", f"processor = {{ {proc} }}", ""]
        return "\n".join(lines)

    def __repr__(self) -> str:
        """Name, node count and per-type totals (`describe()` lists the node groups)."""
        totals = ", ".join(f"{t}={v:,}" for t, v in zip(self.types, self.totals))
        return f"System({self.name!r}, {self.n_nodes:,} nodes, {totals})"

    def describe(self) -> str:
        totals = ", ".join(f"{t} {v:,}" for t, v in zip(self.types, self.totals))
        out = [f"{self.name}: {self.n_nodes:,} nodes ({totals})"]
        for g in self.groups:
            res = ", ".join(f"{k} {v:,}" for k, v in g.resources.items())
            out.append(f"  {g.count:>6,} x {g.group}: {res}")
        return "\n".join(out)


_UNLIMITED = np.iinfo(np.int64).max // 4


def units_fitting(free: np.ndarray, req: tuple[int, ...], one_per_node: bool = False) -> np.ndarray:
    """Per node (the last axis of `free` is the type), the number of units of `req` that fit in
    `free` (at most 1 for a job whose units need distinct nodes); a zero request never limits."""
    out: np.ndarray | None = None
    for k, a in enumerate(req):
        if a > 0:
            col = free[..., k] // a
            out = col if out is None else np.minimum(out, col)
    if out is None:
        out = np.full(free.shape[:-1], _UNLIMITED, dtype=np.int64)
    return np.minimum(out, 1) if one_per_node else out


#: The largest amount or start time a system file may hold (as for traces), and the most nodes.
MAX_AMOUNT = 1 << 40
MAX_NODES = 1 << 24
#: The keys of a system file, per table (anything else is a typo, reported with a guess).
KEYS = {"": ("name", "start_time", "nodes", "swf"), "nodes": ("group", "count", "resources"),
        "swf": ("processor",)}


def _positive_int(path: str, where: str, value: object, most: int = MAX_AMOUNT) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(path, None, where, f"expected a non-negative integer, got {value!r}")
    if value > most:
        raise InputError(path, None, where, f"{value} is above the largest accepted value, {most:,}")
    return value


def _check_keys(path: str, text: str, table: dict[str, object], kind: str, where: str) -> None:
    """An unknown key is an error naming it, its line when it can be found, and a guess."""
    for key in table:
        if key not in KEYS[kind]:
            guess = difflib.get_close_matches(key, KEYS[kind], n=1)
            hint = f"did you mean '{guess[0]}'? " if guess else ""
            line = next((i for i, ln in enumerate(text.splitlines(), 1)
                         if ln.strip().startswith((f"{key} ", f"{key}=", f'"{key}"'))), None)
            raise InputError(path, line, f"{where}{key}", f"unknown key ({hint}known: {', '.join(KEYS[kind])})")


def parse_system(text: str, path: str = "<system>") -> System:
    """Parse the TOML schema of the architecture page."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(path, getattr(exc, "lineno", None), None, f"invalid TOML: {exc}") from None
    _check_keys(path, text, data, "", "")
    name = data.get("name", Path(path).stem)
    if not isinstance(name, str):
        raise InputError(path, None, "name", "expected a string")
    nodes = data.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        raise InputError(path, None, "nodes", "at least one [[nodes]] table is required")
    groups: list[NodeGroup] = []
    seen: set[str] = set()
    for i, entry in enumerate(nodes, 1):
        if not isinstance(entry, dict):
            raise InputError(path, None, f"nodes[{i}]", "expected a table")
        _check_keys(path, text, entry, "nodes", f"nodes[{i}].")
        group = entry.get("group", f"node{i}" if len(nodes) > 1 else "node")
        if not isinstance(group, str) or not group:
            raise InputError(path, None, f"nodes[{i}].group", "expected a non-empty string")
        if group in seen:
            raise InputError(path, None, f"nodes[{i}].group", f"group '{group}' appears twice")
        seen.add(group)
        count = _positive_int(path, f"nodes[{i}].count", entry.get("count", 1), MAX_NODES)
        res = entry.get("resources")
        if not isinstance(res, dict) or not res:
            raise InputError(path, None, f"nodes[{i}].resources", "expected a table of type = amount")
        resd = {str(k): _positive_int(path, f"nodes[{i}].resources.{k}", v) for k, v in res.items()}
        if count:
            groups.append(NodeGroup(group, count, resd))
    if not groups:
        raise InputError(path, None, "nodes", "the system has no nodes")
    if sum(g.count for g in groups) > MAX_NODES:
        raise InputError(path, None, "nodes", f"more than {MAX_NODES:,} nodes in all")
    swf = data.get("swf", {})
    if isinstance(swf, dict):
        _check_keys(path, text, swf, "swf", "swf.")
    proc = swf.get("processor", {"core": 1}) if isinstance(swf, dict) else None
    if not isinstance(proc, dict) or not proc:
        raise InputError(path, None, "swf.processor", "expected a table of type = amount")
    procd = {str(k): _positive_int(path, f"swf.processor.{k}", v) for k, v in proc.items()}
    start = _positive_int(path, "start_time", data.get("start_time", 0))
    system = System.build(name, groups, procd, start)
    unknown = [t for t, a in procd.items() if a and t not in system.types]
    if unknown or not any(procd.values()):
        why = (f"names {', '.join(unknown)}, which no node has" if unknown
               else "requests nothing (every SWF job would ask for no resource)")
        raise InputError(path, None, "swf.processor", f"{why}; the types are {', '.join(system.types)}")
    return system


def preset_names() -> list[str]:
    files = resources.files(PRESETS_PACKAGE)
    return sorted(p.name[:-5] for p in files.iterdir() if p.name.endswith(".toml"))


def load_system(name_or_path: str) -> System:
    """A preset name or a path to a TOML file."""
    if name_or_path in preset_names():
        text = (resources.files(PRESETS_PACKAGE) / f"{name_or_path}.toml").read_text()
        return parse_system(text, f"preset {name_or_path}")
    if not Path(name_or_path).exists():
        raise InputError(
            name_or_path, None, None,
            f"no such system file or preset (presets: {', '.join(preset_names())})",
        )
    return read_system_file(name_or_path)


def read_system_file(path: str) -> System:
    """A system TOML file; any reading problem is one InputError."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(path, None, None, "no such system file") from None
    except IsADirectoryError:
        raise InputError(path, None, None, "is a folder, expected a system TOML file") from None
    except UnicodeDecodeError:
        raise InputError(path, None, None, "not a text file, expected a system TOML file") from None
    except OSError as exc:
        raise InputError(path, None, None, f"cannot read: {exc.strerror}") from None
    return parse_system(text, path)
