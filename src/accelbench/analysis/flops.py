"""FLOPs of one step, counted by PyTorch's own FLOP counter.

`torch.utils.flop_counter.FlopCounterMode` (public since torch 2.1; `get_total_flops` is the same
in 2.4 through 2.14) intercepts every aten op run inside it and adds up the FLOPs of the ops it
has formulas for: matrix products (mm, addmm, bmm, baddbmm), convolutions and their backward
passes, and scaled-dot-product attention. It counts a multiply-add as 2 FLOPs and counts nothing
for elementwise ops, normalizations, reductions or the bias of addmm, so its figure is the
matrix-math FLOPs that MFU conventionally divides by the device's peak.

Its registry names the attention kernels of CUDA but not the CPU's fused attention op (nor the
MPS one), so attention would count as 0 FLOPs on those devices and a model would cost less on a
CPU than on a GPU. `_ATTENTION_OPS` gives those ops the registry's own attention formulas, and
replaces the convolution-backward formula, which ignores groups (see `_conv_backward`).

Counting runs the model for real, once, on whatever device it is on. It must leave no trace: no
changed weights or buffers, no gradients, no flipped train/eval flags.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree
from torch.utils import flop_counter
from torch.utils.flop_counter import FlopCounterMode

from ..workloads.inputs import Inputs

__all__ = ["count_flops", "flops_per_sample"]


def count_flops(
    model: nn.Module,
    inputs: Inputs,
    forward: Callable[[nn.Module, Inputs], torch.Tensor],
    loss: Callable[[torch.Tensor], torch.Tensor] | None,
) -> int:
    """Total FLOPs of one step on `inputs` (the whole batch).

    With `loss` None the step is inference: `forward(model, inputs)` in eval mode, without
    autograd. Otherwise it is a training step without the optimizer: forward in train mode, then
    `loss(outputs).backward()`. The backward pass computes the gradient of every parameter that
    requires one, and of `inputs` only if it requires one, exactly as the real step would.
    """
    counter = FlopCounterMode(display=False, custom_mapping=_ATTENTION_OPS)
    with _untouched(model, inputs), counter:
        model.train(loss is not None)
        if loss is None:
            with torch.no_grad():
                forward(model, inputs)
        else:
            loss(forward(model, inputs)).backward()
    return int(counter.get_total_flops())


def flops_per_sample(total: int, batch_size: int) -> float:
    """FLOPs one sample costs, from the total of a step over `batch_size` samples."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    return total / batch_size


def _attention(query: Any, key: Any, value: Any, *args: Any, **kwargs: Any) -> int:
    return int(flop_counter.sdpa_flop_count(query, key, value))


def _attention_backward(
    grad_out: Any, query: Any, key: Any, value: Any, *args: Any, **kwargs: Any
) -> int:
    return int(flop_counter.sdpa_backward_flop_count(grad_out, query, key, value))


def _conv_backward(
    grad_out_shape: Any,
    x_shape: Any,
    w_shape: Any,
    _bias: Any,
    _stride: Any,
    _padding: Any,
    _dilation: Any,
    transposed: bool,
    _output_padding: Any,
    _groups: Any,
    output_mask: Any,
    *args: Any,
    **kwargs: Any,
) -> int:
    # PyTorch's own formula ignores groups in the backward pass and so counts a depthwise
    # convolution's gradients `groups` times over (MobileNetV3's training step came out 27x its
    # forward pass). Each gradient costs what the forward convolution costs, and the forward
    # formula gets groups right through the weight's shape (Cout, Cin/groups, k, k).
    forward = flop_counter.conv_flop_count(
        list(x_shape), list(w_shape), list(grad_out_shape), transposed=transposed
    )
    return int(forward) * (int(bool(output_mask[0])) + int(bool(output_mask[1])))


# Fused attention ops the counter has no formula for, mapped to the formulas it uses for CUDA's
# (FlopCounterMode hands these functions shapes, not tensors). MPS runs its op only without
# autograd; with autograd it takes the composite path, whose matrix products are counted. An op
# this PyTorch lacks is skipped, so older versions still import.
_ATTENTION_OPS: dict[Any, Callable[..., int]] = {
    op: formula
    for name, formula in (
        ("_scaled_dot_product_flash_attention_for_cpu", _attention),
        ("_scaled_dot_product_flash_attention_for_cpu_backward", _attention_backward),
        ("_scaled_dot_product_attention_math_for_mps", _attention),
        ("convolution_backward", _conv_backward),
    )
    if (op := getattr(torch.ops.aten, name, None)) is not None
}


@contextmanager
def _untouched(model: nn.Module, inputs: Inputs) -> Iterator[None]:
    """Undo, on the way out, everything a counted step changes in the model and the inputs."""
    modes = [(module, module.training) for module in model.modules()]
    # Buffers change in a train-mode forward (BatchNorm's running statistics and batch count).
    buffers = [(b, b.detach().clone()) for b in model.buffers()]
    # Backward accumulates into .grad: start each leaf from None, then put back what it held.
    leaves: list[torch.Tensor] = [p for p in model.parameters() if p.requires_grad]
    leaves += [t for t in pytree.tree_leaves(inputs) if t.is_leaf and t.requires_grad]
    grads = [(leaf, leaf.grad) for leaf in leaves]
    for leaf in leaves:
        leaf.grad = None
    try:
        yield
    finally:
        for module, was_training in modes:
            module.training = was_training
        with torch.no_grad():
            for buffer, saved in buffers:
                buffer.copy_(saved)
        for leaf, grad in grads:
            leaf.grad = grad
