"""The Step interface, the registry, and the state steps work on."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from ..core.result import RunSpec
from ..devices import Device, MemoryReading, Timer
from ..workloads import Batch, Workload


@dataclass
class Prepared:
    """A model made ready on a device; steps adjust it before and after the step is built."""

    spec: RunSpec
    workload: Workload
    device: Device
    model: nn.Module
    batch: Batch
    optimizer: torch.optim.Optimizer | None = None
    autocast_dtype: torch.dtype | None = None
    scaler: Any = None  # a torch.amp.GradScaler for fp16 training
    step: Callable[[], None] = field(default=lambda: None)
    # Figures steps record about what they did, merged into the Result's metrics by key.
    info: dict[str, Any] = field(default_factory=dict)

    def timer(self) -> Timer:
        return self.device.timer()

    def peak_memory(self) -> MemoryReading:
        return self.device.peak_memory()

    def outputs(self) -> torch.Tensor:
        """The model's outputs on the batch, as this configuration computes them, on the CPU."""
        with torch.inference_mode(), self.autocast():
            out = self.workload.forward(self.model, self.batch[0])
        return out.float().cpu()

    def autocast(self) -> contextlib.AbstractContextManager[Any]:
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        # Autocast's cast cache would hold tensors across a CUDA-graph capture; turn it off there.
        return torch.autocast(
            self.device.torch_device.type,
            dtype=self.autocast_dtype,
            cache_enabled=not self.spec.cuda_graphs,
        )


class Step:
    """One optimization lever."""

    name = ""

    def wanted(self, spec: RunSpec) -> bool:
        raise NotImplementedError

    def unsupported(self, spec: RunSpec, device: Device, workload: Workload) -> str | None:
        """Why this configuration cannot take the step, or None."""
        return None

    def apply_model(self, prep: Prepared) -> None:
        """Change the model (and batch) before the optimizer and step function exist."""

    def apply_step(self, prep: Prepared) -> None:
        """Change the built step function."""


_STEPS: list[Step] = []


def register(cls: type[Step]) -> type[Step]:
    if any(s.name == cls.name for s in _STEPS):
        raise ValueError(f"step {cls.name!r} is registered twice")
    _STEPS.append(cls())
    return cls


def active_steps(spec: RunSpec) -> list[Step]:
    return [s for s in _STEPS if s.wanted(spec)]


def unsupported_reason(spec: RunSpec, device: Device, workload: Workload) -> str | None:
    """The first reason a wanted step cannot run here, or None."""
    for step in active_steps(spec):
        reason = step.unsupported(spec, device, workload)
        if reason:
            return f"{step.name}: {reason}"
    return None
