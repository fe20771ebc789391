"""The one exception tree of accelbench.

Everything the user can cause (a bad name, a bad number, an unreadable file) raises a subclass of
`AccelbenchError` with a message that fits on one line and names the valid choices. The CLI turns
it into that line on stderr and exit code 2; anything else reaching the user is a bug.

    AccelbenchError
    ├── UsageError          a bad option value or combination
    │   └── MissingDependency   an optional package is not installed (`require`)
    ├── DeviceError         an unknown or unavailable device
    ├── WorkloadError       an unknown workload, or one that cannot be built
    └── StoreError          a results database that cannot be used
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

__all__ = [
    "EXTRAS",
    "AccelbenchError",
    "DeviceError",
    "MeasuredFailure",
    "MissingDependency",
    "StoreError",
    "UsageError",
    "WorkloadError",
    "one_line",
    "require",
    "torch_problem",
]

# pyproject.toml's optional dependencies that bring a feature's packages (a test keeps them equal)
EXTRAS = ("models", "power", "report", "export", "prune", "verify", "postgres", "serve")


class AccelbenchError(Exception):
    """Base of every error accelbench raises on purpose."""


class UsageError(AccelbenchError):
    """A bad option value or combination of options."""


class DeviceError(AccelbenchError):
    """An unknown device name, or a device that is not available here."""


class WorkloadError(AccelbenchError):
    """An unknown workload, or one that cannot be built."""


class MeasuredFailure(WorkloadError):
    """A configuration that ends without its figure but with facts worth keeping (a serve whose
    bound no load can meet: its SingleStream and Offline runs): `metrics` go with the failed
    result."""

    def __init__(self, message: str, metrics: dict[str, object]) -> None:
        super().__init__(message)
        self.metrics = metrics


class StoreError(AccelbenchError):
    """The results database cannot be opened, is not accelbench's, or is too new."""


class MissingDependency(UsageError):
    """An optional package is not installed; the message names the extra that installs it."""


def require(module: str, extra: str, purpose: str, package: str = "") -> ModuleType:
    """Import an optional dependency, or say in one line how to install it.

    `extra` is the accelbench extra that brings it, `purpose` what it is needed for, and
    `package` its name on PyPI where that differs from the module's (scikit-learn for sklearn):
    `require("matplotlib", "report", "charts")` raises MissingDependency("matplotlib is needed
    for charts: pip install 'accelbench[report]'") when matplotlib is missing.
    """
    if extra not in EXTRAS:  # a typo here would send users to install an extra that is not there
        raise ValueError(f"unknown extra {extra!r}; accelbench has {', '.join(EXTRAS)}")
    name = package or module.partition(".")[0]
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and f"{module}.".startswith(f"{exc.name}."):  # it or a parent
            raise MissingDependency(
                f"{name} is needed for {purpose}: pip install 'accelbench[{extra}]'"
            ) from None
        raise _broken(name, purpose, exc) from None
    except ImportError as exc:
        raise _broken(name, purpose, exc) from None


def _broken(name: str, purpose: str, exc: ImportError) -> MissingDependency:
    """An installed package that fails to import (one of its own dependencies is missing or
    the wrong version): saying "install it" would send the user the wrong way."""
    first = (str(exc).strip().splitlines() or [""])[0]
    return MissingDependency(
        f"{name} is installed but does not import, needed for {purpose}: {first}"
    )


def one_line(exc: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


# What every PyTorch has and accelbench reads as it loads; a folder named torch that shadows the
# real one (on PYTHONPATH, or the working directory) has none of them
_TORCH_PARTS = ("__version__", "Tensor", "float32", "version", "nn", "cuda", "Generator")


def torch_problem() -> str | None:
    """Why the torch this Python finds cannot be used, naming where it found it; None when it
    can. Asked when a command fails unexpectedly, so that a shadowing or broken torch is said
    in one line rather than as a traceback through accelbench's modules."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError) as exc:  # ValueError: a torch module without a spec
        return f"torch cannot be found: {one_line(exc)}"
    if spec is None:
        return "torch is not installed: pip install torch"
    where = spec.origin or ", ".join(spec.submodule_search_locations or ()) or "?"
    hint = "(another folder named torch on PYTHONPATH or in the working directory?)"
    try:
        torch = importlib.import_module("torch")
    except Exception as exc:
        return f"the torch found at {where} does not import: {one_line(exc)} {hint}"
    missing = [part for part in _TORCH_PARTS if not hasattr(torch, part)]
    if missing:
        return f"the torch found at {where} is not PyTorch: it has no torch.{missing[0]} {hint}"
    return None
