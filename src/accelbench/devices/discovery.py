"""Finding devices: every kind's backend registered once, discovery, and names to Devices.

A new kind of device is one module with a `DeviceBackend` subclass, registered in `BACKENDS`
here and named in `kinds.PREFERENCE`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import MappingProxyType

from ..errors import DeviceError
from .base import Device, DeviceBackend
from .cpu import CpuBackend
from .cuda import CudaBackend
from .kinds import PREFERENCE
from .mps import MpsBackend
from .xpu import XpuBackend

__all__ = ["BACKENDS", "discover", "find_device", "pick_device", "resolve_devices"]


def _registry(*backends: DeviceBackend) -> Mapping[str, DeviceBackend]:
    """kind -> backend; a kind registered twice, or missing from PREFERENCE, is a bug."""
    table: dict[str, DeviceBackend] = {}
    for backend in backends:
        if backend.kind in table or backend.kind not in PREFERENCE:
            raise ValueError(f"device kind {backend.kind!r} is registered twice or not preferred")
        table[backend.kind] = backend
    return MappingProxyType(table)


BACKENDS = _registry(CpuBackend(), CudaBackend(), MpsBackend(), XpuBackend())


def discover() -> list[Device]:
    """Every backend's devices, available or not, in order of preference."""
    return [device for kind in PREFERENCE for device in BACKENDS[kind].discover()]


def resolve_devices(spec: str) -> list[Device]:
    """Turn 'all' or a comma list such as 'cpu,cuda,cuda:1' into available devices.

    'cuda' and 'xpu' mean device 0. Raises DeviceError for an unknown or unavailable name.
    """
    known = discover()
    available = [d for d in known if d.available]
    names = [n.strip() for n in spec.split(",") if n.strip()]
    if not names:
        raise DeviceError(f"no device named; choose from: {_choices(available)}")
    if names == ["all"]:
        return available
    chosen: list[Device] = []
    for name in names:
        device = _find(name, known, available)
        if device not in chosen:
            chosen.append(device)
    return chosen


def pick_device(preferred: str | None = None) -> Device:
    """The best available device: `preferred`, else $ACCELBENCH_DEVICE, else cuda, mps, xpu, cpu."""
    wanted = preferred or os.environ.get("ACCELBENCH_DEVICE")
    if wanted:
        devices = resolve_devices(wanted)
        if len(devices) != 1:
            raise DeviceError(f"pick_device wants one device, got {wanted!r}")
        return devices[0]
    return next(d for d in discover() if d.available)  # cpu is always available


def find_device(name: str) -> Device:
    """The device called `name`, available or not (its `reason` says why not).

    For commands that report an unavailable device as a row rather than refuse the input:
    only an unknown name raises DeviceError.
    """
    return _lookup(name, discover())


def _valid_names() -> str:
    """'cpu, cuda, cuda:N, mps, xpu, xpu:N, all': what a device may be called."""
    names = [n for kind in sorted(BACKENDS) for n in _names_of(BACKENDS[kind])]
    return ", ".join([*names, "all"])


def _names_of(backend: DeviceBackend) -> list[str]:
    return [backend.kind, f"{backend.kind}:N"] if backend.indexed else [backend.kind]


def _lookup(name: str, known: list[Device]) -> Device:
    kind, _, index = name.partition(":")
    backend = BACKENDS.get(kind)
    if backend is None or (index and not (index.isdigit() and backend.indexed)):
        raise DeviceError(
            f"unknown device {name!r}; valid: {_valid_names()} "
            f"(available here: {_choices([d for d in known if d.available])})"
        )
    full = f"{kind}:{index or 0}" if backend.indexed else kind
    for device in known:
        if device.name == full:
            return device
    reason = next((d.reason for d in known if d.kind == kind and not d.available), "")
    why = reason or f"{kind} has no device {index or 0}"
    return Device(name=full, kind=kind, available=False, reason=why, backend=backend)


def _find(name: str, known: list[Device], available: list[Device]) -> Device:
    device = _lookup(name, known)
    if device.available:
        return device
    raise DeviceError(
        f"device {name!r} is not available here: {device.reason}; available: {_choices(available)}"
    )


def _choices(available: list[Device]) -> str:
    return ", ".join(d.name for d in available) or "none"
