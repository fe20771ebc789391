"""`accelbench workloads`: the registered workloads, filtered by a glob."""

from __future__ import annotations

import argparse

from .options import Commands, add_json
from .output import emit_json, width


def add_parser(commands: Commands) -> None:
    workloads = commands.add_parser("workloads", help="list the registered workloads")
    workloads.add_argument("pattern", nargs="?", default="*", help="glob filter (default: *)")
    add_json(workloads)
    workloads.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from ..render.console import workloads_table
    from ..workloads import list_workloads

    workloads = list_workloads(args.pattern)
    if args.json:
        emit_json([w.describe() for w in workloads])
    else:
        print(workloads_table(workloads, width=width()), end="")
    return 0
