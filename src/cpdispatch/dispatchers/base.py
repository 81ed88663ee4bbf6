"""The dispatcher interface and the registry behind `--dispatcher NAME`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, ClassVar

from ..errors import CpdispatchError
from ..plugins import entry_points_of, import_object
from ..snapshot import Decision, Snapshot, as_decision
from .builtin import load_all, load_home


class Paper(Enum):
    """An option's value under `profile=paper` when it is not a value: the default, or free."""

    DEFAULT = "the default"  # the paper's set-up is the option's default
    FREE = "free"  # the option keeps the value given (a factor of the experiment, not of the paper)


@dataclass(frozen=True)
class Option:
    """One dispatcher option: its name, default value (whose type is the option's type), help,
    value under `profile=paper` (CP dispatchers) and the values it accepts (empty: any)."""

    name: str
    default: Any
    help: str
    paper: Any = Paper.DEFAULT
    choices: tuple[Any, ...] = ()

    def parse(self, text: str) -> Any:
        kind = type(self.default)
        if kind is bool:
            low = text.lower()
            if low in ("1", "true", "yes", "on"):
                return True
            if low in ("0", "false", "no", "off"):
                return False
            raise CpdispatchError(f"option {self.name}: expected true/false, got {text!r}")
        if self.default is None:
            return text
        try:
            return kind(text)
        except ValueError:
            raise CpdispatchError(f"option {self.name}: expected {kind.__name__}, got {text!r}") from None


class Dispatcher(ABC):
    """Decides, from a snapshot alone, which queued jobs start now and where.

    Subclasses declare `name`, a one-line `summary` and their `options`; option values arrive as
    keyword arguments and are stored as attributes of the same name. `decide` must not mutate the
    snapshot; any cache it keeps must not change its decisions.
    """

    name: str = ""  # per class; an instance built by an alias carries the alias
    summary: ClassVar[str] = ""
    options: ClassVar[tuple[Option, ...]] = ()

    def __init__(self, **values: Any) -> None:
        known = {o.name: o for o in self.options}
        for key in values:
            if key not in known:
                names = ", ".join(known) or "none"
                raise CpdispatchError(f"dispatcher {self.name}: unknown option '{key}' (options: {names})")
        for opt in self.options:
            value = values.get(opt.name, opt.default)
            if opt.choices and value not in opt.choices:
                raise CpdispatchError(f"dispatcher {self.name}: {opt.name} must be one of "
                                      f"{', '.join(map(str, opt.choices))}")
            setattr(self, opt.name, value)

    @abstractmethod
    def decide(self, snapshot: Snapshot) -> Decision:
        """Return the jobs to start at `snapshot.time`."""

    @property
    def weighs_jobs(self) -> bool:
        """Whether `QueuedJob.weight` enters its decisions (a per-job weighted objective); the
        Slurm driver refuses `--priority slurm` with a dispatcher that would ignore it."""
        return False


_REGISTRY: dict[str, type[Dispatcher]] = {}
_ALIASES: dict[str, str] = {}


def register(cls: type[Dispatcher], *aliases: str) -> type[Dispatcher]:
    _REGISTRY[cls.name] = cls
    for a in aliases:
        _ALIASES[a] = cls.name
    return cls


def registered(*aliases: str) -> Callable[[type[Dispatcher]], type[Dispatcher]]:
    """Class decorator: make a dispatcher available by its name (and aliases)."""

    def wrap(cls: type[Dispatcher]) -> type[Dispatcher]:
        return register(cls, *aliases)

    return wrap


#: Entry-point group through which installed packages add dispatchers (a `Dispatcher` subclass or
#: a plain function of a snapshot), listed and usable by name like the built-in ones.
ENTRY_POINT_GROUP = "cpdispatch.dispatchers"


class FunctionDispatcher(Dispatcher):
    """A plain function of a snapshot as a dispatcher: it returns the `Start`s to apply (any
    iterable; checked by `as_decision`) or a whole `Decision`. Made by `function_dispatcher`,
    which names the class."""

    function: ClassVar[Callable[[Snapshot], Any]]

    def decide(self, snapshot: Snapshot) -> Decision:
        return as_decision(type(self).function(snapshot), self.name, snapshot.time)


def function_dispatcher(fn: Callable[[Snapshot], Any], name: str | None = None) -> Dispatcher:
    label = name or getattr(fn, "__name__", "function")
    cls = type(f"FunctionDispatcher_{label}", (FunctionDispatcher,),
               {"name": label, "summary": (fn.__doc__ or "").strip().split("\n")[0], "function": staticmethod(fn)})
    return cls()


def dispatcher_class(name: str) -> type[Dispatcher]:
    load_home(name)
    key = _ALIASES.get(name, name)
    if key not in _REGISTRY:
        raise CpdispatchError(f"unknown dispatcher '{name}' (known: {', '.join(sorted(all_names()))}; or "
                              "module:attr)")
    return _REGISTRY[key]


def all_names() -> list[str]:
    load_all()
    return sorted(set(_REGISTRY) | set(_ALIASES) | set(entry_points_of(ENTRY_POINT_GROUP)))


def aliases_of(name: str) -> list[str]:
    return sorted(a for a, n in _ALIASES.items() if n == name)


def registry() -> dict[str, type[Dispatcher]]:
    load_all()
    return dict(_REGISTRY)


def make_dispatcher(name: str, raw_options: Mapping[str, Any] | None = None, *, seed: int | None = None
                    ) -> Dispatcher:
    """Build a dispatcher from its name (built-in, plugin or ``module:attr``) and options, as
    strings (the command line) or typed values (the Python API); `seed` as in `resolve_dispatcher`."""
    if ":" in name:
        disp = resolve_dispatcher(import_object(name), raw_options, seed=seed)
    else:
        load_home(name)
        found = entry_points_of(ENTRY_POINT_GROUP) if _ALIASES.get(name, name) not in _REGISTRY else {}
        if name not in found:
            return _build(dispatcher_class(name), raw_options, name, seed)
        disp = resolve_dispatcher(found[name].load(), raw_options, seed=seed, name=name)
    disp.name = name  # results name it as typed
    return disp


def _build(cls: type[Dispatcher], raw_options: Mapping[str, Any] | None, typed: str | None = None,
           seed: int | None = None) -> Dispatcher:
    """`cls` with its options parsed (and `seed` for its own `seed` option, unless given); built
    by an alias (hcp19 = hcp3), it carries the name the user `typed`, which its messages then use."""
    known = {o.name: o for o in cls.options}
    raw = dict(raw_options or {})
    if seed is not None and "seed" in known and "seed" not in raw:
        raw["seed"] = seed
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in known:
            names = ", ".join(known) or "none"
            raise CpdispatchError(f"dispatcher {typed or cls.name}: unknown option '{key}' (options: {names})")
        values[key] = known[key].parse(value if isinstance(value, str) else str(value))
    try:
        disp = cls(**values)
    except CpdispatchError as exc:  # the class's checks name the class: name what the user typed
        if typed and typed != cls.name and type(exc) is CpdispatchError:
            raise CpdispatchError(str(exc).replace(f"dispatcher {cls.name}:", f"dispatcher {typed}:", 1)) from None
        raise
    if typed and typed != cls.name:
        disp.name = typed
    return disp


def resolve_dispatcher(
    spec: Any, options: Mapping[str, Any] | None = None, *, seed: int | None = None, name: str | None = None
) -> Dispatcher:
    """A dispatcher from a name, a `Dispatcher` (instance or class) or a function of a snapshot.
    `seed` fills the dispatcher's own `seed` option when it has one and `options` does not."""
    opts = dict(options or {})
    if isinstance(spec, str):
        return make_dispatcher(spec, opts, seed=seed)
    if isinstance(spec, Dispatcher):
        if opts:
            raise CpdispatchError(f"dispatcher {spec.name} is already built: give its options to its constructor")
        return spec
    if isinstance(spec, type) and issubclass(spec, Dispatcher):
        return _build(spec, opts, seed=seed)
    if callable(spec):
        if opts:
            raise CpdispatchError(f"dispatcher {getattr(spec, '__name__', spec)!r} is a function: it takes no options")
        return function_dispatcher(spec, name)
    raise CpdispatchError(f"not a dispatcher: {spec!r} (a name, a Dispatcher, or a function of a snapshot)")
