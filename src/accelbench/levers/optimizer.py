"""The optimizer step's implementation: PyTorch's default (per-parameter loops, or foreach
where it picks it), foreach (one kernel per operation over all parameters) or fused (one
kernel for the whole update)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.modes import mode_of
from ..core.result import RunSpec, Value
from .base import Lever, Prepared, Variant, register

if TYPE_CHECKING:
    from ..devices import Device
    from ..workloads import Workload

IMPLEMENTATIONS = ("foreach", "fused")


@register
class OptimizerImpl(Lever):
    name = "optimizer"
    title = "optimizer implementation"
    option = "--optimizer-impl"
    help = "the optimizer step's implementation: default, foreach, fused (default: default)"
    dimension = "optimizer-impl"
    default = ""  # what the workload's optimizer picks itself
    words = ("default", *IMPLEMENTATIONS)
    stage = 40  # before cuda_graphs (60) captures the step with the optimizer in it
    searched = True

    def from_word(self, word: str) -> Value:
        return "" if word == "default" else word

    def word(self, value: Value) -> str:
        return str(value) or "default"

    def label(self, value: Value) -> str:
        return f"optimizer:{value}" if value else ""

    def unsupported(self, spec: RunSpec, device: Device, workload: Workload) -> str | None:
        return self._why_not(spec) or None

    def apply_step(self, prep: Prepared, value: Value) -> None:
        optimizer = prep.optimizer
        if optimizer is None:  # the drift check's inference rebuild of a training variant
            return
        _check(optimizer, str(value))
        fused = value == "fused"
        # In place: the step function holds this optimizer, and torch's optimizers read these
        # keys from the groups on every step(). The other key is set only where it exists.
        wanted = {"fused": fused, "foreach": not fused}
        for group in optimizer.param_groups:
            group.update({k: v for k, v in wanted.items() if k in optimizer.defaults})
        if fused:
            # As __init__ does for fused=True: GradScaler then hands its scale and inf flag to
            # the fused kernel instead of unscaling and checking on the host.
            optimizer._step_supports_amp_scaling = True  # type: ignore[attr-defined]

    def code(self, spec: RunSpec, device: Device) -> list[str]:
        value = self.value(spec)
        return [f"optimizer = torch.optim.SGD(params, ..., {value}=True)  # Adam(W) the same"]

    def variants(self, base: RunSpec, device: Device, workload: Workload) -> list[Variant]:
        if self._why_not(base):
            return []
        return [
            Variant(f"{impl} optimizer", self.assign(base, impl), self.name)
            for impl in ("fused", "foreach")
        ]

    def not_tried(self, group: str, base: RunSpec, device: Device, workload: Workload) -> str:
        return self._why_not(base)

    @staticmethod
    def _why_not(spec: RunSpec) -> str:
        return "" if mode_of(spec).trains else "an optimizer lever; inference has no optimizer step"


def _check(optimizer: Any, value: str) -> None:
    """ValueError unless `optimizer` can run `value`: the search reports it as not applying."""
    kind = type(optimizer).__name__
    if value not in optimizer.defaults:
        raise ValueError(f"{kind} has no {value} option: it has no {value} implementation")
    if value == "fused":
        _check_fused(optimizer, kind)


def _check_fused(optimizer: Any, kind: str) -> None:
    """What torch checks for fused=True, here: recent torch checks only at the first step()
    (in the timed loop), older torch only in __init__, which setting the groups skips."""
    import torch
    from torch.optim import optimizer as base

    find = getattr(base, "_get_fused_kernels_supported_devices", None)
    devices = find() if find else ["cuda"]  # older torch fused on CUDA only
    for group in optimizer.param_groups:
        if group.get("differentiable"):
            raise ValueError(f"{kind} with differentiable=True has no fused implementation")
        for p in group["params"]:
            if p.device.type not in devices or not torch.is_floating_point(p):
                raise ValueError(
                    f"fused {kind} needs floating-point parameters on {', '.join(devices)}; "
                    f"this model has {p.dtype} on {p.device.type}"
                )
