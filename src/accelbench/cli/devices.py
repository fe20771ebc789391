"""`accelbench devices`: every device backend, available or not, and why."""

from __future__ import annotations

import argparse

from .options import Commands, add_json
from .output import emit_json, width


def add_parser(commands: Commands) -> None:
    devices = commands.add_parser("devices", help="list every backend: available or not, and why")
    add_json(devices)
    devices.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from ..devices import discover
    from ..render.console import devices_table

    devices = discover()
    if args.json:
        emit_json([d.to_dict() for d in devices])
    else:
        print(devices_table(devices, width=width()), end="")
    return 0
