"""`accelbench calibrate`: measure and store each device's peak matrix rate and bandwidth."""

from __future__ import annotations

import argparse

from .options import Commands, add_output_options
from .output import db_path, emit_json, width


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
    from ..render.console import calibration_table
    from ..workflows.calibrate import CalibrateRequest, calibrate

    found = calibrate(CalibrateRequest(devices=args.devices), db=db_path(args))
    if args.json:
        emit_json([c.to_dict() for c in found])
    else:
        print(calibration_table(found, width=width()), end="")
    return 0
