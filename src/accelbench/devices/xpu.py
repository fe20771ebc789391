"""Intel GPUs (PyTorch's `xpu`).

Written from PyTorch's documented `torch.xpu` API; no Intel GPU was at hand, so it has not been
executed by us (every result's caveat says so).
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from .base import Device, DeviceBackend, DeviceEvent, DtypeSupport, MemoryReading

__all__ = ["XpuBackend"]


class XpuBackend(DeviceBackend):
    """Intel GPUs."""

    kind = "xpu"
    profiler_activity = "XPU"  # not executed here: no Intel GPU
    dist_backend = "xccl"  # PyTorch's Intel GPU collectives (2.8 and later); not executed here
    onnxruntime_providers = ("OpenVINOExecutionProvider",)
    caveat = (
        "accelbench's XPU code follows PyTorch's documented torch.xpu API, but its developers "
        "had no Intel GPU to run it on: treat these figures as unverified by us"
    )

    def discover(self) -> list[Device]:
        xpu = getattr(torch, "xpu", None)
        if xpu is None or not xpu._is_compiled():
            return [self.unavailable("this PyTorch was built without XPU")]
        if not xpu.is_available():
            return [self.unavailable("PyTorch has XPU but sees no Intel GPU (no driver or device)")]
        return [self._describe(i) for i in range(xpu.device_count())]

    def _describe(self, index: int) -> Device:
        props = torch.xpu.get_device_properties(index)
        return self.available_device(
            index,
            model=props.name,
            total_memory=props.total_memory,
            dtypes=DtypeSupport(fp16=True, bf16=torch.xpu.is_bf16_supported(), tf32=False),
            details=(("driver", str(getattr(props, "driver_version", "unknown"))),),
        )

    def synchronize(self, index: int) -> None:
        torch.xpu.synchronize(index)

    # The timer is the base's HostTimer (synchronize, then the host clock), not torch.xpu.Event:
    # XPUEvent.elapsed_time raised NotImplementedError up to PyTorch 2.4 (pytorch#131840; it
    # came with pytorch#134666 and needs oneAPI 2025.0), and IPEX's xpu.Event reported wrong
    # times under the 2024.1 SYCL runtime (intel-extension-for-pytorch#568). Projects that
    # time XPU work (DeepSpeed#5761, intel-extension-for-deepspeed#84) use the host clock too.

    def record_event(self, index: int) -> DeviceEvent:
        # torch.xpu.Event's record, query and synchronize (not its elapsed_time, above); from
        # PyTorch's documentation, not executed here
        event = torch.xpu.Event()
        event.record(torch.xpu.current_stream(index))
        return event

    def context(self, index: int) -> contextlib.AbstractContextManager[Any]:
        return torch.xpu.device(index)

    def reset_peak_memory(self, index: int) -> None:
        torch.xpu.reset_peak_memory_stats(index)

    def peak_memory(self, index: int) -> MemoryReading:
        return MemoryReading(
            torch.xpu.max_memory_allocated(index), "peak allocated by PyTorch", tensors_only=True
        )
