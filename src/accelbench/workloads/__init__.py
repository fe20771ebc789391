"""The workload registry: built-ins register themselves with `@register`; look up by name."""

from __future__ import annotations

import fnmatch

from ..errors import WorkloadError
from .base import Batch, Workload

__all__ = ["Batch", "Workload", "get_workload", "list_workloads", "register"]

_REGISTRY: dict[str, Workload] = {}


def register(cls: type[Workload]) -> type[Workload]:
    """Class decorator: add one instance of `cls` to the registry under `cls.name`."""
    if not cls.name:
        raise ValueError(f"{cls.__name__} has no name")
    if cls.name in _REGISTRY:
        raise ValueError(f"workload {cls.name!r} is registered twice")
    _REGISTRY[cls.name] = cls()
    return cls


def _load_builtins() -> None:
    from . import seed  # noqa: F401  (registers on import)


def list_workloads(pattern: str = "*") -> list[Workload]:
    """Registered workloads whose name matches the glob `pattern`, sorted by name."""
    _load_builtins()
    return [w for name, w in sorted(_REGISTRY.items()) if fnmatch.fnmatch(name, pattern)]


def get_workload(name: str) -> Workload:
    _load_builtins()
    try:
        return _REGISTRY[name]
    except KeyError:
        valid = ", ".join(sorted(_REGISTRY))
        raise WorkloadError(f"unknown workload {name!r}; valid: {valid}") from None
