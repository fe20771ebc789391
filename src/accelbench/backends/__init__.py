"""Backends: PyTorch, ONNX Runtime on the exported model and Core ML on the converted one
(macOS), each one registered object (`base.Backend`). What the engine asks of a
configuration's backend goes through here."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..core.result import RunSpec
from ..devices import Device
from ..workloads import Workload
from . import coreml, onnxruntime, pytorch  # noqa: F401  (each registers its backend)
from .base import Backend, Runnable, all_backends, backend_for

__all__ = [
    "Backend",
    "Runnable",
    "all_backends",
    "block_function",
    "build",
    "check_installed",
    "checks_drift",
    "code",
    "expand_backends",
    "not_profiled",
    "unsupported",
]


def unsupported(spec: RunSpec, device: Device, workload: Workload) -> str | None:
    """Why this configuration cannot run here (stored as "unsupported"), or None."""
    backend = backend_for(spec.backend)
    if backend is None:
        names = ", ".join(b.name for b in all_backends())
        return f"unknown backend {spec.backend!r}; valid: {names}"
    return backend.unsupported(spec, device, workload)


def check_installed(names: Sequence[str]) -> None:
    """One line naming what to install, for the first backend asked for whose packages are
    missing."""
    for backend in all_backends():
        if any(backend.name == name or backend.owns(name) for name in names):
            backend.check_installed()


def build(spec: RunSpec, workload: Workload, device: Device, seed: int = 0) -> Runnable:
    """The configuration ready to time on `device`. Same seed, same weights and data."""
    return _owner(spec).build(spec, workload, device, seed)


def code(spec: RunSpec, device: Device) -> list[str]:
    """The lines that set this configuration up in one's own code."""
    return _owner(spec).code(spec, device)


def checks_drift(spec: RunSpec) -> bool:
    """Whether every result of this backend carries its drift from the fp32 PyTorch model."""
    return _owner(spec).checks_drift


def not_profiled(spec: RunSpec) -> str:
    """Why PyTorch's profiler cannot explain this configuration's step, or ""."""
    return _owner(spec).not_profiled


def expand_backends(names: Sequence[str], device: Device) -> list[str]:
    """Each name asked for as the concrete backends it stands for on `device`, once each."""
    out: list[str] = []
    for name in names:
        matching = [b for b in all_backends() if b.name == name]
        out.extend(matching[0].expand(device) if matching else [name])
    return list(dict.fromkeys(out))  # "onnxruntime,onnxruntime-cpu" runs the CPU's once


def block_function(prep: Runnable) -> Callable[[], None]:
    """One timed block: `steps_per_block` steps back to back, nothing waiting on the device."""
    step, count = prep.step, prep.spec.steps_per_block

    def run_block() -> None:
        for _ in range(count):
            step()

    return run_block


def _owner(spec: RunSpec) -> Backend:
    backend = backend_for(spec.backend)
    if backend is None:
        raise ValueError(f"unknown backend {spec.backend!r}")
    return backend
