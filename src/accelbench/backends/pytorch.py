"""PyTorch as a backend: the model on its device with the spec's levers applied, and the train,
infer or generate step (generate's in backends/generate)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ..core.result import DEFAULT_BACKEND, RunSpec
from ..core.vocab import GENERATE
from ..devices import Device
from ..errors import WorkloadError
from ..levers import Prepared, active_levers, unsupported_reason
from ..workloads import Batch, Workload
from ..workloads.llm import LanguageModel
from .base import Backend, Runnable, register
from .generate import generation_step

__all__ = ["Torch", "build_torch", "train_function"]


@register
class Torch(Backend):
    name = DEFAULT_BACKEND

    def unsupported(self, spec: RunSpec, device: Device, workload: Workload) -> str | None:
        return unsupported_reason(spec, device, workload)

    def build(self, spec: RunSpec, workload: Workload, device: Device, seed: int = 0) -> Runnable:
        return build_torch(spec, workload, device, seed)

    def code(self, spec: RunSpec, device: Device) -> list[str]:
        return [line for lever in active_levers(spec) for line in lever.code(spec, device)]


def build_torch(spec: RunSpec, workload: Workload, device: Device, seed: int = 0) -> Prepared:
    """The model on `device`, with `spec`'s levers applied. Same seed, same weights and data."""
    torch.manual_seed(seed)
    model = workload.build_model()
    batch = _batch(spec, workload, torch.Generator().manual_seed(seed))
    target = device.torch_device
    model = model.to(target).train(spec.mode == "train")
    prep = Prepared(
        spec=spec,
        workload=workload,
        device=device,
        model=model,
        batch=(batch[0].to(target), batch[1].to(target)),
    )
    levers = active_levers(spec)
    for lever in levers:
        lever.apply_model(prep, lever.value(spec))
    if spec.mode == "train":
        prep.optimizer = workload.make_optimizer(prep.model)
        prep.step = _train_step(prep)
    elif spec.mode == GENERATE:
        prep.step = generation_step(prep)
    else:
        prep.step = _infer_step(prep)
    for lever in levers:
        lever.apply_step(prep, lever.value(spec))
    return prep


def _batch(spec: RunSpec, workload: Workload, generator: torch.Generator) -> Batch:
    """The inputs on the CPU: a batch, or for generate the prompt (and no targets)."""
    if spec.mode != GENERATE:
        return workload.make_batch(generator, spec.batch_size)
    if not isinstance(workload, LanguageModel) or not spec.prompt_length or not spec.new_tokens:
        raise WorkloadError(
            f"generate needs a language model, a prompt length and new tokens; {spec.workload} "
            f"with prompt {spec.prompt_length} and {spec.new_tokens} new tokens is not that"
        )
    return workload.prompt(generator, spec.batch_size, spec.prompt_length), torch.empty(0)


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
