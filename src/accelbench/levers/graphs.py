"""CUDA graphs: capture one whole step (forward, backward, optimizer) and replay it, removing
the per-kernel launch cost that dominates small models."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.modes import mode_of
from ..core.result import RunSpec, Value
from .base import Prepared, Switch, Variant, register

if TYPE_CHECKING:
    from ..devices import Device
    from ..workloads import Workload

_SELF_CAPTURING = ("reduce-overhead", "max-autotune")  # torch.compile modes that capture graphs


@register
class CudaGraphs(Switch):
    name = "cuda_graphs"
    title = "CUDA graphs"
    option = "--cuda-graphs"
    help = "capture each step in a CUDA graph: off, on"
    dimension = "cuda-graphs"
    stage = 60  # last: it captures the step the others built
    relieves = ("host",)  # the step's launches replayed as one graph
    searched = True

    def unsupported(self, spec: RunSpec, device: Device, workload: Workload) -> str | None:
        if not device.can_capture_graphs:
            return f"{device.name} cannot capture CUDA graphs"
        if spec.precision == "fp16" and mode_of(spec).trains:
            return "fp16 training's GradScaler reads a flag on the host every step"
        compile_mode = spec.lever("compile", "")
        if compile_mode in _SELF_CAPTURING:
            return f"torch.compile mode {compile_mode} captures CUDA graphs itself; pick one"
        return None

    def apply_model(self, prep: Prepared, value: Value) -> None:
        prep.autocast_cache = False  # autocast's cache would hold tensors across the capture

    def apply_step(self, prep: Prepared, value: Value) -> None:
        if prep.optimizer is not None:
            for group in prep.optimizer.param_groups:
                if "capturable" in group:  # Adam(W) keeps its step count on the device then
                    group["capturable"] = True
        prep.step = prep.device.capture_graph(prep.step)

    def code(self, spec: RunSpec, device: Device) -> list[str]:
        return [
            "# capture the whole step in a CUDA graph: static inputs, then "
            "torch.cuda.graph(g) around one step and g.replay() for each later one"
        ]

    def variants(self, base: RunSpec, device: Device, workload: Workload) -> list[Variant]:
        return (
            [Variant("cuda_graphs", self.assign(base, True), self.name)]
            if self._can(device)
            else []
        )

    def pays_with(self, stack: RunSpec) -> str:
        # Every step accelbench times is static (one batch, one shape), so a graph can take it.
        return "a CUDA graph removes the host's launches from any static step"

    def not_tried(self, group: str, base: RunSpec, device: Device, workload: Workload) -> str:
        return "" if self._can(device) else f"{device.name} cannot capture graphs"

    @staticmethod
    def _can(device: Device) -> bool:
        return device.can_capture_graphs
