"""The environment fingerprint stored with every result, so numbers from different machines
and software versions are never mistaken for each other."""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform

import torch

from ..core.version import __version__
from .base import Device
from .host import cpu_model

__all__ = ["fingerprint"]


def fingerprint(device: Device) -> dict[str, str]:
    facts = {
        "host": platform.node(),
        "machine": machine_id(),
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


def machine_id() -> str:
    """The host name and a short hash that tells apart machines sharing a name.

    Host names repeat (every VM here is "vm"); the OS's machine id, the CPU and the core count
    together do not, and they stay the same across runs on one machine.
    """
    ident = ""
    with contextlib.suppress(OSError), open("/etc/machine-id") as f:
        ident = f.read().strip()
    text = "|".join([ident, platform.node(), cpu_model(), str(os.cpu_count())])
    return f"{platform.node()}-{hashlib.sha1(text.encode()).hexdigest()[:6]}"
