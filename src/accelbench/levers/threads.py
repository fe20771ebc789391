"""The number of CPU threads PyTorch (or ONNX Runtime) uses for intra-op parallelism.

On the CPU the optimization search tries one thread, half and all of the cores this process may
use (`Device.cores`, the host's affinity): PyTorch's own choice (its physical cores) can lose
to fewer threads where the cores are shared or the step too small to split, by 3x on a
2-core VM for a small CNN (issue 27).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.limits import MOST_COUNT as MOST
from ..core.result import RunSpec, Value
from .base import Lever, Prepared, Variant, register

if TYPE_CHECKING:
    from ..devices import Device
    from ..workloads import Workload


def positive_count(word: str) -> int:
    """'4' -> 4; ValueError for anything but a whole number from 1 to MOST."""
    try:
        count = int(word)
    except ValueError:
        raise ValueError(f"{word!r} is not a whole number") from None
    if count < 1:
        raise ValueError(f"must be 1 or more, got {count}")
    if count > MOST:
        raise ValueError(f"must be at most {MOST:,}, got {count:,}")
    return count


@register
class Threads(Lever):
    name = "threads"
    generates = True  # mode generate too
    option = "--threads"
    help = "CPU threads for PyTorch (default: PyTorch's choice)"
    dimension = "threads"
    default = 0  # PyTorch's own choice
    stage = 0  # before anything runs on the CPU
    torch_only = False  # ONNX Runtime's sessions take it too
    searched = True  # on the CPU: see `variants`
    kept_by_eager = True  # a setting of the host, not an optimization of the model

    def parse(self, word: str) -> Value:
        return positive_count(word)

    def word(self, value: Value) -> str:
        return str(value or "default")

    def baseline_word(self) -> str:
        return ""  # compare thread counts against the smallest one measured

    def check(self, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"threads must be a whole number, not {value!r}")

    def label(self, value: Value) -> str:
        return f"{value} thread{'s' if value != 1 else ''}"

    def apply_model(self, prep: Prepared, value: Value) -> None:
        import torch

        torch.set_num_threads(int(value))

    def code(self, spec: RunSpec, device: Device) -> list[str]:
        return [f"torch.set_num_threads({self.value(spec)})"]

    # --- the search: 1, half and all of the usable cores, on the CPU only
    def variants(self, base: RunSpec, device: Device, workload: Workload) -> list[Variant]:
        if self.not_tried(self.name, base, device, workload):
            return []
        counts = sorted({1, max(1, device.cores // 2), device.cores})
        return [Variant(self.label(n), self.assign(base, n), self.name) for n in counts]

    def not_tried(self, group: str, base: RunSpec, device: Device, workload: Workload) -> str:
        if not device.is_host:
            return f"PyTorch's CPU threads only feed {device.name}, which runs the model"
        if self.active(base):
            return f"the thread count is fixed at {self.value(base)} for this search"
        if device.cores < 1:
            return "the OS does not say how many cores this process may use"
        if device.cores == 1:
            return "this process may use one core: there is no other thread count to try"
        return ""
