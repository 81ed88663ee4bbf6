"""The dispatcher interface and the registry behind `--dispatcher NAME`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import CpdispatchError
from ..snapshot import Decision, Snapshot


@dataclass(frozen=True)
class Option:
    """One dispatcher option: its name, default value (whose type is the option's type) and help."""

    name: str
    default: Any
    help: str

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

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    options: ClassVar[tuple[Option, ...]] = ()

    def __init__(self, **values: Any) -> None:
        known = {o.name: o for o in self.options}
        for key in values:
            if key not in known:
                names = ", ".join(known) or "none"
                raise CpdispatchError(f"dispatcher {self.name}: unknown option '{key}' (options: {names})")
        for opt in self.options:
            setattr(self, opt.name, values.get(opt.name, opt.default))

    @abstractmethod
    def decide(self, snapshot: Snapshot) -> Decision:
        """Return the jobs to start at `snapshot.time`."""


Factory = Callable[..., Dispatcher]
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


def dispatcher_class(name: str) -> type[Dispatcher]:
    from . import load_all

    load_all()
    key = _ALIASES.get(name, name)
    if key not in _REGISTRY:
        raise CpdispatchError(f"unknown dispatcher '{name}' (known: {', '.join(sorted(all_names()))})")
    return _REGISTRY[key]


def all_names() -> list[str]:
    from . import load_all

    load_all()
    return sorted(set(_REGISTRY) | set(_ALIASES))


def aliases_of(name: str) -> list[str]:
    return sorted(a for a, n in _ALIASES.items() if n == name)


def registry() -> dict[str, type[Dispatcher]]:
    from . import load_all

    load_all()
    return dict(_REGISTRY)


def make_dispatcher(name: str, raw_options: dict[str, str] | None = None) -> Dispatcher:
    """Build a dispatcher from its name and string options (as given on the command line)."""
    cls = dispatcher_class(name)
    known = {o.name: o for o in cls.options}
    values: dict[str, Any] = {}
    for key, text in (raw_options or {}).items():
        if key not in known:
            names = ", ".join(known) or "none"
            raise CpdispatchError(f"dispatcher {cls.name}: unknown option '{key}' (options: {names})")
        values[key] = known[key].parse(text)
    return cls(**values)
