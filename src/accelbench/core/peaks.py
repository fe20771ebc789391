"""Peak rates of one device and where they come from, as a value with no torch in it.

The device layer fills it (a published table, or a calibration), the store keeps it, and the
analysis divides measured rates by it; none of them needs torch to hold one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["PeakFigures"]


@dataclass(frozen=True)
class PeakFigures:
    """Peak rates of one device, and where they come from."""

    flops: Mapping[str, float]  # precision ("fp32", "tf32", "fp16", "bf16") -> FLOP/s, dense
    bandwidth: float | None  # memory bandwidth in bytes/s
    source: str  # e.g. "NVIDIA H200 datasheet" or "calibrated on this machine 2026-11-30"
