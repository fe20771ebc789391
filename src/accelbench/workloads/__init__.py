"""The workload registry: built-ins register themselves with `@register`; look up by name."""

from __future__ import annotations

import difflib
import fnmatch
from dataclasses import dataclass

from ..errors import WorkloadError
from .base import Batch, Workload

__all__ = [
    "Batch",
    "Workload",
    "WorkloadRef",
    "get_workload",
    "list_workloads",
    "load_workload",
    "register",
]

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
    from . import llm, seed, zoo  # noqa: F401  (they register on import)


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
        near = difflib.get_close_matches(name, list(_REGISTRY), n=1)
        guess = f" (did you mean {near[0]}?)" if near else ""
        raise WorkloadError(f"unknown workload {name!r}{guess}; valid: {valid}") from None


@dataclass(frozen=True)
class WorkloadRef:
    """How to find a workload again in another process: a registered name, or a custom model
    reference (FILE.py:factory or package.module:factory) with its options, or an nn.Module
    object (`from_module`)."""

    name: str
    options: object = None  # a workloads.custom.ModelOptions for a custom nn.Module

    @classmethod
    def from_module(cls, model: object, options: object) -> WorkloadRef:
        """An nn.Module object with its `ModelOptions` (the input shape of one sample, its
        classes or loss): pickled into the temp folder, so that, like every model of the
        user's, it runs in worker processes (workloads/module_file)."""
        from .module_file import save_module

        return cls(save_module(model, options), options)

    @property
    def custom(self) -> bool:
        """A model of the user's: FILE.py:factory, package.module:factory, or a FILE.py whose
        factory is missing (which loading says, with the callables it finds there)."""
        return ":" in self.name or self.name.endswith(".py")


def load_workload(ref: WorkloadRef) -> Workload:
    if not ref.custom:
        return get_workload(ref.name)
    from .custom import ModelOptions, load_custom

    options = ref.options if isinstance(ref.options, ModelOptions) else ModelOptions()
    return load_custom(ref.name, options)
