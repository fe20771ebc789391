"""NVIDIA GPUs, and AMD GPUs through a ROCm build of PyTorch (which presents them as `cuda`).

Verified on an NVIDIA H200; the ROCm paths follow PyTorch's documentation and were not run.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
from collections.abc import Callable
from typing import Any

import torch

from .base import (
    Device,
    DeviceBackend,
    DeviceEvent,
    DtypeSupport,
    EventTimer,
    MemoryReading,
    Timer,
)
from .power import NvmlPower, PowerMeter
from .state import NvmlState, StateMeter

__all__ = ["CudaBackend"]


class CudaBackend(DeviceBackend):
    """NVIDIA GPUs, and AMD GPUs through a ROCm build of PyTorch."""

    kind = "cuda"
    can_capture_graphs = True
    profiler_activity = "CUDA"  # CUPTI: kernels, copies and runtime calls (ROCm: roctracer)
    dist_backend = "nccl"  # RCCL on ROCm builds, under the same name

    @property
    def caveat(self) -> str:  # type: ignore[override]
        if torch.version.hip is None:
            return ""  # verified on an NVIDIA H200
        return "accelbench has been verified on NVIDIA GPUs; its developers had no AMD GPU"

    @property
    def onnxruntime_providers(self) -> tuple[str, ...]:  # type: ignore[override]
        if torch.version.hip is None:
            return ("CUDAExecutionProvider", "TensorrtExecutionProvider")
        return ("ROCMExecutionProvider", "MIGraphXExecutionProvider")

    def discover(self) -> list[Device]:
        if torch.version.cuda is None and torch.version.hip is None:
            return [self.unavailable("this PyTorch was built without CUDA or ROCm")]
        if not torch.cuda.is_available():
            build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "ROCm"
            return [
                self.unavailable(f"PyTorch has {build} but sees no GPU (no driver or no device)")
            ]
        return [self._describe(i) for i in range(torch.cuda.device_count())]

    def _describe(self, index: int) -> Device:
        props = torch.cuda.get_device_properties(index)
        capability = (props.major, props.minor)
        # TF32 tensor cores arrived with Ampere (8.0); ROCm builds do not use TF32 here.
        tf32 = torch.version.hip is None and capability >= (8, 0)
        details = [("multiprocessors", str(props.multi_processor_count))]
        if torch.version.hip is None:
            details.insert(0, ("compute capability", f"{props.major}.{props.minor}"))
        return self.available_device(
            index,
            model=props.name,
            total_memory=props.total_memory,
            dtypes=DtypeSupport(fp16=True, bf16=_bf16(index), tf32=tf32),
            details=tuple(details),
        )

    def synchronize(self, index: int) -> None:
        torch.cuda.synchronize(index)

    def timer(self, index: int) -> Timer:
        return EventTimer(
            lambda: torch.cuda.Event(enable_timing=True), lambda: self.synchronize(index)
        )

    def record_event(self, index: int) -> DeviceEvent:
        event = torch.cuda.Event()  # no timing: recording and asking stay cheapest
        event.record(torch.cuda.current_stream(index))
        return event

    def context(self, index: int) -> contextlib.AbstractContextManager[Any]:
        return torch.cuda.device(index)

    def reset_peak_memory(self, index: int) -> None:
        torch.cuda.reset_peak_memory_stats(index)

    def peak_memory(self, index: int) -> MemoryReading:
        return MemoryReading(
            torch.cuda.max_memory_allocated(index),
            "peak allocated by PyTorch's caching allocator",
            tensors_only=True,
        )

    def power_meter(self, index: int) -> PowerMeter:
        if torch.version.hip is not None:
            return PowerMeter(None, "AMD GPU power is not read by accelbench yet")
        return PowerMeter(NvmlPower(index, uuid=_uuid(index)))

    def state_meter(self, index: int) -> StateMeter:
        if torch.version.hip is not None:
            return StateMeter(None, "AMD GPU clocks and temperature are not read by accelbench yet")
        return StateMeter(NvmlState(index, uuid=_uuid(index)))

    def capture_graph(self, index: int, step: Callable[[], None]) -> Callable[[], None]:
        # PyTorch's whole-network recipe: warm up on a side stream (so lazily created state
        # such as optimizer buffers exists before capture), then capture one step.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
        return graph.replay

    def runtime_facts(self, index: int) -> dict[str, str]:
        facts = {}
        if torch.version.cuda:
            facts["cuda_runtime"] = torch.version.cuda
        if torch.version.hip:
            facts["hip"] = torch.version.hip
        if torch.backends.cudnn.is_available():
            facts["cudnn"] = str(torch.backends.cudnn.version())
        facts["driver"] = _nvidia_driver_version(index) or "unknown"
        return facts


def _uuid(index: int) -> str | None:
    # NVML numbers GPUs its own way; the UUID names the same GPU in both.
    return str(getattr(torch.cuda.get_device_properties(index), "uuid", "")) or None


def _bf16(index: int) -> bool:
    with torch.cuda.device(index):
        return bool(torch.cuda.is_bf16_supported())


def _nvidia_driver_version(index: int) -> str | None:
    if torch.version.hip is not None or shutil.which("nvidia-smi") is None:
        return None
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", f"-i={index}"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        return out.stdout.strip() or None
    return None
