"""cudnn.benchmark: let cuDNN time its convolution algorithms for each new shape and keep the
fastest, instead of picking one by heuristics (on ROCm, PyTorch maps it to MIOpen's find)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.result import RunSpec, Value
from .base import Prepared, Switch, Variant, register

if TYPE_CHECKING:
    from ..devices import Device
    from ..workloads import Workload


@register
class CudnnBenchmark(Switch):
    name = "cudnn_benchmark"
    generates = True  # mode generate too
    title = "cudnn.benchmark"
    option = "--cudnn-benchmark"
    help = "time cuDNN's convolution algorithms and keep the fastest: off, on"
    dimension = "cudnn-benchmark"
    stage = 20  # a global switch; nothing else depends on it, so any stage before the step
    searched = True

    def unsupported(self, spec: RunSpec, device: Device, workload: Workload) -> str | None:
        return self._why_not(device, workload) or None

    def apply_model(self, prep: Prepared, value: Value) -> None:
        import torch

        # A process-wide flag; each configuration runs in a worker process of its own.
        torch.backends.cudnn.benchmark = True

    def code(self, spec: RunSpec, device: Device) -> list[str]:
        return ["torch.backends.cudnn.benchmark = True"]

    def no_gain_reason(self, spec: RunSpec, launch_bound: bool) -> str:
        if launch_bound:
            return (
                "the step is launch-bound, and faster convolution algorithms shorten kernels, "
                "not the host's launches"
            )
        return ""

    def variants(self, base: RunSpec, device: Device, workload: Workload) -> list[Variant]:
        if self._why_not(device, workload):
            return []
        return [Variant("cudnn.benchmark", self.assign(base, True), self.name)]

    def not_tried(self, group: str, base: RunSpec, device: Device, workload: Workload) -> str:
        return self._why_not(device, workload)

    @staticmethod
    def _why_not(device: Device, workload: Workload) -> str:
        if device.kind != "cuda":
            return f"{device.name} has no cuDNN"
        if not workload.images:
            return (
                f"cudnn.benchmark picks convolution algorithms; {workload.name}'s inputs are "
                "not images"
            )
        return ""
