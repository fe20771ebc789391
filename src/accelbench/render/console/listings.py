"""What is here to benchmark on and with: devices, workloads, and the devices' measured peaks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...core.vocab import CALIBRATED_PRECISIONS
from ..text import format_bytes, number
from .table import new_table, render_table, table_text

if TYPE_CHECKING:  # the types only: importing devices or workloads imports torch
    from ...devices import Device
    from ...workflows.calibrate import Calibration
    from ...workloads import Workload

__all__ = ["calibration_table", "devices_table", "workloads_table"]


_DEVICE_HEADERS = ("device", "available", "model", "memory", "precisions", "details")
_WORKLOAD_HEADERS = ("name", "batch", "input shape", "steps per it", "default its", "description")


def devices_table(devices: Sequence[Device], width: int = 120) -> str:
    title = "devices PyTorch can see from here"
    return table_text(title, _DEVICE_HEADERS, [_device_cells(d) for d in devices], width)


def _device_cells(d: Device) -> list[str]:
    return [
        d.name,
        "yes" if d.available else f"no: {d.reason}",
        d.model,
        format_bytes(d.total_memory),
        ", ".join(d.dtypes.names()) if d.available else "",
        "; ".join([f"{k} {v}" for k, v in d.details] + ([d.caveat] if d.caveat else [])),
    ]


def workloads_table(workloads: Sequence[Workload], width: int = 120) -> str:
    rows = [
        [
            w.name,
            str(w.batch_size),
            "x".join(map(str, w.input_shape)),
            str(w.steps_per_block),
            str(w.default_blocks) if w.default_blocks else "stop rule",
            w.description,
        ]
        for w in workloads
    ]
    return table_text("workloads", _WORKLOAD_HEADERS, rows, width)


_CALIBRATED_PRECISIONS = CALIBRATED_PRECISIONS


def calibration_table(rows: Sequence[Calibration], width: int = 120) -> str:
    """Measured peaks beside the published ones, a row per device."""
    headers = ("device", "model", *_CALIBRATED_PRECISIONS, "bandwidth")
    table = new_table("calibration: measured (published)", headers, left_columns=2)
    for row in rows:
        measured, published = row.measured, row.published
        cells = [
            _pair(
                measured.flops.get(precision),
                published.flops.get(precision) if published else None,
                1e12,
                "TFLOP/s",
            )
            for precision in _CALIBRATED_PRECISIONS
        ]
        cells.append(
            _pair(measured.bandwidth, published.bandwidth if published else None, 1e9, "GB/s")
        )
        table.add_row(row.device, row.model, *cells)
    notes = [f"{r.device}: {r.measured.source}" for r in rows]
    notes += [f"{r.device} published: {r.published.source}" for r in rows if r.published]
    return render_table(table, notes, width)


def _pair(measured: float | None, published: float | None, scale: float, unit: str) -> str:
    if measured is None:
        return "—"
    text = f"{number(measured / scale)} {unit}"
    return f"{text} ({number(published / scale)})" if published else text
