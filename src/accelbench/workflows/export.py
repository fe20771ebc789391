"""`accelbench export` as a function: a typed request in, the files written and how each
checks against PyTorch out (`accelbench.export`).

The model is built and traced in the calling process, as the command has always done: an
export is the model itself, not a measurement, so it needs no worker's time limit. torch and the
exporters load only when `export` runs, so the request can be made (and checked) without them.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.vocab import (
    COMPUTE_UNITS,
    DEFAULT_WORKLOAD,
    EXPORT_PRECISIONS,
    EXPORT_TARGETS,
    ComputeUnits,
    ExportPrecision,
    ExportTarget,
)
from ..errors import UsageError
from ..workloads import WorkloadRef

if TYPE_CHECKING:
    from ..exporters import ExportReport

__all__ = ["ExportRequest", "Exported", "export"]


@dataclass(frozen=True, kw_only=True)
class ExportRequest:
    """What to export, where and how; it checks itself as it is made (UsageError, one line
    naming the valid choices)."""

    workload: WorkloadRef = field(default_factory=lambda: WorkloadRef(DEFAULT_WORKLOAD))
    targets: tuple[ExportTarget, ...] = ("onnx",)
    out: Path = Path(".")  # the folder, created with its parents where missing
    precision: ExportPrecision = "fp32"
    batch: int = 1  # the example batch the model is traced with
    dynamic_batch: bool = False  # let the ONNX model take any batch size
    compute_units: ComputeUnits = "ALL"
    verbose: bool = False  # let the exporting libraries' own output through

    def __post_init__(self) -> None:
        if not isinstance(self.workload, WorkloadRef):
            raise UsageError(f"workload takes a WorkloadRef, not {self.workload!r}")
        for name, values, valid in (
            ("target", self.targets, EXPORT_TARGETS),
            ("precision", (self.precision,), EXPORT_PRECISIONS),
            ("compute units", (self.compute_units,), COMPUTE_UNITS),
        ):
            unknown = [v for v in values if v not in valid]
            if unknown or not values:
                shown = repr(unknown[0]) if unknown else "none"
                raise UsageError(f"unknown export {name} {shown}; valid: {', '.join(valid)}")
        if type(self.batch) is not int or self.batch < 1:
            raise UsageError(f"batch must be a positive integer, not {self.batch!r}")


@dataclass(frozen=True)
class Exported:
    """What an export made: one report per target (its file, facts and check against
    PyTorch), and the lines the exporting libraries printed while they were hidden."""

    reports: tuple[ExportReport, ...]
    hidden: tuple[str, ...] = ()

    @property
    def paths(self) -> tuple[Path, ...]:
        return tuple(Path(r.path) for r in self.reports)

    @property
    def failed(self) -> tuple[ExportReport, ...]:
        """The targets whose export does not match PyTorch (a skipped check is no failure)."""
        return tuple(r for r in self.reports if r.validation.get("ok") is False)


def export(request: ExportRequest) -> Exported:
    """Export the request's workload to each target in turn; files appear whole or not at all.
    A model that rejects its inputs or a missing exporter raises an AccelbenchError first."""
    from functools import partial

    from ..exporters import export_model, library_output
    from ..exporters.coreml import export_coreml
    from ..exporters.onnx import export_onnx
    from ..workloads import load_workload
    from ..workloads.custom import ModelOptions

    ref = request.workload
    options = ref.options if isinstance(ref.options, ModelOptions) else ModelOptions()
    if ref.custom and options.num_classes is None:
        # exporting trains nothing: a bare module needs no classes or loss here
        ref = replace(ref, options=replace(options, loss="mse"))
    workload = load_workload(ref)
    workload.check()  # a model that rejects its inputs: one line, before anything is exported
    # torch.export specializes a dimension of size 1: a dynamic batch is traced with 2.
    batch = max(request.batch, 2) if request.dynamic_batch else request.batch
    exporters: dict[str, Any] = {
        "onnx": export_onnx,
        "coreml": partial(export_coreml, compute_units=request.compute_units),
    }
    with library_output(request.verbose) as hidden:
        reports = export_model(
            workload,
            list(request.targets),
            Path(request.out),
            exporters,
            precision=request.precision,
            batch=batch,
            dynamic_batch=request.dynamic_batch,
        )
    return Exported(tuple(reports), tuple(hidden))
