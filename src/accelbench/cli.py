"""The `accelbench` command: parse, call the library, print at the edge.

Only argparse and the standard library load at import time, so `accelbench --help` is instant;
each command imports what it needs. An AccelbenchError becomes one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Sequence
from typing import Any

from . import __version__
from .errors import AccelbenchError

DEFAULT_WORKLOAD = "seed-cnn"


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line like every other accelbench error."""

    def error(self, message: str) -> Any:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _count(minimum: int) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {minimum} or more, got {value}")
        return value

    return parse


def _add_output_options(parser: argparse.ArgumentParser, db: bool = True) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    if db:
        parser.add_argument(
            "--db",
            metavar="PATH",
            help="results database (default: $ACCELBENCH_DB or ./accelbench.db)",
        )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="accelbench",
        description="How fast your PyTorch model trains on every device you have, measured "
        "honestly: synchronized timing, warm-up excluded, raw samples kept, spread reported.",
    )
    parser.add_argument("--version", action="version", version=f"accelbench {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="benchmark a workload's training on devices (default: seed-cnn, all)",
        description="Benchmark a workload's training on each device and store the results. "
        "With no arguments: seed 000's benchmark on every available device, CPU included.",
    )
    run.add_argument(
        "workload",
        nargs="?",
        default=DEFAULT_WORKLOAD,
        help=f"workload name (default: {DEFAULT_WORKLOAD}; see `accelbench workloads`)",
    )
    run.add_argument(
        "--devices",
        default="all",
        metavar="LIST",
        help="comma list of cpu, cuda, cuda:N, mps, xpu, xpu:N, or all (default)",
    )
    run.add_argument(
        "--epochs",
        type=_count(1),
        metavar="N",
        help="timed its (epochs) per device (default: the workload's, 100 for seed-cnn)",
    )
    run.add_argument(
        "--warmup",
        type=_count(0),
        default=1,
        metavar="N",
        help="untimed-for-statistics its before timing (default: 1)",
    )
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_output_options(run)
    run.set_defaults(handler=_cmd_run)

    devices = commands.add_parser("devices", help="list every backend: available or not, and why")
    _add_output_options(devices, db=False)
    devices.set_defaults(handler=_cmd_devices)

    workloads = commands.add_parser("workloads", help="list the registered workloads")
    workloads.add_argument("pattern", nargs="?", default="*", help="glob filter (default: *)")
    _add_output_options(workloads, db=False)
    workloads.set_defaults(handler=_cmd_workloads)

    results = commands.add_parser("results", help="list stored results, newest first")
    results.add_argument("--workload", help="only this workload's results")
    results.add_argument("--limit", type=_count(1), metavar="N", help="at most N results")
    _add_output_options(results)
    results.set_defaults(handler=_cmd_results)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except AccelbenchError as exc:
        print(f"accelbench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("accelbench: interrupted; results already stored are kept", file=sys.stderr)
        return 130


def _width() -> int:
    # Piped output is read by people later (README, issues): do not wrap it at 80 columns.
    return shutil.get_terminal_size((160, 24)).columns if sys.stdout.isatty() else 160


def _emit_json(payload: Any) -> None:
    print(json.dumps(payload, indent=2))


def _db_path(args: argparse.Namespace) -> Any:
    from pathlib import Path

    from .store import default_db_path

    return Path(args.db) if args.db else default_db_path()


def _cmd_run(args: argparse.Namespace) -> int:
    from .devices import resolve_devices
    from .render import run_table
    from .runner import run_sweep
    from .store import Store
    from .track import progress_bar
    from .workloads import get_workload

    # Check every input, the database included, before spending time measuring.
    workload = get_workload(args.workload)
    devices = resolve_devices(args.devices)
    epochs = args.epochs or workload.default_blocks
    with Store(_db_path(args)) as store, progress_bar(disable=args.quiet) as bar:
        tasks = {
            d.name: bar.add_task(f"{workload.name} on {d.name}", total=args.warmup + epochs)
            for d in devices
        }
        results = run_sweep(
            workload,
            devices,
            epochs,
            args.warmup,
            on_block=lambda device, i, seconds: bar.advance(tasks[device.name]),
            on_result=store.save,
        )
    if args.json:
        _emit_json({"db": str(store.path), "results": [r.to_dict() for r in results]})
    else:
        print(run_table(results, width=_width()), end="")
        ids = ", ".join(f"#{r.id}" for r in results)
        print(f"stored as result(s) {ids} in {store.path}")
    return 0 if all(r.status == "ok" for r in results) else 1


def _cmd_devices(args: argparse.Namespace) -> int:
    from .devices import discover
    from .render import devices_table

    devices = discover()
    if args.json:
        _emit_json([d.to_dict() for d in devices])
    else:
        print(devices_table(devices, width=_width()), end="")
    return 0


def _cmd_workloads(args: argparse.Namespace) -> int:
    from .render import workloads_table
    from .workloads import list_workloads

    workloads = list_workloads(args.pattern)
    if args.json:
        _emit_json([w.describe() for w in workloads])
    else:
        print(workloads_table(workloads, width=_width()), end="")
    return 0


def _cmd_results(args: argparse.Namespace) -> int:
    from .render import results_table
    from .store import Store

    with Store(_db_path(args), create=False) as store:
        results = store.results(workload=args.workload, limit=args.limit)
    if args.json:
        _emit_json([r.to_dict() for r in results])
    else:
        print(results_table(results, width=_width()), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
