"""Apple-silicon (and AMD-on-Intel-Mac) GPUs through Metal (PyTorch's `mps`).

Written from PyTorch's documented `torch.mps` API; no Mac was at hand, so it has not been
executed by us (docs/platforms.md, and every result's caveat, say so).
"""

from __future__ import annotations

import os
import platform
import sys
import threading
from collections.abc import Callable

import torch

from .base import Device, DeviceBackend, DtypeSupport, MemoryReading
from .host import cpu_model, macos_major
from .power import PowerMeter, PowermetricsPower

__all__ = ["MpsBackend", "SampledPeak"]

SAMPLE_INTERVAL_S = 0.1
SAMPLED_MEANING = (
    f"driver-allocated, sampled every {SAMPLE_INTERVAL_S:g} s during the timed samples "
    "(MPS keeps no peak counter)"
)
COMPILE_SINCE = (2, 8)  # MPSInductor: torch.compile's MPS backend


def _torch_version() -> tuple[int, int]:
    major, minor = torch.__version__.split(".")[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


class SampledPeak:
    """The largest value a memory counter showed, read every `interval` seconds on a thread
    while entered (and once at each end), for a device that keeps no peak of its own.

    The thread only reads a counter: it queues nothing and waits for nothing on the device,
    so the timed samples run as they would without it.
    """

    def __init__(
        self,
        counter: Callable[[], int],
        meaning: str = SAMPLED_MEANING,
        interval: float = SAMPLE_INTERVAL_S,
    ) -> None:
        self._counter, self._meaning, self._interval = counter, meaning, interval
        self._peak: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _sample(self) -> None:
        value = int(self._counter())
        self._peak = value if self._peak is None else max(self._peak, value)

    def _watch(self) -> None:
        while not self._stop.wait(self._interval):
            self._sample()

    def __enter__(self) -> SampledPeak:
        self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def reading(self) -> MemoryReading | None:
        return None if self._peak is None else MemoryReading(self._peak, self._meaning)


class MpsBackend(DeviceBackend):
    """Apple-silicon (and AMD-on-Intel-Mac) GPUs through Metal. Not executed here: no Mac."""

    kind = "mps"
    indexed = False
    onnxruntime_providers = ("CoreMLExecutionProvider",)  # Core ML picks GPU or Neural Engine
    # With PYTORCH_MPS_HIGH_WATERMARK_RATIO=0 nothing raises past recommended_max_memory():
    # allocations spill to swap, and a larger batch gets slow instead of failing.
    spills_to_swap = True
    hosts_coreml = True  # Core ML runs on the Mac's CPU, GPU and Neural Engine: filed here
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

    # The timer is the base's HostTimer (synchronize, then the host clock) on every PyTorch
    # version, never torch.mps.event.Event: until pytorch#196395 (September 2026) its
    # elapsed_time could hang after end.synchronize() and short intervals came out reversed,
    # and we could not confirm which release carries the fix, so no version check proves it.
    # For the same reason record_event is the base's: asking it waits for the device, so a
    # served batch on MPS is synchronized before the next arrivals are read.

    def runtime_facts(self, index: int) -> dict[str, str]:
        # Stored with every MPS result: with the fallback on, a figure may be partly the CPU's.
        fallback = self.cpu_fallback()
        return {"mps_cpu_fallback": f"enabled ({fallback})" if fallback else "disabled"}

    def peak_sampler(self, index: int) -> SampledPeak:
        return SampledPeak(torch.mps.driver_allocated_memory)

    def compile_unsupported(self) -> str:
        if _torch_version() < COMPILE_SINCE:
            return (
                "torch.compile on MPS needs PyTorch 2.8 or later (MPSInductor); this is "
                f"{torch.__version__}"
            )
        return ""

    def dist_unsupported(self) -> str:
        return (
            "MPS has no torch.distributed collective backend (NCCL is CUDA's, gloo runs on the "
            "CPU), so there is no data parallelism on a Mac's GPU"
        )

    def dtype_unsupported(self, precision: str, device: Device) -> str:
        if precision == "bf16" and not device.dtypes.bf16:
            return f"bf16 on MPS needs macOS 14 (Sonoma) or later; this is macOS {macos_major()}"
        if precision == "tf32":
            return "MPS has no TF32 mode (TensorFloat-32 is NVIDIA's)"
        return super().dtype_unsupported(precision, device)

    def power_meter(self, index: int) -> PowerMeter:
        return PowerMeter(PowermetricsPower())  # CPU and GPU package power: unified memory SoC

    def peak_memory(self, index: int) -> MemoryReading:
        # MPS keeps no peak counter: what the Metal driver holds at the end of the run (the
        # runner replaces it with the sampled peak where the timed samples were sampled).
        return MemoryReading(
            torch.mps.driver_allocated_memory(),
            f"driver-allocated at the end (MPS has no peak counter); "
            f"tensors: {torch.mps.current_allocated_memory()} B",
        )
