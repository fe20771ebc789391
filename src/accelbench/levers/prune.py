"""Pruning, an inference lever: magnitude zeros in dense weights, or whole channels removed.

"unstructured:AMOUNT" zeroes that fraction of each conv/linear layer's smallest weights (shapes
kept, so dense kernels do the same work); "channels:AMOUNT" removes that fraction of each
convolution's output channels (a smaller model). How is in `prune_model`, imported when used:
it needs torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.modes import mode_of
from ..core.result import RunSpec, Value
from .base import Lever, Prepared, Variant, not_forward_only, register

if TYPE_CHECKING:
    from ..devices import Device
    from ..workloads import Workload

KINDS = ("unstructured", "channels")
LADDER = ("unstructured:0.5", "channels:0.3")  # a common first try of each kind, not a tuned one


def parse_pruning(text: str) -> tuple[str, float]:
    """'channels:0.3' -> ('channels', 0.3). ValueError names what is wrong.

    The amount is the fraction of weights (unstructured) or of each layer's output channels
    (channels) to remove, strictly between 0 and 1.
    """
    kind, colon, amount_text = text.partition(":")
    if kind not in KINDS or not colon:
        raise ValueError(
            f"invalid pruning {text!r}; valid: none, "
            + ", ".join(f"{k}:AMOUNT" for k in KINDS)
            + " with AMOUNT a fraction such as 0.5"
        )
    try:
        amount = float(amount_text)
    except ValueError:
        raise ValueError(f"pruning amount {amount_text!r} is not a number like 0.5") from None
    if not 0 < amount < 1:
        raise ValueError(f"pruning amount must be between 0 and 1 (exclusive), got {amount_text}")
    return kind, amount


@register
class Pruning(Lever):
    name = "pruning"
    option = "--pruning"
    help = (
        "inference only: none, unstructured:AMOUNT (L1 magnitude zeros, shapes kept), "
        "channels:AMOUNT (conv output channels removed); AMOUNT a fraction such as 0.5 "
        "(default: none)"
    )
    dimension = "pruning"
    default = ""
    stage = 10  # first, on the plain fp32 model: it traces the model and replaces its layers
    late = True  # pruned models do not stack with the others in the ladder

    def parse(self, word: str) -> Value:
        """'none' -> ''; 'channels:0.30' -> 'channels:0.3' (one spelling per configuration)."""
        if word == "none":
            return ""
        kind, amount = parse_pruning(word)
        return f"{kind}:{amount:g}"

    def word(self, value: Value) -> str:
        return str(value) or "none"

    def label(self, value: Value) -> str:
        return f"pruned-{value}"

    def unsupported(self, spec: RunSpec, device: Device, workload: Workload) -> str | None:
        if not mode_of(spec).forward_only:
            return (
                "pruning is an inference lever here (a pruned model needs fine-tuning, which a "
                "training benchmark does not do); use --modes infer"
            )
        return None

    def refused_by_model(self, spec: RunSpec, workload: Workload) -> str | None:
        """Whether the model has anything to prune is found by pruning a CPU copy of it: that
        builds and runs the user's model, so it is asked in the worker, never while planning."""
        from .prune_model import trial

        reason = trial(workload, *parse_pruning(str(self.value(spec))))
        return f"{self.name}: {reason}" if reason else None

    def apply_model(self, prep: Prepared, value: Value) -> None:
        from .prune_model import prune_with_info

        prune_with_info(prep, *parse_pruning(str(value)))

    def code(self, spec: RunSpec, device: Device) -> list[str]:
        kind, amount = parse_pruning(str(self.value(spec)))
        if kind == "unstructured":
            return [
                "import torch.nn.utils.prune as prune",
                "for m in model.modules():  # each layer on its own: its smallest weights zeroed",
                "    if isinstance(m, (nn.Conv2d, nn.Linear)):",
                f'        prune.l1_unstructured(m, "weight", amount={amount:g})',
                '        prune.remove(m, "weight")',
            ]
        return [
            "import torch_pruning as tp  # removes whole channels, so the model really shrinks",
            "convs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]",
            "pruner = tp.pruner.BasePruner(model, example, importance=tp.importance."
            f"MagnitudeImportance(p=1), pruning_ratio={amount:g}, root_module_types=[nn.Conv2d], "
            "ignored_layers=[last_layer])  # keep the outputs (a classifier's classes)",
            "pruner.step()",
            "# then fine-tune: accelbench measures the pruned model untrained",
        ]

    def no_gain_reason(self, spec: RunSpec, launch_bound: bool) -> str:
        if str(self.value(spec)).startswith("unstructured"):
            return "zeroed weights leave dense kernels the same work; only sparse kernels gain"
        return ""

    def variants(self, base: RunSpec, device: Device, workload: Workload) -> list[Variant]:
        if not mode_of(base).forward_only:
            return []
        return [Variant(f"pruned {p}", self.assign(base, p), self.name, late=True) for p in LADDER]

    def not_tried(self, group: str, base: RunSpec, device: Device, workload: Workload) -> str:
        return (
            ""
            if mode_of(base).forward_only
            else f"{not_forward_only(base)}; the search is for {base.mode}"
        )
