"""Mode "train": one optimizer step on a fixed batch (forward, loss, backward, step), with the
precision's autocast and GradScaler."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from ..core.modes import Mode, register_mode
from ..core.result import RunSpec

if TYPE_CHECKING:
    import torch

    from ..levers import Prepared
    from ..workloads.inputs import Inputs

__all__ = ["Train", "train_function"]


@register_mode
class Train(Mode):
    name = "train"
    help = "an optimizer step: forward, loss, backward, step"
    trains = True

    def prepare(self, prep: Prepared) -> None:
        prep.optimizer = prep.workload.make_optimizer(prep.model)

    def build_step(self, prep: Prepared) -> Callable[[], None]:
        train = train_function(prep)
        inputs, targets = prep.batch

        def train_step() -> None:
            train(inputs, targets)

        return train_step

    def drift_spec(self, spec: RunSpec) -> RunSpec:
        """The same computation at the initial weights, for inference, eagerly: compiling the
        inference graph too would cost as much again (10 s for resnet50 on an H200) to measure
        compile's own fp32 drift, which its inference variants measure (4e-7 on seed 000's
        CNN); a CUDA graph would only replay it."""
        from ..levers import find_lever

        infer = replace(spec, mode="infer")
        for name, off in (("cuda_graphs", False), ("compile", "")):
            infer = find_lever(name).assign(infer, off)
        return infer


def train_function(prep: Prepared) -> Callable[[Inputs, torch.Tensor], torch.Tensor]:
    """One optimizer step on the batch given, with the precision's autocast and GradScaler.

    Returns the loss as it is, on the device and not detached: reading it would wait for the
    device. The timed step calls this on its fixed batch; `verify` on each batch of real data.
    """
    model, workload, optimizer, scaler = prep.model, prep.workload, prep.optimizer, prep.scaler
    assert optimizer is not None

    def train(inputs: Inputs, targets: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        with prep.autocast():
            loss = workload.train_loss(model, inputs, targets)
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        return loss

    return train
