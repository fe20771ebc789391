"""ONNX: torch.onnx.export through torch.export (the "dynamo" exporter), falling back to the
legacy TorchScript exporter with the reason; validated with ONNX Runtime against PyTorch on
fresh random inputs."""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..errors import UsageError, one_line, require
from .common import Exportable, ExportReport, atomic_path

__all__ = ["INPUT", "TOLERANCES", "export_onnx", "write_onnx"]

# Largest acceptable error against PyTorch, relative to the output's largest magnitude.
TOLERANCES = {"fp32": 1e-4, "fp16": 2e-2}
INPUT, OUTPUT = "inputs", "outputs"


def export_onnx(model: Exportable, stem: Path) -> ExportReport:
    onnx = require("onnx", "export", "exporting to onnx")
    path = stem.parent / f"{stem.name}.{model.precision}.onnx"
    with atomic_path(path) as partial:
        exporter, fallback = write_onnx(model, partial)
    loaded = onnx.load(str(path))
    report = ExportReport(
        "onnx",
        str(path),
        facts={
            "exporter": exporter,
            "opset": max(
                (o.version for o in loaded.opset_import if o.domain in ("", "ai.onnx")),
                default=None,
            ),
            "ops": len(loaded.graph.node),
            "op_types": sorted({node.op_type for node in loaded.graph.node}),
            "bytes": path.stat().st_size,
            "dynamic_batch": model.dynamic_batch,
        },
    )
    if fallback:
        report.notes.append(
            f"the torch.export-based exporter failed ({fallback}); "
            "the legacy exporter made this file"
        )
    report.validation = validate(model, path)
    return report


def write_onnx(model: Exportable, path: Path) -> tuple[str, str]:
    """Write the model to `path`; which exporter did it, and why the first did not.

    The exporters print their progress on stdout, which belongs to --json: send it to stderr.
    """
    with contextlib.redirect_stdout(sys.stderr), _stdout_fd_to_stderr():
        return _export_quietly(model, path)


@contextlib.contextmanager
def _stdout_fd_to_stderr() -> Iterator[None]:
    """The legacy exporter prints its graph from C++ on failure, past sys.stdout: move the
    process's own standard output to standard error meanwhile."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


# How the exporters name an operator they cannot take.
_OPERATOR_PATTERNS = (
    re.compile(r"No ONNX function found for <OpOverload\(op='([^']+)', overload='([^']+)'"),
    re.compile(r"unrecognized namespace ([\w:.]+?)\.? "),
    re.compile(r"Exporting the operator '([^']+)'"),
)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def unexportable_operator(*messages: str) -> str | None:
    """The operator an exporter's error names, as 'namespace.op.overload' or 'ns::op'."""
    for message in messages:
        for pattern in _OPERATOR_PATTERNS:
            found = pattern.search(message)
            if found:
                return ".".join(found.groups())
    return None


def _export_quietly(model: Exportable, path: Path) -> tuple[str, str]:
    try:
        # the torch.export-based exporter needs it
        require("onnxscript", "export", "exporting to onnx")
        shapes = {INPUT: {0: torch.export.Dim("batch")}} if model.dynamic_batch else None
        program = torch.onnx.export(
            model.module,
            (model.example,),
            dynamo=True,
            input_names=[INPUT],
            output_names=[OUTPUT],
            dynamic_shapes=shapes,
        )
        assert program is not None  # dynamo=True always returns the program
        program.save(str(path))
        return "torch.onnx.export (torch.export)", ""
    except Exception as exc:  # noqa: BLE001  (any failure: try the other exporter, say why)
        first, first_text = _cause(exc), str(exc)
    try:
        axes = {INPUT: {0: "batch"}, OUTPUT: {0: "batch"}} if model.dynamic_batch else None
        torch.onnx.export(
            model.module,
            (model.example,),
            str(path),
            dynamo=False,
            input_names=[INPUT],
            output_names=[OUTPUT],
            dynamic_axes=axes,
        )
    except Exception as exc:
        operator = unexportable_operator(first_text, str(exc))
        if operator:
            raise UsageError(
                f"cannot export {model.name} to ONNX: neither exporter takes the operator "
                f"{operator} (rewrite it with standard operators, or register an ONNX "
                f"translation for it)"
            ) from None
        raise UsageError(
            f"cannot export {model.name} to ONNX: {_cause(exc)} "
            f"(the torch.export-based exporter failed first: {first})"
        ) from None
    return "torch.onnx.export (legacy TorchScript)", first


def _cause(exc: BaseException) -> str:
    """The exception that started it all, in one line: torch.onnx wraps the real failure in an
    error whose first line only announces the next steps ("This is step 1/3 of exporting the
    model to ONNX. Next steps:"), which said nothing of why."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return _ANSI.sub("", one_line(exc))


def validate(model: Exportable, path: Path) -> dict[str, Any]:
    """Run the file in ONNX Runtime on fresh inputs and compare with PyTorch."""
    ort = require("onnxruntime", "export", "exporting to onnx")
    try:
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as exc:
        return {"ok": False, "error": f"ONNX Runtime cannot load it: {one_line(exc)}"}
    worst_abs = worst_rel = 0.0
    for seed in (1, 2):
        inputs = model.fresh_inputs(seed)
        with torch.no_grad():
            expected = model.module(inputs).float().numpy()
        try:
            got = session.run(None, {INPUT: inputs.numpy()})[0].astype(np.float32)
        except Exception as exc:
            return {"ok": False, "error": f"ONNX Runtime cannot run it: {one_line(exc)}"}
        error = float(np.max(np.abs(got - expected)))
        worst_abs = max(worst_abs, error)
        worst_rel = max(worst_rel, error / max(float(np.max(np.abs(expected))), 1e-12))
    tolerance = TOLERANCES[model.precision]
    return {
        "ok": worst_rel <= tolerance,
        "max_abs_error": worst_abs,
        "max_rel_error": worst_rel,
        "tolerance": tolerance,
        "runtime": "onnxruntime CPU",
        "inputs": 2,
    }
