"""Apple-silicon (and AMD-on-Intel-Mac) GPUs through Metal (PyTorch's `mps`).

Written from PyTorch's documented `torch.mps` API; no Mac was at hand, so it has not been
executed by us (the README, and every result's caveat, say so).
"""

from __future__ import annotations

import os
import platform
import sys

import torch

from .base import Device, DeviceBackend, DtypeSupport, EventTimer, MemoryReading, Timer
from .host import cpu_model, macos_major
from .power import PowerMeter, PowermetricsPower

__all__ = ["MpsBackend"]


class MpsBackend(DeviceBackend):
    """Apple-silicon (and AMD-on-Intel-Mac) GPUs through Metal. Not executed here: no Mac."""

    kind = "mps"
    indexed = False
    onnxruntime_providers = ("CoreMLExecutionProvider",)  # Core ML picks GPU or Neural Engine
    caveat = (
        "accelbench's MPS code follows PyTorch's documented torch.mps API, but its developers "
        "had no Mac to run it on: treat these figures as unverified by us"
    )

    def discover(self) -> list[Device]:
        if sys.platform != "darwin":
            return [
                self.unavailable(f"MPS needs macOS 12.3 or later (this is {platform.system()})")
            ]
        if not torch.backends.mps.is_built():
            return [self.unavailable("this PyTorch was built without MPS")]
        if not torch.backends.mps.is_available():
            return [self.unavailable("MPS needs macOS 12.3 or later and a Metal GPU")]
        device = self.available_device(
            model=cpu_model(),  # the chip, e.g. "Apple M2 Max": its GPU is on it
            total_memory=torch.mps.recommended_max_memory(),
            # bf16 on MPS needs macOS 14 (Sonoma).
            dtypes=DtypeSupport(fp16=True, bf16=macos_major() >= 14, tf32=False),
            details=(("memory", "unified with the CPU"),),
        )
        return [device]

    host_only_reason = (
        "PyTorch's profiler records no MPS kernels (torch.mps.profiler writes OS signposts for "
        "Instruments instead): host only"
    )

    def cpu_fallback(self) -> str:
        # pytorch#77764: with the fallback on, operators MPS lacks run on the CPU, silently.
        if os.environ.get("PYTORCH_ENABLE_MPS_FALLBACK") == "1":
            return "PYTORCH_ENABLE_MPS_FALLBACK=1: operators MPS lacks run on the CPU"
        return ""

    def synchronize(self, index: int) -> None:
        torch.mps.synchronize()

    def timer(self, index: int) -> Timer:
        return EventTimer(lambda: torch.mps.event.Event(enable_timing=True), torch.mps.synchronize)

    def power_meter(self, index: int) -> PowerMeter:
        return PowerMeter(PowermetricsPower())  # CPU and GPU package power: unified memory SoC

    def peak_memory(self, index: int) -> MemoryReading:
        # MPS keeps no peak counter: report what the Metal driver holds at the end of the run.
        return MemoryReading(
            torch.mps.driver_allocated_memory(),
            f"driver-allocated at the end (MPS has no peak counter); "
            f"tensors: {torch.mps.current_allocated_memory()} B",
        )
