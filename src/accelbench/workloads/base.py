"""What a workload is: a model, its data, its loss and optimizer, and one training step."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

__all__ = ["Batch", "Workload"]

Batch = tuple[torch.Tensor, torch.Tensor]  # inputs, targets


class Workload(ABC):
    """A benchmark workload. Subclasses set the class attributes and build the parts.

    One timed block ("it", seed 000's unit) is `steps_per_block` training steps on the same
    batch, as in the seed, which trains on one fixed random batch.
    """

    name: str = ""
    description: str = ""
    batch_size: int = 1
    steps_per_block: int = 1
    default_blocks: int = 100
    input_shape: tuple[int, ...] = ()  # per sample, without the batch dimension

    @abstractmethod
    def build_model(self) -> nn.Module: ...

    @abstractmethod
    def make_batch(self, generator: torch.Generator) -> Batch:
        """A batch on the CPU, drawn from `generator` so every device sees the same data."""

    @abstractmethod
    def loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor: ...

    @abstractmethod
    def make_optimizer(self, model: nn.Module) -> torch.optim.Optimizer: ...

    def train_step(self, model: nn.Module, optimizer: torch.optim.Optimizer, batch: Batch) -> None:
        """Forward, loss, backward, optimizer step. Nothing here may wait for the device."""
        inputs, targets = batch
        optimizer.zero_grad()
        self.loss(model(inputs), targets).backward()
        optimizer.step()

    def prepare(self, device: torch.device, seed: int = 0) -> Callable[[], None]:
        """Build everything on `device` and return a function that runs one timed block."""
        torch.manual_seed(seed)  # the same weights on every device
        model = self.build_model().to(device).train()
        optimizer = self.make_optimizer(model)
        batch = tuple(t.to(device) for t in self.make_batch(torch.Generator().manual_seed(seed)))

        def run_block() -> None:
            for _ in range(self.steps_per_block):
                self.train_step(model, optimizer, batch)  # type: ignore[arg-type]

        return run_block

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "batch_size": self.batch_size,
            "input_shape": list(self.input_shape),
            "steps_per_block": self.steps_per_block,
            "default_blocks": self.default_blocks,
        }
