"""channels_last: NHWC memory layout for image models, which tensor cores prefer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.result import RunSpec, Value
from .base import Prepared, Switch, Variant, register

if TYPE_CHECKING:
    from ..devices import Device
    from ..workloads import Workload


@register
class ChannelsLast(Switch):
    name = "channels_last"
    option = "--memory-formats"
    single_option = "--memory-format"
    help = "contiguous, channels_last (default: contiguous)"
    dimension = "memory-format"
    off_word, on_word = "contiguous", "channels_last"
    stage = 30  # before DDP wraps the model and compile traces it
    relieves = ("compute",)  # tensor-core convolutions read NHWC without transposes
    searched = True

    def unsupported(self, spec: RunSpec, device: Device, workload: Workload) -> str | None:
        if not workload.images:
            return f"{workload.name}'s inputs are not NCHW images"
        return None

    def refused_by_model(self, spec: RunSpec, workload: Workload) -> str | None:
        from ..workloads.base import channels_last_refusal

        return channels_last_refusal(workload)

    def apply_model(self, prep: Prepared, value: Value) -> None:
        import torch

        from ..workloads.base import in_channels_last

        prep.model = prep.model.to(memory_format=torch.channels_last)
        inputs, targets = prep.batch
        prep.batch = (in_channels_last(inputs), targets)

    def code(self, spec: RunSpec, device: Device) -> list[str]:
        return [
            "model = model.to(memory_format=torch.channels_last)",
            "inputs = inputs.to(memory_format=torch.channels_last)",
        ]

    def variants(self, base: RunSpec, device: Device, workload: Workload) -> list[Variant]:
        if not workload.images:
            return []
        return [Variant("channels_last", self.assign(base, True), self.name)]

    def pays_with(self, stack: RunSpec) -> str:
        if stack.precision in ("fp16", "bf16"):
            return "channels_last pays with a low precision: tensor-core convolutions read NHWC"
        return ""

    def not_tried(self, group: str, base: RunSpec, device: Device, workload: Workload) -> str:
        return "" if workload.images else "the inputs are not images"
