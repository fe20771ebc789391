"""The seeds' own workloads: seed 000's SimpleCNN benchmark and seed 002's linear model."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from . import register
from .base import Batch, Workload, random_images


class SimpleCNN(nn.Module):
    """Seed 000's network, layer for layer."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 13 * 13, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 16 * 13 * 13)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        logits: torch.Tensor = self.fc3(x)
        return logits


@register
class SeedCNN(Workload):
    name = "seed-cnn"
    description = "seed 000's SimpleCNN: 64x3x64x64 random batch, 10 classes, SGD; it = 20 steps"
    batch_size = 64
    steps_per_block = 20
    default_blocks = 100  # the seed's tqdm(range(100))
    input_shape = (3, 64, 64)
    num_classes = 10

    def build_model(self) -> nn.Module:
        return SimpleCNN()

    def make_batch(self, generator: torch.Generator, batch_size: int) -> Batch:
        return random_images(generator, batch_size, self.input_shape, 10)

    def make_optimizer(self, model: nn.Module) -> torch.optim.Optimizer:
        return torch.optim.SGD(model.parameters(), lr=0.001, momentum=0.9)


@register
class SeedMLP(Workload):
    name = "mlp"
    description = "seed 002's Linear(10, 1) on 100 samples, MSE loss, SGD; it = 1 step"
    batch_size = 100
    steps_per_block = 1
    default_blocks = 100  # the seed's range(100)
    input_shape = (10,)

    def build_model(self) -> nn.Module:
        return nn.Linear(10, 1)

    def make_batch(self, generator: torch.Generator, batch_size: int) -> Batch:
        data = torch.randn(batch_size, *self.input_shape, generator=generator)
        target = torch.randn(batch_size, 1, generator=generator)
        return data, target

    def loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.mse_loss(outputs, targets)

    def make_optimizer(self, model: nn.Module) -> torch.optim.Optimizer:
        return torch.optim.SGD(model.parameters(), lr=0.01)
