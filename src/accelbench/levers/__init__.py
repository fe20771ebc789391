"""Optimization levers: one registered object per lever (see `base.Lever`).

The built-in levers register when this package is imported, in the order sweeps multiply them
and options list them; each applies in its own `stage` order. Levers of your own register with
`@accelbench.levers.register` in code that runs first, or from files named in the environment
variable ACCELBENCH_LEVERS (paths to .py files or module names, separated by os.pathsep), which
every accelbench process, workers included, loads after the built-ins.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path

from ..errors import UsageError
from .base import Lever, Prepared, Switch, Variant, all_levers, find_lever, register
from .registry import (
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


def _load_built_in() -> None:
    for module in BUILT_IN:
        importlib.import_module(f".{module}", __name__)  # each registers its lever


def _load_plugins() -> None:
    for entry in filter(None, os.environ.get(PLUGINS, "").split(os.pathsep)):
        try:
            _load_plugin(entry)
        except SystemExit as exc:  # the plugin ended the program at import: its error, not ours
            raise UsageError(
                f"cannot load the lever plugin {entry!r} named in ${PLUGINS}: its code called "
                f"sys.exit({exc.code!r})"
            ) from None
        except Exception as exc:
            first = (str(exc).strip().splitlines() or [""])[0]
            raise UsageError(
                f"cannot load the lever plugin {entry!r} named in ${PLUGINS}: "
                f"{type(exc).__name__}: {first}"
            ) from None


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
