"""PyTorch as a backend: the model on its device with the spec's levers applied, and the step
its mode builds (core/modes; the built-in modes are in accelbench.modes)."""

from __future__ import annotations

import torch

from ..core.modes import mode_of
from ..core.result import DEFAULT_BACKEND, RunSpec
from ..devices import Device
from ..levers import Prepared, active_levers, unsupported_reason
from ..workloads import Workload
from ..workloads.inputs import to_device
from ..workloads.weights import build_seeded
from .base import Backend, Runnable, register

__all__ = ["Torch", "build_torch"]


@register
class Torch(Backend):
    name = DEFAULT_BACKEND

    def unsupported(self, spec: RunSpec, device: Device, workload: Workload) -> str | None:
        return unsupported_reason(spec, device, workload)

    def build(self, spec: RunSpec, workload: Workload, device: Device, seed: int = 0) -> Runnable:
        return build_torch(spec, workload, device, seed)

    def code(self, spec: RunSpec, device: Device) -> list[str]:
        return [line for lever in active_levers(spec) for line in lever.code(spec, device)]


def build_torch(spec: RunSpec, workload: Workload, device: Device, seed: int = 0) -> Prepared:
    """The model on `device`, with `spec`'s levers applied. Same seed, same weights and data."""
    model = build_seeded(workload, seed)  # once a search, where its folder is set
    mode = mode_of(spec)
    batch = mode.inputs(spec, workload, torch.Generator().manual_seed(seed))
    target = device.torch_device
    model = model.to(target).train(mode.trains)
    prep = Prepared(
        spec=spec,
        workload=workload,
        device=device,
        model=model,
        batch=(to_device(batch[0], target), batch[1].to(target)),
    )
    levers = active_levers(spec)
    for lever in levers:
        lever.apply_model(prep, lever.value(spec))
    mode.prepare(prep)
    prep.step = mode.build_step(prep)
    for lever in levers:
        lever.apply_step(prep, lever.value(spec))
    return prep
