"""The `accelbench` command: the parser assembled from one module per command, dispatch, and
exit codes.

Only argparse and torch-free modules load at import time, so `accelbench --help` is instant;
each handler imports what it needs. An AccelbenchError becomes one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from ..core.version import __version__
from ..errors import AccelbenchError
from . import (
    calibrate,
    compare,
    devices,
    explain,
    export,
    optimize,
    report,
    results,
    run,
    verify,
    workloads,
)

# In the order `accelbench --help` lists them; each adds its subparser(s) and their handlers.
COMMANDS = (
    run,
    explain,
    devices,
    workloads,
    calibrate,
    compare,
    report,
    export,
    optimize,
    verify,
    results,
)


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line like every other accelbench error."""

    def error(self, message: str) -> Any:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="accelbench",
        description="How fast your PyTorch model trains and infers on every device you have, "
        "measured honestly: synchronized timing, warm-up excluded, raw samples kept, spread "
        "reported.",
    )
    parser.add_argument("--version", action="version", version=f"accelbench {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        # Building the parser loads the lever registry, plugins included: a broken plugin is
        # the user's error, said in one line.
        args = build_parser().parse_args(argv)
        return int(args.handler(args))
    except AccelbenchError as exc:
        print(f"accelbench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("accelbench: interrupted; results already stored are kept", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
