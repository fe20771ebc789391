"""How the pruning lever prunes: magnitude zeros in dense weights, or whole channels removed.

"unstructured:AMOUNT" zeroes the AMOUNT fraction of smallest-magnitude (L1) weights of every
convolution and linear layer (torch.nn.utils.prune, then made permanent). Every shape stays, so
dense kernels do exactly the same work: measuring it shows that sparsity alone does not pay.
"channels:AMOUNT" removes the AMOUNT fraction of each convolution's output channels, those of
smallest L1 norm, through torch_pruning, whose dependency graph keeps residual additions, batch
norms and depthwise convolutions consistent; the model gets smaller and cheaper. The last layer
is never pruned, so outputs (a classifier's classes) keep their shape.

Both are deterministic: the same weights give the same pruned model. A pruned model would need
fine-tuning to recover accuracy, which a benchmark does not do: hence inference only.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from ..analysis.facts import FLOPS_PER_SAMPLE, PRUNING
from ..errors import MissingDependency, one_line, require
from ..workloads import Workload
from ..workloads.inputs import Inputs, first_samples, samples_in
from .base import Prepared

__all__ = ["CannotPrune", "prune_model", "prune_with_info", "trial"]

_PRUNABLE = (nn.modules.conv._ConvNd, nn.Linear)
_CONV = nn.modules.conv._ConvNd
_NO_WEIGHTS = "the model has no convolution or linear weights to prune"
Forward = Callable[[nn.Module, Inputs], Any]


class CannotPrune(Exception):
    """The model has nothing this kind of pruning can remove, or removing it breaks the model."""


def prune_with_info(prep: Prepared, kind: str, amount: float) -> None:
    """Prune the prepared model in place of the old one, and record what went in its info."""
    inputs = first_samples(prep.batch[0], 2)  # tracing and checking need only a sample or two
    prep.model, info = prune_model(prep.model, inputs, prep.workload.forward, kind, amount)
    if kind == "channels":  # fewer FLOPs now: MFU must not count the removed channels
        from ..analysis.flops import count_flops

        flops = count_flops(prep.model, inputs, prep.workload.forward, None)
        info[FLOPS_PER_SAMPLE] = flops / samples_in(inputs)
    prep.info[PRUNING] = info


def prune_model(
    model: nn.Module, inputs: Inputs, forward: Forward, kind: str, amount: float
) -> tuple[nn.Module, dict[str, Any]]:
    """Prune `model` (in place where possible) and say how much went: the model to use, and
    its parameter counts before and after and the fraction of zeros in its prunable weights.

    CannotPrune when there is nothing to prune or the pruned model no longer runs.
    """
    before = _parameters(model)
    if kind == "unstructured":
        _zero_weights(model, amount)
    else:
        model = _remove_channels(model, inputs, forward, amount)
    info = {
        "method": f"{kind}:{amount:g}",
        "params_before": before,
        "params_after": _parameters(model),
        "zero_fraction": _zero_fraction(model),
    }
    return model, info


def _zero_weights(model: nn.Module, amount: float) -> None:
    """Per layer, the `amount` fraction of smallest |w| set to zero, baked into the weight."""
    from torch.nn.utils import prune

    layers = [m for m in model.modules() if isinstance(m, _PRUNABLE)]
    if not layers:
        raise CannotPrune(_NO_WEIGHTS)
    for layer in layers:
        prune.l1_unstructured(layer, "weight", amount)
        prune.remove(layer, "weight")  # a plain dense weight again, zeros and all


def _remove_channels(
    model: nn.Module, inputs: Inputs, forward: Forward, amount: float
) -> nn.Module:
    if not any(isinstance(m, _CONV) for m in model.modules()):
        raise CannotPrune("the model has no convolutions to remove channels from")
    last, expected = _last_layer(model, inputs, forward)
    keep = [last]
    original = copy.deepcopy(model)
    pruned = _try_channels(model, inputs, forward, amount, keep, expected)
    if isinstance(pruned, nn.Module):
        return pruned
    # A forward that hard-codes a flattened size (seed 000's x.view(-1, 16 * 13 * 13)) breaks
    # when the convolutions feeding it shrink: leave those alone and prune the rest.
    # `model` was pruned in place: name the layers to keep in the untouched copy.
    keep = [_last_layer(original, inputs, forward)[0]]
    keep += _convs_feeding_linear(original, inputs, forward)
    retried = _try_channels(original, inputs, forward, amount, keep, expected)
    if isinstance(retried, nn.Module):
        return retried
    raise CannotPrune(f"the model no longer runs once its channels are pruned: {pruned}")


def _try_channels(
    model: nn.Module,
    inputs: Inputs,
    forward: Forward,
    amount: float,
    keep: list[nn.Module],
    expected: Any,
) -> nn.Module | str:
    """The model with channels pruned, or why its output broke."""
    tp = _torch_pruning()
    before = _parameters(model)
    pruner = tp.pruner.BasePruner(
        model,
        first_samples(inputs, 1),  # tracing needs one; the check below runs all of `inputs`
        importance=tp.importance.MagnitudeImportance(p=1),  # L1 norm per channel group
        pruning_ratio=amount,
        ignored_layers=keep,
        root_module_types=[_CONV],  # convolution output channels only
        forward_fn=forward,
    )
    pruner.step()
    try:
        with torch.no_grad():
            shape = _output_shape(forward(model, inputs))
    except Exception as exc:
        return one_line(exc)
    if shape != expected:
        return f"the output's shape changed from {expected} to {shape}"
    if _parameters(model) == before:
        raise CannotPrune("no convolution channel can be removed without changing the output")
    return model


def _last_layer(model: nn.Module, inputs: Inputs, forward: Forward) -> tuple[nn.Module, Any]:
    """The convolution or linear layer that runs last (it makes the outputs, so it stays
    whole), and the shape of the model's output."""
    ran: list[nn.Module] = []
    hooks = [
        m.register_forward_hook(lambda module, args, out: ran.append(module))
        for m in model.modules()
        if isinstance(m, _PRUNABLE)
    ]
    try:
        with torch.no_grad():
            shape = _output_shape(forward(model, inputs))
    finally:
        for hook in hooks:
            hook.remove()
    return ran[-1], shape


def _convs_feeding_linear(model: nn.Module, inputs: Inputs, forward: Forward) -> list[Any]:
    """Convolutions whose output channels reach a linear layer's inputs (through a flatten)."""
    tp = _torch_pruning()
    graph = tp.DependencyGraph().build_dependency(
        model, example_inputs=first_samples(inputs, 1), forward_fn=forward
    )
    return [
        group[0][0].target.module
        for group in graph.get_all_groups(root_module_types=[_CONV])
        if any(isinstance(dep.target.module, nn.Linear) for dep, _ in group)
    ]


def trial(workload: Workload, kind: str, amount: float) -> str | None:
    """Prune a fresh CPU copy of the model: why it cannot be pruned, or None. It builds and
    runs the user's model, so only a worker may call it (the lever's `refused_by_model`)."""
    with torch.random.fork_rng(devices=[]):  # leave the caller's random state as it was
        torch.manual_seed(0)
        model = workload.build_model().eval()
        inputs = workload.make_batch(torch.Generator().manual_seed(0), 2)[0]
    if kind == "unstructured":  # it works on any weight: only whether there are any matters
        has_weights = any(isinstance(m, _PRUNABLE) for m in model.modules())
        return None if has_weights else f"{workload.name}: {_NO_WEIGHTS}"
    try:
        prune_model(model, inputs, workload.forward, kind, amount)
    except CannotPrune as exc:
        return f"{workload.name}: {exc}"
    except Exception as exc:  # torch_pruning cannot trace or prune this model
        return f"torch_pruning cannot prune {workload.name}'s channels: {one_line(exc)}"
    return None


def _torch_pruning() -> Any:
    # Missing, it makes the configuration unsupported (with the install line), not the sweep fail.
    try:
        return require("torch_pruning", "prune", "channel pruning", "torch-pruning")
    except MissingDependency as exc:
        raise CannotPrune(str(exc)) from None


def _parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def _zero_fraction(model: nn.Module) -> float:
    """Zeros among the weights of the convolution and linear layers."""
    weights = [m.weight for m in model.modules() if isinstance(m, _PRUNABLE)]
    total = sum(w.numel() for w in weights)
    zeros = sum(int((w == 0).sum()) for w in weights)
    return zeros / total if total else 0.0


def _output_shape(output: Any) -> Any:
    """The shape of a model's output: a tensor's, or each tensor's of a tuple or mapping."""
    if isinstance(output, torch.Tensor):
        return tuple(output.shape)
    if isinstance(output, dict):
        return {k: _output_shape(v) for k, v in output.items()}
    if isinstance(output, (tuple, list)):
        return tuple(_output_shape(v) for v in output)
    return type(output).__name__
