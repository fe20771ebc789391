"""CUDA graphs: capture one whole step (forward, backward, optimizer) and replay it, removing
the per-kernel launch cost that dominates small models."""

from __future__ import annotations

from ..core.result import RunSpec
from ..devices import Device
from ..workloads import Workload
from .base import Prepared, Step, register


@register
class CudaGraphs(Step):
    name = "cuda_graphs"

    def wanted(self, spec: RunSpec) -> bool:
        return spec.cuda_graphs

    def unsupported(self, spec: RunSpec, device: Device, workload: Workload) -> str | None:
        if not device.can_capture_graphs:
            return f"{device.name} cannot capture CUDA graphs"
        if spec.precision == "fp16" and spec.mode == "train":
            return "fp16 training's GradScaler reads a flag on the host every step"
        if spec.compile in ("reduce-overhead", "max-autotune"):
            return f"torch.compile mode {spec.compile} captures CUDA graphs itself; pick one"
        return None

    def apply_step(self, prep: Prepared) -> None:
        if prep.optimizer is not None:
            for group in prep.optimizer.param_groups:
                if "capturable" in group:  # Adam(W) keeps its step count on the device then
                    group["capturable"] = True
        prep.step = prep.device.capture_graph(prep.step)
