"""What a model's forward returns, taken as the one tensor a benchmark times and trains on.

Users bring models as they have them: a transformers model returns a ModelOutput (its
`logits`, and with `labels=` its own `loss`), other modules a dict, a tuple, a dataclass or a
tensor. The tensor is the logits where there are some, else the only tensor there is, else the
first of a tuple (transformers' `return_dict=False` order); the words say which, for the notes.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

__all__ = ["accepts_labels", "output_tensor", "own_loss"]


def output_tensor(out: Any) -> tuple[torch.Tensor, str]:
    """The tensor `out` stands for, and which it was ("" when `out` is a tensor itself);
    TypeError naming what was returned when it holds none."""
    if isinstance(out, torch.Tensor):
        return out, ""
    kind = type(out).__name__
    fields = _fields(out)
    logits = fields.get("logits")
    if isinstance(logits, torch.Tensor):
        return logits, f"the logits of its {kind}"
    tensors = [(name, value) for name, value in fields.items() if isinstance(value, torch.Tensor)]
    shaped = [(name, value) for name, value in tensors if value.dim() > 0]  # not a scalar loss
    tensors = shaped or tensors
    if len(tensors) == 1:
        return tensors[0][1], f"the one tensor of its {kind} ({tensors[0][0]})"
    if isinstance(out, (tuple, list)) and tensors:
        return tensors[0][1], f"the first of the {len(tensors)} tensors of its {kind}"
    if out is None:
        raise TypeError("its forward returned None: it must return its output, a tensor")
    if not tensors:
        raise TypeError(f"its forward returned a {kind} holding no tensor: it must return one")
    held = ", ".join(name for name, _ in tensors)
    raise TypeError(
        f"its forward returned a {kind} holding {held}: which is the output? Name it 'logits'"
    )


def own_loss(out: Any) -> torch.Tensor | None:
    """The loss a model computed itself (a transformers model given `labels=`), or None."""
    loss = _fields(out).get("loss")
    return loss if isinstance(loss, torch.Tensor) and loss.dim() == 0 else None


def accepts_labels(model: nn.Module) -> bool:
    """Whether the model's forward takes `labels=` (transformers' task heads do)."""
    try:
        return "labels" in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


def _fields(out: Any) -> dict[str, Any]:
    """A structured output's named parts: a mapping's items (ModelOutput is one), a
    dataclass's fields, a tuple's positions."""
    if isinstance(out, Mapping):
        return {str(k): v for k, v in out.items()}
    if dataclasses.is_dataclass(out) and not isinstance(out, type):
        return {f.name: getattr(out, f.name) for f in dataclasses.fields(out)}
    if isinstance(out, (tuple, list)):
        return {f"[{i}]": v for i, v in enumerate(out)}
    return {}
