"""torch.compile, with a mode."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.result import RunSpec, Value
from .base import Lever, Prepared, Variant, register

if TYPE_CHECKING:
    from ..devices import Device
    from ..workloads import Workload

MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


@register
class Compile(Lever):
    name = "compile"
    title = "torch.compile"
    option = "--compile"
    help = f"torch.compile: {', '.join(('off', *MODES))} (default: off)"
    dimension = "compile"
    default = ""  # eager
    words = ("off", *MODES)
    stage = 50  # after DDP: PyTorch compiles the DDP module
    stack_role = "top"

    def from_word(self, word: str) -> Value:
        return "" if word == "off" else word

    def word(self, value: Value) -> str:
        return str(value) or "off"

    def label(self, value: Value) -> str:
        return "compile" if value == "default" else f"compile:{value}"

    def apply_model(self, prep: Prepared, value: Value) -> None:
        import torch

        # Compilation happens lazily on the first call: in the first warm-up block.
        prep.model = torch.compile(prep.model, mode=str(value))  # type: ignore[assignment]

    def code(self, spec: RunSpec, device: Device) -> list[str]:
        value = self.value(spec)
        mode = "" if value == "default" else f', mode="{value}"'
        return [f"model = torch.compile(model{mode})"]

    def variants(self, base: RunSpec, device: Device, workload: Workload) -> list[Variant]:
        return [Variant("compile", self.assign(base, "default"), self.name)]

    def stack(self, spec: RunSpec, device: Device, workload: Workload) -> Variant | None:
        return Variant("compile", self.assign(spec, "default"), self.name)
