"""`accelbench export` as a function: a typed request in, the files written and how each
checks against PyTorch out (`accelbench.export`).

The model is the user's code, so it is built, traced and checked in a worker process
(engine/worker's `call_isolated`, as `run` measures): a model that exits, crashes, hangs past the
request's timeout or forks ends its worker, never the caller, and whatever it started is stopped;
the caller gets one line (WorkloadError) or the typed `Exported`, pickled back. torch and the
exporters load only when `export` runs, so the request can be made (and checked) without them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
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
from ..errors import UsageError, WorkloadError
from ..workloads import WorkloadRef
from . import inputs

if TYPE_CHECKING:
    from ..exporters import ExportReport

__all__ = ["DEFAULT_TIMEOUT_S", "ExportRequest", "Exported", "export"]

# The export's worker, from its start: tracing, converting and validating a large model (a
# Core ML conversion of BERT) takes minutes; a model that hangs is stopped after this.
DEFAULT_TIMEOUT_S = 900.0


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
    timeout: float = DEFAULT_TIMEOUT_S  # seconds the export's worker may take once ready

    def __post_init__(self) -> None:
        # a workload by name, a target or several (workflows/inputs)
        object.__setattr__(self, "workload", inputs.workload_ref("workload", self.workload))
        object.__setattr__(self, "targets", inputs.names("targets", self.targets))
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
        number = isinstance(self.timeout, (int, float)) and not isinstance(self.timeout, bool)
        if not (number and math.isfinite(self.timeout) and self.timeout > 0):
            raise UsageError(
                f"timeout must be a finite number of seconds above 0, not {self.timeout!r}"
            )


@dataclass(frozen=True)
class Exported:
    """What an export made: one report per target (its file, facts and check against
    PyTorch), and the lines the exporting libraries printed while they were hidden."""

    reports: tuple[ExportReport, ...]
    hidden: tuple[str, ...] = ()
    # processes the model's code started that outlived the export's worker: stopped
    left_running: tuple[str, ...] = ()

    @property
    def paths(self) -> tuple[Path, ...]:
        return tuple(Path(r.path) for r in self.reports)

    @property
    def failed(self) -> tuple[ExportReport, ...]:
        """The targets whose export does not match PyTorch (a skipped check is no failure)."""
        return tuple(r for r in self.reports if r.validation.get("ok") is False)


def export(request: ExportRequest) -> Exported:
    """Export the request's workload to each target in turn, in a worker process; files appear
    whole or not at all. A model that rejects its inputs or a missing exporter raises an
    AccelbenchError; a worker that dies, exits or runs past the timeout, a WorkloadError naming
    what happened."""
    from ..engine.worker import call_isolated

    called = call_isolated(_export_in_worker, request, request.timeout)
    if called.status != "ok" or not isinstance(called.value, Exported):
        raise WorkloadError(f"exporting {request.workload.name} failed: {called.error}")
    return replace(called.value, left_running=called.left_running)


def _export_in_worker(request: ExportRequest, tell: Callable[[object], None]) -> Exported:
    """In the worker: load and check the model, then export it to each target."""
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
