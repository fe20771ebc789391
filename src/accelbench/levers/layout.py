"""channels_last: NHWC memory layout for image models, which tensor cores prefer."""

from __future__ import annotations

import torch

from ..core.result import RunSpec
from ..devices import Device
from ..workloads import Workload
from .base import Prepared, Step, register


@register
class ChannelsLast(Step):
    name = "channels_last"

    def wanted(self, spec: RunSpec) -> bool:
        return spec.channels_last

    def unsupported(self, spec: RunSpec, device: Device, workload: Workload) -> str | None:
        if not workload.images:
            return f"{workload.name}'s inputs are not NCHW images"
        return None

    def apply_model(self, prep: Prepared) -> None:
        prep.model = prep.model.to(memory_format=torch.channels_last)
        inputs, targets = prep.batch
        prep.batch = (inputs.contiguous(memory_format=torch.channels_last), targets)
