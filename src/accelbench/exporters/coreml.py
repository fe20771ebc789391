"""Core ML, the way to the Apple Neural Engine: coremltools converts the torch.export program
(after run_decompositions) to an ML program with fp16 or fp32 compute and a compute-units choice.

Seed 002's recipe (ONNX, then `ct.converters.onnx.convert`) no longer runs: coremltools removed
that converter in version 6. Conversion works on Linux; prediction needs macOS, so elsewhere the
saved model's inputs, outputs, shapes and op count are checked and that is said, never faked.
"""

from __future__ import annotations

import contextlib
import copy
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..errors import UsageError, one_line, require
from .common import Exportable, ExportReport, atomic_path

__all__ = ["COMPUTE_UNITS", "convert", "export_coreml"]

COMPUTE_UNITS = ("ALL", "CPU_AND_NE", "CPU_AND_GPU", "CPU_ONLY")
TOLERANCES = {"fp32": 1e-3, "fp16": 3e-2}  # relative to the output's largest magnitude


def export_coreml(model: Exportable, stem: Path, compute_units: str = "ALL") -> ExportReport:
    ct = require("coremltools", "export", "exporting to coreml")
    if compute_units not in COMPUTE_UNITS:
        raise UsageError(
            f"unknown compute units {compute_units!r}; valid: {', '.join(COMPUTE_UNITS)}"
        )
    path = stem.parent / f"{stem.name}.{model.precision}.mlpackage"
    module = copy.deepcopy(model.module).float()
    converted = convert(ct, model, module, compute_units)
    with atomic_path(path) as partial:
        converted.save(str(partial))
    report = ExportReport("coreml", str(path), facts=_structure(converted, compute_units))
    report.validation = _validate(converted, model, module)
    return report


def convert(
    ct: Any, model: Exportable, module: torch.nn.Module, compute_units: str, load: bool = True
) -> Any:
    """`module` (fp32: Core ML takes fp32 weights and lowers them itself when computing in
    fp16) as an ML program computing in the model's precision; the Core ML benchmark backend
    converts the same way. `load=False` skips loading it (which compiles it, on macOS)."""
    example = model.example.float() if model.example.dtype.is_floating_point else model.example
    try:
        program = torch.export.export(module, (example,)).run_decompositions({})
        with contextlib.redirect_stdout(sys.stderr):  # progress printing; stdout is for --json
            return ct.convert(
                program,
                convert_to="mlprogram",
                compute_precision=ct.precision.FLOAT16
                if model.precision == "fp16"
                else ct.precision.FLOAT32,
                compute_units=getattr(ct.ComputeUnit, compute_units),
                skip_model_load=not load,
            )
    except Exception as exc:
        raise UsageError(f"cannot convert {model.name} to Core ML: {one_line(exc)}") from None


def _structure(converted: Any, compute_units: str) -> dict[str, Any]:
    spec = converted.get_spec()

    def shapes(features: Any) -> dict[str, list[int]]:
        return {f.name: list(f.type.multiArrayType.shape) for f in features}

    program = spec.mlProgram
    ops = sum(
        len(block.operations)
        for function in program.functions.values()
        for block in function.block_specializations.values()
    )
    return {
        "format": "mlprogram",
        "inputs": shapes(spec.description.input),
        "outputs": shapes(spec.description.output),
        "ops": ops,
        "compute_units": compute_units,
    }


def _validate(converted: Any, model: Exportable, module: torch.nn.Module) -> dict[str, Any]:
    if sys.platform != "darwin":
        return {
            "ok": None,
            "skipped": "Core ML prediction needs macOS: the model was converted "
            "and its structure checked here, not run",
        }
    # macOS only; not executed by accelbench's developers (no Mac was available).
    inputs = model.fresh_inputs(1)
    if inputs.dtype.is_floating_point:
        inputs = inputs.float()
    name = converted.get_spec().description.input[0].name
    got = np.asarray(next(iter(converted.predict({name: inputs.numpy()}).values())))
    with torch.no_grad():
        expected = module(inputs).numpy()
    error = float(np.max(np.abs(got - expected)))
    relative = error / max(float(np.max(np.abs(expected))), 1e-12)
    return {
        "ok": relative <= TOLERANCES[model.precision],
        "max_abs_error": error,
        "max_rel_error": relative,
        "runtime": "Core ML (macOS)",
    }
