"""Turn a RunSpec into something to time: the model on its device, the optimization steps
applied, and a function that runs one block of train or infer steps."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..core.result import RunSpec
from ..devices import Device
from ..levers import Prepared, active_steps, unsupported_reason
from ..workloads import Workload
from . import onnxruntime as onnxrt
from .onnxruntime import OrtPrepared

__all__ = ["Runnable", "build", "block_function", "train_function", "unsupported"]

Runnable = Prepared | OrtPrepared  # what a backend hands the timing loop


def unsupported(spec: RunSpec, device: Device, workload: Workload) -> str | None:
    """Why this configuration cannot run here (stored as "unsupported"), or None."""
    if spec.backend == "torch":
        return unsupported_reason(spec, device, workload)
    if spec.backend.startswith(onnxrt.PREFIX):
        return onnxrt.unsupported(spec, device)
    return f"unknown backend {spec.backend!r}; valid: torch, {onnxrt.BACKEND}"


def build(spec: RunSpec, workload: Workload, device: Device, seed: int = 0) -> Runnable:
    """The configuration ready to time on `device`. Same seed, same weights and data."""
    if spec.backend != "torch":
        return onnxrt.build_session(spec, workload, device)
    return build_torch(spec, workload, device, seed)


def build_torch(spec: RunSpec, workload: Workload, device: Device, seed: int = 0) -> Prepared:
    """The model on `device`, with `spec`'s steps applied."""
    torch.manual_seed(seed)
    model = workload.build_model()
    batch = workload.make_batch(torch.Generator().manual_seed(seed), spec.batch_size)
    target = device.torch_device
    model = model.to(target).train(spec.mode == "train")
    prep = Prepared(
        spec=spec,
        workload=workload,
        device=device,
        model=model,
        batch=(batch[0].to(target), batch[1].to(target)),
    )
    steps = active_steps(spec)
    for step in steps:
        step.apply_model(prep)
    if spec.mode == "train":
        prep.optimizer = workload.make_optimizer(prep.model)
        prep.step = _train_step(prep)
    else:
        prep.step = _infer_step(prep)
    for step in steps:
        step.apply_step(prep)
    return prep


def block_function(prep: Runnable) -> Callable[[], None]:
    """One timed block: `steps_per_block` steps back to back, nothing waiting on the device."""
    step, count = prep.step, prep.spec.steps_per_block

    def run_block() -> None:
        for _ in range(count):
            step()

    return run_block


def train_function(prep: Prepared) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """One optimizer step on the batch given, with the precision's autocast and GradScaler.

    Returns the loss as it is, on the device and not detached: reading it would wait for the
    device. The timed step calls this on its fixed batch; `verify` on each batch of real data.
    """
    model, workload, optimizer, scaler = prep.model, prep.workload, prep.optimizer, prep.scaler
    assert optimizer is not None

    def train(inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        optimizer.zero_grad(set_to_none=True)
        with prep.autocast():
            loss = workload.loss(workload.forward(model, inputs), targets)
        if scaler is None:
            loss.backward()
            optimizer.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        return loss

    return train


def _train_step(prep: Prepared) -> Callable[[], None]:
    train = train_function(prep)
    inputs, targets = prep.batch

    def train_step() -> None:
        train(inputs, targets)

    return train_step


def _infer_step(prep: Prepared) -> Callable[[], None]:
    model, workload = prep.model, prep.workload
    inputs = prep.batch[0]

    def infer_step() -> None:
        with torch.inference_mode(), prep.autocast():
            workload.forward(model, inputs)

    return infer_step
