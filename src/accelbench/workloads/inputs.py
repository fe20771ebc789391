"""A batch's inputs as a model takes them: one tensor (`model(x)`), a tuple of tensors
(positional arguments, `model(image, meta)`) or a dict of them (keyword arguments,
`model(**batch)`), moved, changed and fed the same way whichever it is."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

import torch
from torch.utils import _pytree as pytree

__all__ = [
    "Inputs",
    "call_model",
    "first_samples",
    "leading",
    "map_tensors",
    "samples_in",
    "several",
    "shapes_text",
    "to_device",
]

Inputs: TypeAlias = "torch.Tensor | tuple[torch.Tensor, ...] | dict[str, torch.Tensor]"


def map_tensors(change: Callable[[torch.Tensor], torch.Tensor], inputs: Inputs) -> Inputs:
    """`inputs` with `change` applied to every tensor in them, in the same structure."""
    changed: Inputs = pytree.tree_map_only(torch.Tensor, change, inputs)
    return changed


def to_device(inputs: Inputs, device: torch.device | str) -> Inputs:
    """Every tensor of `inputs` on `device`."""
    return map_tensors(lambda tensor: tensor.to(device), inputs)


def call_model(model: Callable[..., Any], inputs: Inputs, **extra: Any) -> Any:
    """The model called on `inputs`: a tuple spread as positional arguments, a dict as keyword
    arguments, a tensor as the one argument; `extra` keyword arguments (labels=) beside them."""
    if isinstance(inputs, dict):
        return model(**inputs, **extra)
    if isinstance(inputs, tuple | list):
        return model(*inputs, **extra)
    return model(inputs, **extra)


def several(inputs: Inputs) -> bool:
    """Whether the model takes more than one tensor (or takes them by name)."""
    return not isinstance(inputs, torch.Tensor)


def leading(inputs: Inputs) -> torch.Tensor:
    """The first tensor: the one that says how many samples the batch holds."""
    tensors = [leaf for leaf in pytree.tree_leaves(inputs) if isinstance(leaf, torch.Tensor)]
    if not tensors:
        raise TypeError("the batch's inputs hold no tensor")
    return tensors[0]


def samples_in(inputs: Inputs) -> int:
    """How many samples the batch holds (its first tensor's first dimension)."""
    return int(leading(inputs).shape[0])


def first_samples(inputs: Inputs, count: int) -> Inputs:
    """The first `count` samples of every tensor (tracing and checking need only a few)."""
    return map_tensors(lambda tensor: tensor[:count], inputs)


def shapes_text(inputs: Inputs) -> str:
    """The shapes of the inputs, for a message: '2x3x8x8' or 'image=2x3x8x8, meta=2x4'."""

    def shape(tensor: torch.Tensor) -> str:
        return "x".join(map(str, tensor.shape))

    if isinstance(inputs, dict):
        return ", ".join(f"{name}={shape(tensor)}" for name, tensor in inputs.items())
    if isinstance(inputs, tuple | list):
        return ", ".join(shape(tensor) for tensor in inputs)
    return shape(inputs)
