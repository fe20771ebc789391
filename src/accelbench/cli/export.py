"""`accelbench export`: a workload's model exported to ONNX (validated) and Core ML."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..core.vocab import EXPORT_TARGETS
from .options import Commands, ListOf, OneOf, add_json, add_model_options, count, workload_ref
from .output import emit_json, width


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
    export.add_argument("--precision", choices=("fp32", "fp16"), default="fp32")
    export.add_argument(
        "--batch",
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
        choices=("ALL", "CPU_AND_NE", "CPU_AND_GPU", "CPU_ONLY"),
        help="Core ML compute units (default: ALL)",
    )
    add_model_options(export.add_argument_group("your own model"))
    export.add_argument(
        "--verbose",
        action="store_true",
        help="show the exporting libraries' own output (progress bars, version warnings, "
        "coremltools' messages), on stderr; hidden by default",
    )
    add_json(export)
    export.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    from dataclasses import replace
    from functools import partial
    from pathlib import Path

    from ..exporters import export_model, library_output
    from ..exporters.coreml import export_coreml
    from ..exporters.onnx import export_onnx
    from ..render.console import export_table
    from ..workloads import load_workload

    ref = workload_ref(args)
    if ref.custom and getattr(ref.options, "num_classes", None) is None:
        # exporting trains nothing: a bare module needs no classes or loss here
        ref = replace(ref, options=replace(ref.options, loss="mse"))
    workload = load_workload(ref)
    workload.check()  # a model that rejects its inputs: one line, before anything is exported
    # torch.export specializes a dimension of size 1: a dynamic batch is traced with 2.
    batch = max(args.batch, 2) if args.dynamic_batch else args.batch
    exporters: dict[str, Any] = {
        "onnx": export_onnx,
        "coreml": partial(export_coreml, compute_units=args.compute_units),
    }
    with library_output(args.verbose) as hidden:
        reports = export_model(
            workload,
            list(args.to),
            Path(args.out),
            exporters,
            precision=args.precision,
            batch=batch,
            dynamic_batch=args.dynamic_batch,
        )
    if args.json:
        emit_json([r.to_dict() for r in reports])
    else:
        print(export_table(reports, width=width()), end="")
    failed = [r for r in reports if r.validation.get("ok") is False]
    if failed and hidden:
        print(
            f"the exporting libraries printed {len(hidden)} line(s): --verbose shows them",
            file=sys.stderr,
        )
    return 1 if failed else 0
