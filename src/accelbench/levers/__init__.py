"""Optimization levers: one registered object per lever (see `base.Lever`).

The built-in levers register when this package is imported, in the order sweeps multiply them
and options list them; each applies in its own `stage` order. Levers of your own register with
`@accelbench.levers.register` in code that runs first, or from files named in the environment
variable ACCELBENCH_LEVERS (paths to .py files or module names, separated by os.pathsep), or
from an installed package that declares a module in the entry-point group "accelbench.plugins"
(its module registers levers, workloads or backends at import). Every accelbench process,
workers included, loads them after the built-ins.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UsageError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint
from .base import Lever, Prepared, Switch, Variant, all_levers, find_lever, register
from .registry import (
    CONFIGURATION,
    active_levers,
    check_levers,
    default_groups,
    dimensions,
    eager,
    find_dimension,
    label,
    ladder_groups,
    refused_by_model,
    spec_json,
    spec_with,
    unsupported_reason,
    warmup_needed,
)

__all__ = [
    "CONFIGURATION",
    "ENTRY_POINTS",
    "NO_ENTRY_POINTS",
    "PLUGINS",
    "Lever",
    "Prepared",
    "Switch",
    "Variant",
    "active_levers",
    "all_levers",
    "check_levers",
    "default_groups",
    "dimensions",
    "eager",
    "find_dimension",
    "find_lever",
    "label",
    "ladder_groups",
    "refused_by_model",
    "register",
    "spec_json",
    "spec_with",
    "unsupported_reason",
    "warmup_needed",
]

BUILT_IN = (
    "precision",
    "layout",
    "attention",
    "kv_cache",
    "compile",
    "graphs",
    "cudnn",
    "optimizer",
    "threads",
    "parallel",
    "prune",
    "batch",
)
PLUGINS = "ACCELBENCH_LEVERS"
ENTRY_POINTS = "accelbench.plugins"
# Set while the fork server starts (engine/worker): installed plugins load in each worker, not
# in the server every worker forks from.
NO_ENTRY_POINTS = "ACCELBENCH_NO_ENTRY_POINTS"


def _load_built_in() -> None:
    for module in BUILT_IN:
        importlib.import_module(f".{module}", __name__)  # each registers its lever


def _load_plugins() -> None:
    for entry in filter(None, os.environ.get(PLUGINS, "").split(os.pathsep)):
        _guarded(functools.partial(_load_plugin, entry), f"{entry!r} named in ${PLUGINS}")
    if os.environ.get(NO_ENTRY_POINTS):
        return
    for point in _entry_points():
        _guarded(point.load, f"{point.value!r} (entry point {point.name!r} in {ENTRY_POINTS})")


def _guarded(load: Callable[[], object], what: str) -> None:
    """Load a plugin; its failure, or its sys.exit, is one line naming it."""
    try:
        load()
    except SystemExit as exc:  # the plugin ended the program at import: its error, not ours
        raise UsageError(
            f"cannot load the plugin {what}: its code called sys.exit({exc.code!r})"
        ) from None
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        raise UsageError(f"cannot load the plugin {what}: {type(exc).__name__}: {first}") from None


def _entry_points() -> list[EntryPoint]:
    """Installed packages' plugins. Importing importlib.metadata costs about 80 ms, a sixth of
    a command's start, so the installed packages' entry_points.txt are read for the group's
    name first (about 10 ms), and the import happens only where one declares it."""
    declared = False
    for folder in filter(None, sys.path):
        try:
            texts = [f.read_text(errors="replace") for f in Path(folder).glob(_DECLARED)]
        except OSError:
            continue
        declared = declared or any(f"[{ENTRY_POINTS}]" in text for text in texts)
    if not declared:
        return []
    import importlib.metadata

    return list(importlib.metadata.entry_points(group=ENTRY_POINTS))


_DECLARED = "*.*-info/entry_points.txt"  # a .dist-info or .egg-info folder's


def _load_plugin(entry: str) -> None:
    if not entry.endswith(".py"):
        importlib.import_module(entry)
        return
    path = Path(entry).resolve()
    name = f"accelbench_lever_{path.stem}"
    if name in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)


_load_built_in()
_load_plugins()
