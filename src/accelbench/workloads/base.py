"""What a workload is: a model, its data, its loss and optimizer.

How a workload is turned into a timed step (train or infer, with a precision, compiled or
captured) is the job of `accelbench.build`; a workload only says what its parts are.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .inputs import Inputs, call_model, map_tensors, several

__all__ = ["Batch", "Workload", "channels_last_refusal", "in_channels_last"]

# inputs (one tensor, or a tuple or dict of them: workloads/inputs), targets
Batch = tuple[Inputs, torch.Tensor]


class Workload(ABC):
    """A benchmark workload. Subclasses set the class attributes and build the parts.

    One timed block ("it", seed 000's unit) is `steps_per_block` steps on the same batch, as in
    the seed, which trains on one fixed random batch. `default_blocks` fixes how many blocks are
    timed when the user does not say; None lets the stop rule decide (see accelbench.measure).
    """

    name: str = ""
    description: str = ""
    batch_size: int = 1  # the default; a run may choose another
    steps_per_block: int = 1
    default_blocks: int | None = None
    input_shape: tuple[int, ...] = ()  # per sample, without the batch dimension
    num_classes: int | None = None  # set for classifiers: enables top-1 style checks later
    # A transformers causal language model (workloads/llm.LanguageModel): mode generate, the
    # KV cache and attention levers apply.
    language_model: bool = False
    # Which of the model's outputs is timed and trained on, in words, where it is not simply
    # the one tensor its forward returns (set by `check`, in the worker; shown in the notes).
    output_note: str = ""

    @abstractmethod
    def build_model(self) -> nn.Module: ...

    @abstractmethod
    def make_batch(self, generator: torch.Generator, batch_size: int) -> Batch:
        """A batch on the CPU, drawn from `generator` so every device sees the same data. Its
        inputs are one tensor, or a tuple (the forward's positional arguments) or a dict (its
        keyword arguments) of tensors, each with the batch as its first dimension."""

    def forward(self, model: nn.Module, inputs: Inputs) -> torch.Tensor:
        """The model's output as one tensor (Hugging Face models wrap theirs)."""
        out: torch.Tensor = call_model(model, inputs)
        return out

    def loss(self, outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(outputs, targets)

    def train_loss(self, model: nn.Module, inputs: Inputs, targets: torch.Tensor) -> torch.Tensor:
        """The loss a training step minimizes: the loss of the forward's output (a model
        that computes its own from labels may use that instead)."""
        return self.loss(self.forward(model, inputs), targets)

    def make_optimizer(self, model: nn.Module) -> torch.optim.Optimizer:
        return torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def check(self) -> None:
        """Fail in one clear line when the model cannot take the inputs; nothing to check here.

        The runner calls it in the worker process, before anything is timed: checking runs
        the user's code, which may hang, exit or crash, and must end only its configuration."""
        return None  # a built-in or a Workload of the user's own: its parts say what it takes

    @property
    def images(self) -> bool:
        """Whether inputs are NCHW images (so channels_last applies)."""
        return len(self.input_shape) == 3

    @property
    def several_inputs(self) -> bool:
        """Whether its forward takes several tensors (its batch's inputs are a tuple or a dict),
        found by drawing a batch of one: it may run the user's code, so only a worker asks a
        loaded workload (the command asks a described one, which a worker told). False when
        no batch can be drawn: the check that runs the model says why."""
        try:
            inputs, _ = self.make_batch(torch.Generator().manual_seed(0), 1)
        except Exception:
            return False
        return several(inputs)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "batch_size": self.batch_size,
            "input_shape": list(self.input_shape),
            "num_classes": self.num_classes,
            "steps_per_block": self.steps_per_block,
            "default_blocks": self.default_blocks,
        }


def channels_last_refusal(workload: Workload) -> str | None:
    """Why the model's forward cannot take channels_last inputs, found by running one sample
    through it on the CPU (the meta device carries no strides, so `x.view(...)` would pass
    there and fail on a device); None when it can, or when the model does not build (the
    benefit of the doubt). It runs the user's code: workers only."""
    try:
        model = workload.build_model().eval().to(memory_format=torch.channels_last)
        inputs, _ = workload.make_batch(torch.Generator().manual_seed(0), 1)
    except Exception:  # cannot tell here
        return None
    try:
        with torch.no_grad():
            workload.forward(model, in_channels_last(inputs))
    except Exception as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        return f"{workload.name}'s forward does not take channels_last inputs: {first}"
    return None


def in_channels_last(inputs: Inputs) -> Inputs:
    """The inputs with every image batch (4-D tensor) in channels_last layout; the others as
    they are (a model's second input may be a vector of features)."""

    def nhwc(tensor: torch.Tensor) -> torch.Tensor:
        if tensor.dim() != 4:
            return tensor
        return tensor.contiguous(memory_format=torch.channels_last)

    return map_tensors(nhwc, inputs)


def random_images(
    generator: torch.Generator, batch_size: int, shape: tuple[int, ...], classes: int
) -> Batch:
    """Standard-normal images and uniform class labels."""
    inputs = torch.randn(batch_size, *shape, generator=generator)
    labels = torch.randint(0, classes, (batch_size,), generator=generator)
    return inputs, labels
