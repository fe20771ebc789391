"""`accelbench export`: a workload's model exported to ONNX (validated) and Core ML."""

from __future__ import annotations

import argparse
import sys

from ..core.vocab import COMPUTE_UNITS, EXPORT_PRECISIONS, EXPORT_TARGETS
from .options import (
    Commands,
    ListOf,
    OneOf,
    add_json,
    add_model_options,
    count,
    seconds,
    workload_ref,
)
from .output import emit_json, width

DEFAULT_TIMEOUT_S = 900.0  # workflows.export's (a test keeps them equal)


def add_parser(commands: Commands) -> None:
    export = commands.add_parser(
        "export",
        help="export a workload's model to ONNX (validated) and Core ML (structure checked)",
        description="Export to ONNX through torch.export (legacy exporter as a stated fallback), "
        "validated with ONNX Runtime against PyTorch; convert to Core ML for the Apple Neural "
        "Engine (prediction needs macOS; elsewhere the saved model's structure is checked).",
    )
    export.add_argument("workload", nargs="?", help="a workload name (or use --model)")
    export.add_argument(
        "--to",
        type=ListOf(OneOf(EXPORT_TARGETS)),
        default=("onnx",),
        metavar="LIST",
        help="onnx, coreml (default: onnx)",
    )
    export.add_argument("--out", default=".", metavar="DIR", help="directory (default: .)")
    export.add_argument("--precision", choices=EXPORT_PRECISIONS, default="fp32")
    export.add_argument(
        "--batch-size",
        type=count(1),
        default=1,
        metavar="N",
        help="the example batch size (default: 1)",
    )
    export.add_argument(
        "--dynamic-batch", action="store_true", help="let the ONNX model take any batch size"
    )
    export.add_argument(
        "--compute-units",
        default="ALL",
        choices=COMPUTE_UNITS,
        help="Core ML compute units (default: ALL)",
    )
    add_model_options(export.add_argument_group("your own model"))
    _add_running(export)
    add_json(export)
    export.set_defaults(handler=handle)


def _add_running(export: argparse.ArgumentParser) -> None:
    """How the export runs: what it shows, and its worker's time limit."""
    export.add_argument(
        "--verbose",
        action="store_true",
        help="show the exporting libraries' own output (progress bars, version warnings, "
        "coremltools' messages), on stderr; hidden by default",
    )
    export.add_argument(
        "--timeout",
        type=seconds,
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help="the model is loaded, traced and checked in a worker process: stop it S seconds "
        f"after it is ready, and say so in one line (default: {DEFAULT_TIMEOUT_S:g})",
    )


def handle(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..render.console import export_table
    from ..workflows.export import ExportRequest, export

    request = ExportRequest(
        workload=workload_ref(args),
        targets=tuple(args.to),
        out=Path(args.out),
        precision=args.precision,
        batch=args.batch_size,
        dynamic_batch=args.dynamic_batch,
        compute_units=args.compute_units,
        verbose=args.verbose,
        timeout=args.timeout,
    )
    exported = export(request)
    if args.json:
        emit_json([r.to_dict() for r in exported.reports])
    else:
        print(export_table(exported.reports, width=width()), end="")
    if exported.failed and exported.hidden:
        print(
            f"the exporting libraries printed {len(exported.hidden)} line(s): --verbose shows them",
            file=sys.stderr,
        )
    if exported.left_running:
        left = exported.left_running
        print(
            f"accelbench: {len(left)} process(es) the model's code started outlived the "
            f"export's worker ({', '.join(left[:3])}); they were stopped",
            file=sys.stderr,
        )
    return 1 if exported.failed else 0
