"""The environment fingerprint stored with every result, so numbers from different machines
and software versions are never mistaken for each other."""

from __future__ import annotations

import platform

import torch

from . import __version__
from .devices import Device, cpu_model

__all__ = ["fingerprint"]


def fingerprint(device: Device) -> dict[str, str]:
    facts = {
        "host": platform.node(),
        "os": platform.platform(),
        "cpu": cpu_model(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "accelbench": __version__,
        "device": device.name,
        "device_model": device.model,
    }
    facts.update(device.runtime_facts())
    if device.caveat:
        facts["caveat"] = device.caveat
    return facts
