"""The number of CPU threads PyTorch (or ONNX Runtime) uses for intra-op parallelism."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.result import RunSpec, Value
from .base import Lever, Prepared, register

if TYPE_CHECKING:
    from ..devices import Device


MOST = 10**9  # no count accelbench takes is larger; SQLite's integers end at 2**63


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
