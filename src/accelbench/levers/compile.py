"""torch.compile, with a mode."""

from __future__ import annotations

import torch

from ..core.result import RunSpec
from ..devices import Device
from ..workloads import Workload
from .base import Prepared, Step, register

MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


@register
class Compile(Step):
    name = "compile"

    def wanted(self, spec: RunSpec) -> bool:
        return bool(spec.compile)

    def unsupported(self, spec: RunSpec, device: Device, workload: Workload) -> str | None:
        if spec.compile not in MODES:
            return f"unknown mode {spec.compile!r}; valid: {', '.join(MODES)}"
        return None

    def apply_model(self, prep: Prepared) -> None:
        # Compilation happens lazily on the first call: in the first warm-up block.
        prep.model = torch.compile(prep.model, mode=prep.spec.compile)  # type: ignore[assignment]
