"""Loading what the user names from outside the package: `module:attr` specs and installed entry
points (the dispatchers' and the predictors' plugin groups)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import CpdispatchError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint


def import_object(spec: str) -> Any:
    """`module:attr` (attr may be dotted) imported; a clear error when it does not exist."""
    import importlib

    module, _, attr = spec.partition(":")
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise CpdispatchError(f"cannot load '{spec}': {exc}") from None
    return obj


def entry_points_of(group: str) -> dict[str, EntryPoint]:
    """Installed entry points of `group`, by name (not loaded)."""
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=group)}
