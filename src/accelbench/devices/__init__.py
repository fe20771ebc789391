"""Devices: discovery, availability and why, synchronization, timers, memory figures.

This layer is the only one that knows one kind of device from another. Each kind is one module
(`cpu`, `cuda` for NVIDIA and ROCm, `mps`, `xpu`) with a `DeviceBackend` behind the `Device`
interface of `base`; `discovery` finds and names them; `kinds` is the torch-free vocabulary
(the comparison baseline, the preference order, out-of-memory messages) and `host` the
torch-free facts of the host; `oom` holds the out-of-memory exception types, `tf32_switch` the
TF32 switches; `power`, `peaks` and `fingerprint` read power, peak rates and the environment.

Names load on first use, so importing this package (or `kinds`) does not import torch: commands
that only read the store stay fast.
"""

# ruff: noqa: F401  (the TYPE_CHECKING names are re-exported by __getattr__, unseen by linters)

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> submodule that defines it
_EXPORTS = {
    "Device": "base",
    "DeviceBackend": "base",
    "DeviceEvent": "base",
    "DtypeSupport": "base",
    "EventTimer": "base",
    "HostTimer": "base",
    "MemoryReading": "base",
    "Timer": "base",
    "BACKENDS": "discovery",
    "discover": "discovery",
    "find_device": "discovery",
    "pick_device": "discovery",
    "resolve_devices": "discovery",
    "cpu_model": "host",
    "BASELINE_DEVICE": "kinds",
    "HOST_DEVICE": "kinds",
    "KINDS": "kinds",
    "PREFERENCE": "kinds",
    "is_baseline": "kinds",
    "mentions_out_of_memory": "kinds",
    "OUT_OF_MEMORY": "oom",
    "is_out_of_memory": "oom",
    "set_tf32": "tf32_switch",
    "tf32": "tf32_switch",
}
# spelled out, not derived from _EXPORTS, because type checkers read only a literal list to
# know what this package re-exports (tests/devices/test_devices.py checks the two agree)
__all__ = [
    "BACKENDS",
    "BASELINE_DEVICE",
    "HOST_DEVICE",
    "KINDS",
    "OUT_OF_MEMORY",
    "PREFERENCE",
    "Device",
    "DeviceBackend",
    "DeviceEvent",
    "DtypeSupport",
    "EventTimer",
    "HostTimer",
    "MemoryReading",
    "Timer",
    "cpu_model",
    "discover",
    "find_device",
    "is_baseline",
    "is_out_of_memory",
    "mentions_out_of_memory",
    "pick_device",
    "resolve_devices",
    "set_tf32",
    "tf32",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)


if TYPE_CHECKING:  # let type checkers and editors see the real names
    from .base import (
        Device,
        DeviceBackend,
        DeviceEvent,
        DtypeSupport,
        EventTimer,
        HostTimer,
        MemoryReading,
        Timer,
    )
    from .discovery import BACKENDS, discover, find_device, pick_device, resolve_devices
    from .host import cpu_model
    from .kinds import (
        BASELINE_DEVICE,
        HOST_DEVICE,
        KINDS,
        PREFERENCE,
        is_baseline,
        mentions_out_of_memory,
    )
    from .oom import OUT_OF_MEMORY, is_out_of_memory
    from .tf32_switch import set_tf32, tf32
