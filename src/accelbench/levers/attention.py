"""The attention implementation of a transformers language model: PyTorch's fused
scaled_dot_product_attention ("sdpa", transformers' default where the model has it) or the
model's own matmuls and softmax ("eager")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.result import RunSpec, Value
from .base import Lever, Prepared, Variant, register

if TYPE_CHECKING:
    from ..devices import Device
    from ..workloads import Workload

IMPLEMENTATIONS = ("sdpa", "eager")


@register
class Attention(Lever):
    name = "attention"
    option = "--attention"
    help = (
        "a transformers language model's attention: sdpa, eager "
        "(default: the model's own, sdpa for the built-in ones)"
    )
    dimension = "attention"
    default = ""  # what transformers picked when the model was built
    words = ("default", *IMPLEMENTATIONS)
    stage = 10  # before the precision casts and compile traces the model
    searched = True
    generates = True

    def from_word(self, word: str) -> Value:
        return "" if word == "default" else word

    def word(self, value: Value) -> str:
        return str(value) or "default"

    def label(self, value: Value) -> str:
        return f"attn={value}" if value else ""

    def unsupported(self, spec: RunSpec, device: Device, workload: Workload) -> str | None:
        if not workload.language_model:
            return f"{workload.name} is not a transformers language model"
        return None

    def apply_model(self, prep: Prepared, value: Value) -> None:
        model = prep.model
        model.set_attn_implementation(str(value))  # type: ignore[operator]
        found = model.config._attn_implementation  # type: ignore[union-attr]
        if found != value:  # transformers only warns when a model cannot switch
            raise RuntimeError(f"{type(model).__name__} kept attention {found!r}, not {value!r}")

    def code(self, spec: RunSpec, device: Device) -> list[str]:
        return [f'model.set_attn_implementation("{self.value(spec)}")']

    def variants(self, base: RunSpec, device: Device, workload: Workload) -> list[Variant]:
        if not workload.language_model:
            return []
        own = getattr(workload, "attention", "")
        return [
            Variant(f"attn={name}", self.assign(base, name), self.name)
            for name in IMPLEMENTATIONS
            if name != own
        ]

    def not_tried(self, group: str, base: RunSpec, device: Device, workload: Workload) -> str:
        return "" if workload.language_model else "not a transformers language model"
