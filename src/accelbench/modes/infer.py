"""Mode "infer": one forward pass on a fixed batch, under inference_mode."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core.modes import Mode, register_mode

if TYPE_CHECKING:
    from ..levers import Prepared

__all__ = ["Infer"]


@register_mode
class Infer(Mode):
    name = "infer"
    help = "one forward pass, no gradients"
    forward_only = True

    def build_step(self, prep: Prepared) -> Callable[[], None]:
        import torch

        model, workload = prep.model, prep.workload
        inputs = prep.batch[0]

        def infer_step() -> None:
            with torch.inference_mode(), prep.autocast():
                workload.forward(model, inputs)

        return infer_step
