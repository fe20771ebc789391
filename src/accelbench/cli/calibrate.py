"""`accelbench calibrate`: measure and store each device's peak matrix rate and bandwidth."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from .options import Commands, add_output_options
from .output import db_path, emit_json, width

if TYPE_CHECKING:
    from ..devices import Device
    from ..devices.peaks import PeakFigures


def add_parser(commands: Commands) -> None:
    calibrate = commands.add_parser(
        "calibrate",
        help="measure each device's peak matrix rate per precision and its copy bandwidth",
        description="Measure each device's peak FLOP/s per precision (a large matrix product) and "
        "memory bandwidth (a device-to-device copy), and store them: MFU and the bottleneck "
        "verdict prefer these over the published table.",
    )
    calibrate.add_argument(
        "--devices",
        default="all",
        metavar="LIST",
        help="cpu, cuda, cuda:N, mps, xpu, xpu:N, or all (default)",
    )
    add_output_options(calibrate, progress=False)
    calibrate.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    import platform

    from ..devices import resolve_devices
    from ..devices.peaks import calibrate, known_peaks
    from ..render.console import calibration_table
    from ..store.db import Store

    devices = resolve_devices(args.devices)
    with Store(db_path(args)) as store:
        rows = []
        for device in devices:
            measured = calibrate(device)
            store.save_calibration(device.name, device.model, platform.node(), measured)
            rows.append((device, measured, known_peaks(device.model)))
    if args.json:
        emit_json([_to_dict(*row) for row in rows])
    else:
        print(calibration_table(rows, width=width()), end="")
    return 0


def _to_dict(
    device: Device, measured: PeakFigures, published: PeakFigures | None
) -> dict[str, Any]:
    return {
        "device": device.name,
        "model": device.model,
        "flops": dict(measured.flops),
        "bandwidth": measured.bandwidth,
        "source": measured.source,
        "published": None
        if published is None
        else {
            "flops": dict(published.flops),
            "bandwidth": published.bandwidth,
            "source": published.source,
        },
    }
