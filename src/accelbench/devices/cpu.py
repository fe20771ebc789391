"""The host CPU as a device: discovery, peak RSS as its memory figure, RAPL or powermetrics."""

from __future__ import annotations

import contextlib
import platform
import resource
import sys

import torch

from .base import Device, DeviceBackend, DtypeSupport, MemoryReading
from .host import (
    cpu_has_native_bf16,
    cpu_has_native_fp16,
    cpu_model,
    peak_rss_resettable,
    physical_memory,
    proc_status_bytes,
    usable_cores,
)
from .kinds import HOST_DEVICE
from .power import PowerMeter, PowermetricsPower, RaplPower

__all__ = ["CpuBackend", "cpu_allocator_ran_out"]

# PyTorch's CPU allocator has no exception type of its own: it raises a RuntimeError such as
# "[enforce fail at alloc_cpu.cpp:127] ... DefaultCPUAllocator: can't allocate memory: you tried
# to allocate N bytes" ("not enough memory" on Windows). These words are what gives it away.
CPU_ALLOCATOR_FAILURES = (
    "DefaultCPUAllocator",
    "alloc_cpu.cpp",
    "can't allocate memory",
    "not enough memory",
)


def cpu_allocator_ran_out(exc: BaseException) -> bool:
    """Whether `exc` is the CPU allocator's (or Python's own) failure to find memory."""
    if isinstance(exc, MemoryError):
        return True
    return isinstance(exc, RuntimeError) and any(w in str(exc) for w in CPU_ALLOCATOR_FAILURES)


class CpuBackend(DeviceBackend):
    """The host CPU. PyTorch's CPU ops return when done, so there is nothing to synchronize."""

    kind = HOST_DEVICE
    indexed = False
    is_host = True
    host_only_reason = "the CPU is the host: its operators' host time is the device's time"
    dist_backend = "gloo"
    onnxruntime_providers = ("CPUExecutionProvider",)

    def discover(self) -> list[Device]:
        details = (
            ("threads", str(torch.get_num_threads())),
            ("vector ISA", torch.backends.cpu.get_cpu_capability()),
            ("native bf16", "yes" if cpu_has_native_bf16() else "no (emulated, slow)"),
            ("native fp16", "yes" if cpu_has_native_fp16() else "no (emulated, slow)"),
        )
        native = {"fp16": cpu_has_native_fp16(), "bf16": cpu_has_native_bf16()}
        device = self.available_device(
            model=cpu_model(),
            total_memory=physical_memory(),
            dtypes=DtypeSupport(
                fp16=True,
                bf16=True,
                tf32=False,
                emulated=tuple(name for name, has in native.items() if not has),
            ),
            details=details,
            cores=usable_cores(),
        )
        return [device]

    def power_meter(self, index: int) -> PowerMeter:
        if sys.platform.startswith("linux"):
            return PowerMeter(RaplPower())
        if sys.platform == "darwin":
            return PowerMeter(PowermetricsPower())
        return PowerMeter(None, f"no CPU power counter is read on {platform.system()}")

    def reset_peak_memory(self, index: int) -> None:
        # Linux resets the process's peak RSS (VmHWM) when "5" is written here.
        with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as f:
            f.write("5")

    def peak_memory(self, index: int) -> MemoryReading:
        hwm = proc_status_bytes("VmHWM")
        if hwm is not None and peak_rss_resettable():
            return MemoryReading(hwm, "peak RSS of the process during the run")
        # ru_maxrss is KiB on Linux, bytes on macOS, and cannot be reset.
        scale = 1 if sys.platform == "darwin" else 1024
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
        return MemoryReading(peak, "peak RSS of the process since it started")
