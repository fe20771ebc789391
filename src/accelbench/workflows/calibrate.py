"""`accelbench calibrate` as a function: each device's peak matrix rate per precision and its
copy bandwidth, measured, stored where asked, and set beside the published figures
(`accelbench.calibrate`). MFU and the bottleneck verdict prefer stored calibrations to the
published table."""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.limits import count_problem
from ..core.peaks import PeakFigures
from ..core.vocab import CALIBRATED_PRECISIONS, Precision
from ..errors import UsageError
from . import inputs

__all__ = ["CalibrateRequest", "Calibration", "calibrate"]


@dataclass(frozen=True, kw_only=True)
class CalibrateRequest:
    """Which devices to calibrate and how; it checks itself as it is made (UsageError, one
    line naming the valid choices)."""

    devices: str = "all"  # comma-separated names such as "cpu,cuda:0", or "all"
    precisions: tuple[Precision, ...] = CALIBRATED_PRECISIONS
    size: int | None = None  # the matrices' order; None: the device's own (1024 on a CPU)
    repeats: int = 10  # timed products (and copies) a figure is the median of

    def __post_init__(self) -> None:
        # a device or precision, or several (workflows/inputs)
        object.__setattr__(self, "devices", inputs.device_names("devices", self.devices))
        object.__setattr__(self, "precisions", inputs.names("precisions", self.precisions))
        unknown = [p for p in self.precisions if p not in CALIBRATED_PRECISIONS]
        if unknown or not self.precisions:
            shown = repr(unknown[0]) if unknown else "none"
            raise UsageError(
                f"cannot calibrate precision {shown}; valid: {', '.join(CALIBRATED_PRECISIONS)}"
            )
        for name, value in (("size", self.size), ("repeats", self.repeats)):
            problem = None if value is None else count_problem(value, 1)
            if problem:
                raise UsageError(f"{name} {problem}, not {value!r}")


@dataclass(frozen=True)
class Calibration:
    """One device's measured peaks, and the published ones where the table knows its model."""

    device: str
    model: str
    measured: PeakFigures
    published: PeakFigures | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "model": self.model,
            **_figures(self.measured),
            "published": None if self.published is None else _figures(self.published),
        }


def _figures(peaks: PeakFigures) -> dict[str, Any]:
    return {"flops": dict(peaks.flops), "bandwidth": peaks.bandwidth, "source": peaks.source}


def calibrate(
    request: CalibrateRequest | None = None, *, db: str | Path | None = None
) -> list[Calibration]:
    """Measure each device of the request in this process (accelbench's own products and
    copies: no user code runs), one after another; with `db`, store each calibration there.
    No request: every device, every precision it runs."""
    import platform

    from ..devices import resolve_devices
    from ..devices.peaks import calibrate as measure_peaks
    from ..devices.peaks import known_peaks
    from ..store.db import Store

    request = request or CalibrateRequest()
    devices = resolve_devices(request.devices)  # an unknown device: one line, nothing measured
    found = []
    with ExitStack() as stack:  # the database opened first: a bad one is said before measuring
        store = stack.enter_context(Store(db)) if db is not None else None
        for device in devices:
            measured = measure_peaks(device, request.precisions, request.size, request.repeats)
            if store is not None:
                store.save_calibration(device.name, device.model, platform.node(), measured)
            published = known_peaks(device.model)
            found.append(Calibration(device.name, device.model, measured, published))
    return found
