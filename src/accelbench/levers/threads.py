"""The number of CPU threads PyTorch uses for intra-op parallelism."""

from __future__ import annotations

import torch

from ..core.result import RunSpec
from .base import Prepared, Step, register


@register
class Threads(Step):
    name = "threads"

    def wanted(self, spec: RunSpec) -> bool:
        return spec.threads > 0

    def apply_model(self, prep: Prepared) -> None:
        torch.set_num_threads(prep.spec.threads)
