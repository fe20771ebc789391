"""The Backend interface and its registry, and the Runnable protocol a backend hands the timer.

A backend turns a RunSpec into something to time on a device: PyTorch itself, or ONNX Runtime
on the exported model. Whatever is specific to a backend (its names, what it cannot run, how it
builds, the code a user copies, the variants it adds to the optimization ladder) lives in its
one module; the rest of accelbench asks the registry.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..core.result import RunSpec

if TYPE_CHECKING:
    import torch

    from ..devices import Device, MemoryReading, Timer
    from ..levers import Variant
    from ..workloads import Workload

__all__ = ["Backend", "Runnable", "all_backends", "backend_for", "register"]


class Runnable(Protocol):
    """A configuration ready to time: its step, its timer, its memory and its outputs."""

    @property
    def spec(self) -> RunSpec: ...

    @property
    def step(self) -> Callable[[], None]: ...

    @property
    def info(self) -> dict[str, Any]:  # figures the backend or its levers recorded
        ...

    def timer(self) -> Timer: ...

    def peak_memory(self) -> MemoryReading: ...

    def outputs(self) -> torch.Tensor: ...


class Backend:
    """One way of running a model. Subclasses override what applies."""

    name = ""  # what --backends takes for all of this backend's variants
    checks_drift = False  # measure every result's outputs against the fp32 PyTorch model
    # Why PyTorch's profiler cannot explain this backend's steps ("" where it can).
    not_profiled = ""

    def expand(self, device: Device) -> list[str]:
        """The concrete backends `name` stands for on this device (one per provider...)."""
        return [self.name]

    def owns(self, backend: str) -> bool:
        """Whether a RunSpec's `backend` is this backend's."""
        return backend == self.name

    def check_installed(self) -> None:
        """Raise the one-line error naming what to install when this backend's packages are
        missing (asked before a sweep starts, so it fails before measuring anything)."""

    def unsupported(self, spec: RunSpec, device: Device, workload: Workload) -> str | None:
        return None

    def build(self, spec: RunSpec, workload: Workload, device: Device, seed: int = 0) -> Runnable:
        raise NotImplementedError

    def code(self, spec: RunSpec, device: Device) -> list[str]:
        """The lines that run this configuration in one's own code."""
        return []

    def variants(self, base: RunSpec, device: Device, workload: Workload) -> list[Variant]:
        """Configurations this backend adds to the optimization ladder, each in a group a
        lever names (int8 is the precision lever's)."""
        return []


_BACKENDS: list[Backend] = []


def register(cls: type[Backend]) -> type[Backend]:
    if any(b.name == cls.name for b in _BACKENDS):
        raise ValueError(f"backend {cls.name!r} is registered twice")
    _BACKENDS.append(cls())
    return cls


def all_backends() -> list[Backend]:
    return list(_BACKENDS)


def backend_for(backend: str) -> Backend | None:
    """The backend a RunSpec's `backend` belongs to, or None for a name no backend owns."""
    return next((b for b in _BACKENDS if b.owns(backend)), None)
